// Drift's correction: the release action (suspended → skip, gone → failed, else a forced
// upgrade: forceAt equal to requestedAt, which helm-controller upgrades even an in-sync release
// for) and its requests through the write engine, with the outcome awaited. Run.ts checks
// each corrected release again afterwards.

import type { HelmRelease } from '../../core/helmrelease.ts'
import type { Keys } from '../../core/keys.ts'
import { releaseKey } from '../../core/model.ts'
import type { OutcomeWaiter, Triggered } from '../../engine/outcome.ts'
import { eventRecorder, type Clock, type Logger } from '../../engine/ports.ts'
import { Reason, Status } from '../../engine/result.ts'
import { tokenSequence } from '../../engine/tokens.ts'
import { writeRelease, type ReleaseAction } from '../../engine/write-release.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { mapLimit } from '../../lib/concurrency.ts'
import { objectKey, ObjectState, type Correction, type ReleaseDrift } from './verdict.ts'

/** The forced upgrade carries nothing but its token. */
export type CorrectionWrite = { readonly action: 'force' }

export function correctionAction(drift: ReleaseDrift, keys: Keys, runUrl: string | undefined): ReleaseAction<CorrectionWrite, Correction> {
  return {
    decide: (live) => {
      if (live === undefined)
        return { kind: 'skip', skip: { status: Status.Failed, reason: Reason.NotFound, message: 'the HelmRelease disappeared before it could be corrected' } }
      if (live.suspend) return { kind: 'skip', skip: { status: Status.Skipped, reason: Reason.Suspended, message: 'spec.suspend is true; not corrected' } }
      return { kind: 'write', write: { action: 'force' } }
    },
    // forceAt must equal requestedAt: helm-controller then upgrades even an in-sync release.
    patch: (_write, live, token) => ({ annotations: { [keys.requestedAt]: token, [keys.forceAt]: token }, labels: {}, resourceVersion: live.resourceVersion }),
    event: () => ({ reason: 'DriftCorrectionRequested', message: correctionEventMessage(drift, runUrl) }),
  }
}

export function correctionEventMessage(drift: ReleaseDrift, runUrl: string | undefined): string {
  const objects = drift.drifted.filter((o) => o.state !== ObjectState.Error).map(objectKey)
  const run = runUrl === undefined ? '' : ` Run: ${runUrl}`
  const listed = `${objects.slice(0, 5).join(', ')}${objects.length > 5 ? ', …' : ''}`
  return `Drift from Helm revision ${drift.revision ?? '?'} in ${objects.length} object${objects.length === 1 ? '' : 's'} (${listed}); forced upgrade requested.${run}`
}

/** What a correction run needs from the settings, and nothing else. */
export interface CorrectionOptions {
  readonly keys: Keys
  readonly dryRun: boolean
  readonly wait: boolean
  readonly timeoutMs: number
  readonly maxConcurrency: number
}

export interface CorrectionDeps {
  readonly connect: () => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  readonly outcome?: OutcomeWaiter
  readonly runUrl?: string
}

/** Asks for a forced upgrade of each drifted release and says what came of it, by release key. */
export async function requestCorrections(drifted: readonly ReleaseDrift[], options: CorrectionOptions, deps: CorrectionDeps): Promise<Map<string, Correction>> {
  const cluster = await deps.connect()
  const write = {
    cluster,
    requestedAtKey: options.keys.requestedAt,
    dryRun: options.dryRun,
    clock: deps.clock,
    log: deps.log,
    tokens: tokenSequence(),
    events: eventRecorder(cluster, deps.log),
  }
  const outcomes = await mapLimit(drifted, options.maxConcurrency, async (drift) => ({
    drift,
    outcome: await writeRelease(drift, correctionAction(drift, options.keys, deps.runUrl), write),
  }))
  const corrections = new Map<string, Correction>()
  const triggered: Triggered[] = []
  for (const { drift, outcome } of outcomes) {
    if (outcome.kind === 'skipped') corrections.set(releaseKey(drift), outcome.skip)
    else if (outcome.kind === 'failed') corrections.set(releaseKey(drift), { status: Status.Failed, reason: outcome.reason, message: outcome.message })
    else triggered.push(triggeredOf(drift, outcome.release, outcome.read, outcome.token, outcome.startedAt))
  }
  const waitable = options.wait && !options.dryRun && deps.outcome !== undefined && triggered.length > 0
  const waited = waitable ? await deps.outcome.wait(cluster, triggered, deps.clock.now() + options.timeoutMs) : []
  for (const t of triggered) {
    const r = waited.find((w) => releaseKey(w) === releaseKey(t.planned))
    corrections.set(
      releaseKey(t.planned),
      r === undefined
        ? {
            status: options.dryRun ? Status.DryRun : Status.Triggered,
            reason: options.dryRun ? Reason.DryRun : Reason.CorrectionRequested,
            message: options.dryRun ? 'server-side dry run of the patch succeeded; nothing written' : 'forced upgrade requested; outcome not awaited',
            token: t.token,
          }
        : {
            status: r.status,
            reason: r.reason,
            message: r.message,
            token: t.token,
            ...(r.revisionAfter === undefined ? {} : { revisionAfter: r.revisionAfter }),
          },
    )
  }
  return corrections
}

function triggeredOf(drift: ReleaseDrift, release: HelmRelease, before: HelmRelease, token: string, startedAt: number): Triggered {
  return { planned: { namespace: drift.namespace, name: drift.name, sources: [] }, release, before, token, force: true, reset: false, startedAt }
}
