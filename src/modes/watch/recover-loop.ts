// recover, every `recover-interval`, while this replica leads and its view is complete. No
// outcome wait: helm-controller reports it on the release, and the next pass sees it.

import { messageOf } from '../../lib/errors.ts'
import { Status } from '../../engine/result.ts'
import type { Clock } from '../../engine/ports.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import type { Settings } from '../../settings.ts'
import { runRecover, type RecoverOptions } from '../recover/run.ts'
import type { EventLog } from './log.ts'
import { abortableSleep } from './sleep.ts'

export function recoverOptionsOf(settings: Omit<RecoverOptions, 'wait'>): RecoverOptions {
  const { annotationPrefix, recoverPatterns, recoverMaxAttempts, recoverBackoffMs, namespaces, maxConcurrency, dryRun, timeoutMs } = settings
  return { annotationPrefix, recoverPatterns, recoverMaxAttempts, recoverBackoffMs, namespaces, maxConcurrency, dryRun, wait: false, timeoutMs }
}

/** The log fields of one pass: how many releases each way. */
export function passCounts(results: readonly { readonly status: string }[]): { recovered: number; skipped: number; failed: number } {
  const count = (s: string): number => results.filter((r) => r.status === s).length
  return { recovered: count(Status.Triggered), skipped: count(Status.Skipped), failed: count(Status.Failed) }
}

export interface RecoverLoopOptions {
  readonly settings: Settings & { readonly recoverIntervalMs: number }
  readonly cluster: ClusterClient
  readonly clock: Clock
  readonly log: EventLog
  /** Synced and leading: a pass may run now. */
  readonly active: () => boolean
  readonly signal: AbortSignal
}

export async function recoverLoop(o: RecoverLoopOptions): Promise<void> {
  const options = recoverOptionsOf(o.settings)
  while (!o.signal.aborted) {
    await abortableSleep(o.settings.recoverIntervalMs, o.signal)
    if (o.signal.aborted || !o.active()) continue
    try {
      const report = await runRecover(options, { connect: async () => o.cluster, clock: o.clock, log: o.log })
      o.log.event('info', 'recover pass done', passCounts(report.results))
    } catch (error) {
      o.log.event('warning', 'recover pass failed', { error: messageOf(error) })
    }
  }
}
