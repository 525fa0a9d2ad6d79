// One planned release through trigger's action and the write engine: the checks that need no
// read (a source that never reached the cluster, the run's deadline), then writeRelease, then
// the release's result. Trigger mode and watch mode both call it.

import { liveDigest, recordedDigestOf, type DigestKey } from '../../core/digest.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import { releaseKey, type Digest, type PlannedRelease, type SourceId, type SourceRef } from '../../core/model.ts'
import type { Triggered } from '../../engine/outcome.ts'
import { Reason, Status, type ReleaseResult } from '../../engine/result.ts'
import { writeRelease, type WriteContext } from '../../engine/write-release.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { formatDuration } from '../../lib/duration.ts'
import { triggerAction, type SourceDigests, type TriggerOptions } from './action.ts'

/** What one release's trigger needs; trigger mode and watch mode both build one. */
export interface TriggerScope {
  readonly options: TriggerOptions
  readonly write: Omit<WriteContext, 'observed'>
  readonly semanticDigest: boolean
  /** The key of Secret digests; present when a release reads a Secret. */
  readonly digestKey?: DigestKey
  /** The run's timeout, named when the deadline passes. */
  readonly timeoutMs: number
  /** Sources that never reached the cluster, with why. */
  readonly unapplied: ReadonlyMap<SourceId, string>
  /** Releases as first observed, before waiting for the sources (the revision an upgrade is measured from). */
  readonly baseline: ReadonlyMap<string, HelmRelease>
  /**
   * Releases read just before the fan-out, by key (a LIST per namespace with many targets);
   * undefined for a key means listed and absent. The first attempt decides on this instead of
   * a GET. Keys not in it are read one by one.
   */
  readonly observed?: ReadonlyMap<string, HelmRelease | undefined>
  /** Live source digests read after `observed` (same order as a GET then the source reads). */
  readonly observedDigests?: ReadonlyMap<SourceId, Digest | undefined>
  /**
   * No release starts after this (clock ms): each request is bounded, but a hung apiserver
   * would otherwise take a bounded-but-huge time for each of thousands of releases.
   */
  readonly deadline?: number
}

export type TriggerOutcome = { readonly kind: 'triggered'; readonly triggered: Triggered } | { readonly kind: 'settled'; readonly result: ReleaseResult }

export async function triggerRelease(planned: PlannedRelease, scope: TriggerScope): Promise<TriggerOutcome> {
  const { write } = scope
  const started = write.clock.now()
  const settle = (status: Status, reason: Reason, message: string, severity: ReleaseResult['severity']): TriggerOutcome => ({
    kind: 'settled',
    result: {
      namespace: planned.namespace,
      name: planned.name,
      sources: planned.sources,
      status,
      reason,
      message,
      durationMs: write.clock.now() - started,
      severity,
    },
  })
  const missing = planned.sources.filter((s) => scope.unapplied.has(s.id))
  if (missing.length > 0) {
    return settle(Status.Failed, Reason.SourceNotApplied, `not patched: ${missing.map((s) => s.id).join(', ')} never reached the cluster`, 'error')
  }
  if (scope.deadline !== undefined && started > scope.deadline) {
    const message = `not patched: the timeout (${formatDuration(scope.timeoutMs)}) passed before its turn; the API server answered too slowly or not at all`
    return settle(Status.TimedOut, Reason.NotAttempted, message, 'error')
  }
  const key = releaseKey(planned)
  const listed = scope.observed?.has(key) === true
  const digests: SourceDigests = async (fromList) =>
    fromList && scope.observedDigests !== undefined ? scope.observedDigests : liveDigests(write.cluster, planned, scope.semanticDigest, scope.digestKey)
  const outcome = await writeRelease(planned, triggerAction(planned, scope.options, digests), {
    ...write,
    ...(listed ? { observed: { live: scope.observed?.get(key) } } : {}),
  })
  switch (outcome.kind) {
    case 'written': {
      const { write: decision, release, token } = outcome
      const before = scope.baseline.get(key) ?? outcome.read
      return { kind: 'triggered', triggered: { planned, release, before, token, force: decision.force, reset: decision.reset, startedAt: started } }
    }
    case 'skipped':
      return settle(Status.Skipped, outcome.skip.reason, outcome.skip.message, outcome.skip.reason === Reason.NotFound ? 'warning' : 'none')
    case 'failed':
      return settle(Status.Failed, outcome.reason, outcome.message, 'error')
  }
}

/** Each plain source's live digest (undefined: gone). Encrypted ones are tracked by revision, not digest. */
async function liveDigests(
  cluster: ClusterClient,
  planned: PlannedRelease,
  semantic: boolean,
  key: DigestKey | undefined,
): Promise<Map<SourceId, Digest | undefined>> {
  const plain = planned.sources.filter((s) => !s.encrypted)
  const read = await Promise.all(
    plain.map(async (s) => {
      const live = await cluster.getSource(sourceRefOf(s.id))
      if (live === undefined) return [s.id, undefined] as const
      return [s.id, key === undefined ? liveDigest(live, semantic) : recordedDigestOf(live, semantic, key)] as const
    }),
  )
  return new Map(read)
}

/** A source's id back into its parts. */
export function sourceRefOf(id: SourceId): SourceRef {
  const [kind = '', namespace = '', name = ''] = id.split('/')
  return { kind: kind === 'Secret' ? 'Secret' : 'ConfigMap', namespace, name }
}
