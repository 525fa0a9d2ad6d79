// One release run of watch mode: plan the release from the view, precheck it from the cache,
// then hand it to the same triggerRelease as trigger mode (trigger's action through the write
// engine). What each outcome counts and says is decided by the pure functions below.

import { releaseKey, type ReleaseRef } from '../../core/model.ts'
import type { Keys } from '../../core/keys.ts'
import { shownDigest, type DigestKey } from '../../core/digest.ts'
import { Status, type ReleaseResult } from '../../engine/result.ts'
import type { Clock } from '../../engine/ports.ts'
import { tokenSequence } from '../../engine/tokens.ts'
import type { ClusterClient, ReleaseEvent } from '../../kube/cluster.ts'
import type { Settings } from '../../settings.ts'
import { SkipReason, type Decision, type TriggerOptions } from '../trigger/action.ts'
import { triggerRelease } from '../trigger/release.ts'
import type { EventLog, Fields, Level } from './log.ts'
import type { WatchMetrics } from './metrics.ts'
import type { WatchView } from './view.ts'

/**
 * force would re-trigger on our own patch's watch event, forever: not in watch mode. The
 * sources are known from their watch (a newer change queues another run), so the engine's
 * re-read of each source before patching (the superseded check) is not needed.
 */
export function watchTriggerOptions(keys: Keys, reset: boolean): TriggerOptions {
  return { keys, force: false, reset, checkSuperseded: false, requestedBy: 'by helmrelease-trigger watch', runUrl: undefined }
}

export function refOf(key: string): ReleaseRef {
  const slash = key.indexOf('/')
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) }
}

/** A counted and logged run result. */
export interface RunNote {
  readonly result: 'skipped' | 'failed'
  readonly reason: string
  readonly level: Level
  readonly message: string
  readonly fields: Fields
}

/**
 * The precheck's skip, or nothing to say: a pass (no change seen: `firstEventAt` undefined)
 * finding a release up to date is the normal case, not worth a line or a count.
 */
export function skipNote(key: string, pre: Decision & { readonly action: 'skip' }, firstEventAt: number | undefined): RunNote | undefined {
  if (firstEventAt === undefined && pre.reason === SkipReason.UpToDate) return undefined
  return { result: 'skipped', reason: pre.reason, level: 'info', message: 'release skipped', fields: { release: key, reason: pre.reason, detail: pre.message } }
}

/** The engine's result when it did not trigger. */
export function resultNote(key: string, r: Pick<ReleaseResult, 'status' | 'reason' | 'message' | 'severity'>): RunNote {
  const failed = r.status === Status.Failed || r.status === Status.TimedOut
  return {
    result: failed ? 'failed' : 'skipped',
    reason: r.reason,
    level: failed ? 'error' : r.severity === 'warning' ? 'warning' : 'info',
    message: failed ? 'release trigger failed' : 'release skipped',
    fields: { release: key, reason: r.reason, detail: r.message },
  }
}

export interface ReleaseRunOptions {
  readonly settings: Pick<Settings, 'dryRun' | 'semanticDigest' | 'timeoutMs' | 'reset'>
  readonly keys: Keys
  readonly view: WatchView
  readonly cluster: ClusterClient
  readonly clock: Clock
  readonly log: EventLog
  readonly metrics: Pick<WatchMetrics, 'triggers' | 'latency'>
  readonly isLeading: () => boolean
  /** The key of Secret digests (kube/digest-key.ts). */
  readonly digestKey: DigestKey
  /** A triggered release's Events, written after the patch (so the latency measures the patch alone). */
  readonly onEvents: (events: readonly ReleaseEvent[]) => void
}

export type ReleaseRun = (key: string, firstEventAt: number | undefined) => Promise<void>

export function createReleaseRun(o: ReleaseRunOptions): ReleaseRun {
  const { settings, keys, view, clock, log, metrics } = o
  const options = watchTriggerOptions(keys, settings.reset)
  const tokens = tokenSequence()
  const note = (n: RunNote | undefined): void => {
    if (n === undefined) return
    metrics.triggers.inc({ result: n.result, reason: n.reason })
    log.event(n.level, n.message, n.fields)
  }

  return async (key, firstEventAt) => {
    if (!o.isLeading()) return
    const planned = view.plan(refOf(key))
    if (planned.sources.length === 0) return
    const pre = view.precheck(planned)
    if (pre?.action === 'skip') return note(skipNote(key, pre, firstEventAt))
    const events: ReleaseEvent[] = []
    // The cached release decides the first attempt (no GET): its resourceVersion rides on the
    // patch, so a release changed since conflicts and the engine reads it again.
    const cached = view.release(key)
    const outcome = await triggerRelease(planned, {
      options,
      write: {
        cluster: o.cluster,
        requestedAtKey: keys.requestedAt,
        dryRun: settings.dryRun,
        clock,
        log,
        tokens,
        events: { record: async (event) => void events.push(event) },
      },
      semanticDigest: settings.semanticDigest,
      digestKey: o.digestKey,
      timeoutMs: settings.timeoutMs,
      unapplied: new Map(),
      baseline: new Map(),
      ...(cached === undefined ? {} : { observed: new Map([[key, cached]]) }),
    })
    if (outcome.kind !== 'triggered') return note(resultNote(key, outcome.result))
    const { release, token } = outcome.triggered
    view.upsertRelease({ ...release, key: releaseKey(release) })
    const latencyMs = firstEventAt === undefined ? undefined : clock.now() - firstEventAt
    if (latencyMs !== undefined) metrics.latency.observe(latencyMs / 1000)
    o.onEvents(events)
    metrics.triggers.inc({ result: settings.dryRun ? 'dry-run' : 'triggered', reason: 'ReconcileRequested' })
    log.event('info', 'release triggered', {
      release: key,
      token,
      sources: planned.sources.map((s) => `${s.id}@${shownDigest(s.id, s.digest) ?? 'changed'}`).join(','),
      latencyMs,
      dryRun: settings.dryRun || undefined,
    })
  }
}
