// Sources that left the view: deleted, or only unlabelled? Read again to know; a deletion is
// reported on each release it concerned (react.ts decides what it means for each). At the
// start and on leading, the sources a release's config-digest records but the view lacks are
// the deletions made while nobody watched.

import { messageOf } from '../../lib/errors.ts'
import { recordedDigests } from '../../core/helmrelease.ts'
import type { Keys } from '../../core/keys.ts'
import { releaseKey, type Digest, type ReleaseRef, type SourceId, type SourceRef } from '../../core/model.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import type { EventLog } from './log.ts'
import type { WatchMetrics } from './metrics.ts'
import { deletedFor, sourceGone, unique, type Reaction } from './react.ts'
import { parseSourceId, type WatchedRelease, type WatchedSource, type WatchView } from './view.ts'

export type GoneSource = Pick<WatchedSource, 'id' | 'kind' | 'namespace' | 'name' | 'annotatedTargets'>

export interface AwayCandidate {
  readonly ref: SourceRef & { readonly id: SourceId }
  readonly recordedBy: readonly ReleaseRef[]
}

/**
 * Sources a release's config-digest records that are not in view, each with the releases that
 * record it. Already handled deletions (recorded as `absent` content) and sources outside the
 * watched namespaces are left out.
 */
export function awayCandidates(
  releases: readonly WatchedRelease[],
  inView: (id: SourceId) => boolean,
  digestKey: string,
  absent: Digest,
  namespaces: readonly string[],
): AwayCandidate[] {
  const candidates = new Map<SourceId, { ref: SourceRef & { readonly id: SourceId }; recordedBy: ReleaseRef[] }>()
  for (const release of releases) {
    for (const [id, digest] of recordedDigests(release.annotations[digestKey])) {
      const ref = parseSourceId(id)
      if (ref === undefined || inView(ref.id) || digest === absent) continue
      if (namespaces.length > 0 && !namespaces.includes(ref.namespace)) continue
      const entry = candidates.get(ref.id) ?? { ref, recordedBy: [] }
      entry.recordedBy.push({ namespace: release.namespace, name: release.name })
      candidates.set(ref.id, entry)
    }
  }
  return [...candidates.values()]
}

export interface GoneOptions {
  readonly cluster: Pick<ClusterClient, 'getSource' | 'getRelease'>
  readonly view: WatchView
  readonly keys: Keys
  readonly log: EventLog
  readonly metrics: Pick<WatchMetrics, 'deletions'>
  readonly isLeading: () => boolean
  /** Carries reactions out unguarded (they concern a known deletion, not a change before sync). */
  readonly carry: (reactions: readonly Reaction[]) => Promise<void>
}

export type Via = 'watch' | 'relist' | 'start'

export function createGoneCheck(o: GoneOptions): (source: GoneSource, via: Via, at: number | undefined, recordedBy?: readonly ReleaseRef[]) => Promise<void> {
  const { view, cluster } = o
  return async (source, via, at, recordedBy = []) => {
    if (!o.isLeading()) return
    try {
      const live = await cluster.getSource(source)
      if (view.source(source.id) !== undefined) return // back already
      const targets = view.targetsOf(source).concat(source.annotatedTargets, recordedBy)
      await o.carry(sourceGone(source, live !== undefined, via, targets))
      if (live !== undefined) return
      o.metrics.deletions.inc()
      view.markAbsent(source)
      for (const t of unique(targets)) {
        const release = view.release(releaseKey(t)) ?? (await cluster.getRelease(t).catch(() => undefined))
        if (release !== undefined) await o.carry([deletedFor(release, source, o.keys, at)])
      }
    } catch (error) {
      o.log.event('warning', 'could not check a removed source', { source: source.id, error: messageOf(error) })
    }
  }
}
