// Trigger's release action: what to do with one planned release, given what the cluster shows
// (decide), whether a newer commit's content is live by now (supersededBy), the patch
// (buildPatch) and the Event. Pure: the write engine (engine/write-release.ts) observes, this
// decides, the engine acts and observes again. Watch mode triggers through it too.

import type { HelmRelease } from '../../core/helmrelease.ts'
import { isStalled, recordedDigests } from '../../core/helmrelease.ts'
import type { ReleasePatch } from '../../kube/cluster.ts'
import { FLUX_EVENT_KEYS, type Keys } from '../../core/keys.ts'
import { recordedMatches, shownDigest } from '../../core/digest.ts'
import type { ReleaseAction } from '../../engine/write-release.ts'
import { Reason } from '../../engine/result.ts'
import { chartSourceId, type Digest, type PlannedRelease, type SourceId } from '../../core/model.ts'

/** The reasons trigger's decision skips a release for. */
export const SkipReason = {
  NotFound: Reason.NotFound,
  Suspended: Reason.Suspended,
  UpToDate: Reason.UpToDate,
  SourceNotApplied: Reason.SourceNotApplied,
  PlanOnly: Reason.PlanOnly,
  Superseded: Reason.Superseded,
} as const
export type SkipReason = (typeof SkipReason)[keyof typeof SkipReason]

export type Decision =
  | { readonly action: 'trigger'; readonly force: boolean; readonly reset: boolean; readonly why: string }
  | { readonly action: 'skip'; readonly reason: SkipReason; readonly message: string }

export interface DecisionInput {
  readonly planned: PlannedRelease
  /** undefined: the release does not exist in the cluster. */
  readonly live: HelmRelease | undefined
  readonly digestKey: string
  readonly force: boolean
  readonly reset: boolean
}

export function decide(input: DecisionInput): Decision {
  const { planned, live } = input
  if (live === undefined) {
    return { action: 'skip', reason: SkipReason.NotFound, message: `HelmRelease ${planned.namespace}/${planned.name} does not exist in the cluster` }
  }
  if (live.suspend) {
    return { action: 'skip', reason: SkipReason.Suspended, message: 'spec.suspend is true; helm-controller would ignore the request' }
  }
  const recorded = recordedDigests(live.annotations[input.digestKey])
  const stale = planned.sources.filter((s) => !recordedMatches(recorded.get(s.id), s))
  if (stale.length === 0 && !input.force) {
    return { action: 'skip', reason: SkipReason.UpToDate, message: 'already triggered for these digests' }
  }
  const stalled = isStalled(live)
  const why = input.force && stale.length === 0 ? 'force' : `${stale.map((s) => s.id).join(', ')} changed`
  return { action: 'trigger', force: input.force, reset: input.reset || stalled, why: stalled ? `${why}; release is stalled, resetting its retries` : why }
}

/**
 * Re-checked between reading the release and patching it (with that read's resourceVersion):
 * when a source no longer holds this run's digest, a newer commit's content is live and its
 * run will trigger (or has triggered) the release. Writing now could put this run's older
 * digests over the newer ones, so the release is skipped. `live` holds the digest read for
 * each checked source (undefined: deleted since); sources not in it were not checked.
 */
export function supersededBy(planned: PlannedRelease, live: ReadonlyMap<SourceId, Digest | undefined>): Extract<Decision, { action: 'skip' }> | undefined {
  const moved = planned.sources.filter((s) => s.digest !== undefined && live.has(s.id) && live.get(s.id) !== s.digest)
  if (moved.length === 0) return undefined
  const seen = moved.map((s) => {
    const now = live.get(s.id)
    const [shownNow, shownOurs] = [shownDigest(s.id, now), shownDigest(s.id, s.digest)]
    if (now === undefined) return `${s.id} no longer exists`
    return shownNow === undefined ? `${s.id} changed since` : `${s.id} is now ${shownNow} (this run: ${shownOurs ?? '?'})`
  })
  return {
    action: 'skip',
    reason: SkipReason.Superseded,
    message: `not patched: ${seen.join(', ')}; a newer commit's content is live and its run triggers this release`,
  }
}

/** requestedAt holds the token we sent: our patch landed, whatever became of its answer. */
export function patchLanded(live: HelmRelease, token: string, keys: Keys): boolean {
  return live.annotations[keys.requestedAt] === token
}

/** The commit (and pull request) a trigger came from, stamped for Flux's notification-controller. */
export interface FluxAttribution {
  readonly commit: string
  readonly changeRequest?: number
}

/** The merge patch for a trigger: the token, the digests (merged with those recorded), the discovery label and the commit. */
export function buildPatch(
  live: HelmRelease,
  planned: PlannedRelease,
  decision: { force: boolean; reset: boolean },
  token: string,
  keys: Keys,
  attribution?: FluxAttribution,
): ReleasePatch {
  const digests = new Map<string, string>(recordedDigests(live.annotations[keys.configDigest]))
  // A Secret's unkeyed digest recorded before keying is replaced by its keyed one here.
  for (const s of planned.sources) if (s.digest !== undefined) digests.set(s.id, s.digest)
  const annotations: Record<string, string | null> = {
    [keys.requestedAt]: token,
    [keys.configDigest]: compactDigestJson(digests),
  }
  // Flux acts on forceAt/resetAt only when they equal requestedAt.
  if (decision.force) annotations[keys.forceAt] = token
  if (decision.reset) annotations[keys.resetAt] = token
  if (attribution !== undefined) {
    annotations[FLUX_EVENT_KEYS.commit] = attribution.commit
    // A merge patch with null removes a pull request an earlier run stamped: this commit has none.
    if (attribution.changeRequest !== undefined) annotations[FLUX_EVENT_KEYS.changeRequest] = String(attribution.changeRequest)
    else if (live.annotations[FLUX_EVENT_KEYS.changeRequest] !== undefined) annotations[FLUX_EVENT_KEYS.changeRequest] = null
  }
  const labels: Record<string, string> = live.valuesFrom.length > 0 ? { [keys.triggerLabel]: keys.triggerLabelValue } : {}
  return { annotations, labels, resourceVersion: live.resourceVersion }
}

/** Compact JSON with sorted keys, so equal maps give equal annotations. */
export function compactDigestJson(digests: ReadonlyMap<string, string>): string {
  const sorted = [...digests.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return JSON.stringify(Object.fromEntries(sorted))
}

// ---- The release action ------------------------------------------------------------------

export type TriggerWrite = Extract<Decision, { action: 'trigger' }>
export type TriggerSkip = Extract<Decision, { action: 'skip' }>

/** What a trigger needs from the settings, and nothing else. */
export interface TriggerOptions {
  readonly keys: Keys
  readonly force: boolean
  readonly reset: boolean
  /**
   * Re-read each plain source after the release read and skip when a newer commit's content is
   * live (the superseded check). Watch mode passes false: a newer change queues another run.
   */
  readonly checkSuperseded: boolean
  /** Who asked, for the Event: `for commit <sha>`, `by helmrelease-trigger watch`. */
  readonly requestedBy: string
  /** Link to the workflow run, named in the Event. */
  readonly runUrl: string | undefined
  /** The commit (and pull request) stamped for Flux's notification-controller; watch mode has none. */
  readonly attribution?: FluxAttribution
}

/** The live digest of each plain source of the release (undefined: gone); `listed` as in ReleaseAction.recheck. */
export type SourceDigests = (listed: boolean) => Promise<ReadonlyMap<SourceId, Digest | undefined>>

export function triggerAction(planned: PlannedRelease, options: TriggerOptions, digests: SourceDigests): ReleaseAction<TriggerWrite, TriggerSkip> {
  return {
    decide: (live) => {
      const decision = decide({ planned, live, digestKey: options.keys.configDigest, force: options.force, reset: options.reset })
      return decision.action === 'skip' ? { kind: 'skip', skip: decision } : { kind: 'write', write: decision }
    },
    ...(options.checkSuperseded ? { recheck: async (_live: HelmRelease, listed: boolean) => supersededBy(planned, await digests(listed)) } : {}),
    patch: (write, live, token) => buildPatch(live, planned, write, token, options.keys, options.attribution),
    event: (write) => ({ reason: 'ConfigChanged', message: triggerEventMessage(planned, write, options) }),
  }
}

/**
 * The ConfigChanged Event's message: who asked, why, each source's digest (a Secret's never: Events
 * are readable with namespace `view`) and the line edited, and a spec or chart source changed alongside.
 */
export function triggerEventMessage(planned: PlannedRelease, write: TriggerWrite, options: Pick<TriggerOptions, 'requestedBy' | 'runUrl'>): string {
  const sources = planned.sources
    .map((s) => `${s.id} ${shownDigest(s.id, s.digest) ?? '(changed)'}${s.origin === undefined ? '' : ` at ${s.origin.file}:${s.origin.line}`}`)
    .join(', ')
  const spec =
    planned.spec === undefined
      ? ''
      : ` Its spec changed too (${planned.spec.fields.join(', ')} at ${planned.spec.origin.file}:${planned.spec.origin.line}); requested once the cluster held both.`
  const chart =
    planned.chart === undefined
      ? ''
      : ` Its chart source ${chartSourceId(planned.chart)} changed too (${planned.chart.fields.join(', ')} at ${planned.chart.origin.file}:${planned.chart.origin.line}); requested once source-controller had fetched the new chart.`
  const run = options.runUrl === undefined ? '' : ` Run: ${options.runUrl}`
  return `Reconcile requested ${options.requestedBy}: ${write.why} (${sources}).${spec}${chart}${run}`
}
