// Watch mode's reactions, pure: what a source or release change means (queue releases, say
// something, record a Warning Event on a release), decided from the change and the view's
// answers. run.ts wires the reflectors to these functions and carries the reactions out.

import { releaseKey, type ReleaseRef, type SourceRef } from '../../core/model.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import type { Keys } from '../../core/keys.ts'
import { shownDigest } from '../../core/digest.ts'
import type { Decision } from '../trigger/action.ts'
import { SkipReason } from '../trigger/action.ts'
import type { Fields, Level } from './log.ts'
import { readsOptionally, type WatchedSource } from './view.ts'

export type Reaction =
  /** Queue these releases; `at` is when the change was seen (latency), `immediate` skips the debounce. */
  | { readonly kind: 'enqueue'; readonly releases: readonly ReleaseRef[]; readonly at: number | undefined; readonly immediate: boolean }
  | { readonly kind: 'log'; readonly level: Level; readonly message: string; readonly fields: Fields }
  /** A Warning Event on the release (not on a dry run). */
  | { readonly kind: 'warn'; readonly release: HelmRelease; readonly reason: 'SourceDeleted'; readonly message: string }

const log = (level: Level, message: string, fields: Fields): Reaction => ({ kind: 'log', level, message, fields })

/**
 * A source added or changed, given the view's copy before the change and the releases it
 * targets now: a metadata-only change (same digest, same annotated targets) queues nothing.
 * Before the first complete sync nothing is said or queued: the full pass after it covers all.
 */
export function sourceChanged(
  before: WatchedSource | undefined,
  source: WatchedSource,
  targets: readonly ReleaseRef[],
  ready: boolean,
  at: number,
): Reaction[] {
  const sameTargets = before !== undefined && JSON.stringify(before.annotatedTargets) === JSON.stringify(source.annotatedTargets)
  if (before !== undefined && before.digest === source.digest && sameTargets) return []
  if (!ready) return []
  return [
    log('info', before === undefined ? 'source added' : 'source changed', {
      source: source.id,
      // A Secret's digest is never logged (watch logs may be public): only that it changed.
      digest: shownDigest(source.id, source.digest),
      targets: targets.map(releaseKey).join(','),
    }),
    { kind: 'enqueue', releases: targets, at, immediate: false },
  ]
}

/** Annotation mistakes of this version of the source not said yet, each with the id that says it once. */
export function newProblems(source: WatchedSource, warned: ReadonlySet<string>): { readonly id: string; readonly problem: string }[] {
  return source.problems.map((problem) => ({ id: `${source.id}@${source.resourceVersion}:${problem}`, problem })).filter((p) => !warned.has(p.id))
}

/** A source that left the view and was read again: still there (only unlabelled) or deleted. */
export function sourceGone(
  source: Pick<WatchedSource, 'id' | 'kind' | 'namespace' | 'name'>,
  stillThere: boolean,
  via: 'watch' | 'relist' | 'start',
  targets: readonly ReleaseRef[],
): Reaction[] {
  if (stillThere) return via === 'start' ? [] : [log('info', 'source no longer labelled; it triggers nothing now', { source: source.id })]
  return [log('warning', 'source deleted', { source: source.id, seenBy: via, releases: unique(targets).map(releaseKey).join(',') })]
}

/**
 * What a deleted source means for one release that it concerned: a release that reads it
 * optionally loses that content and is triggered; one that needs it, or was only named by it,
 * gets a Warning Event and is not triggered.
 */
export function deletedFor(release: HelmRelease, source: SourceRef & { readonly id: string }, keys: Keys, at: number | undefined): Reaction {
  if (readsOptionally(release, source)) return { kind: 'enqueue', releases: [release], at, immediate: at === undefined }
  const reads = release.valuesFrom.some((v) => v.kind === source.kind && v.name === source.name && release.namespace === source.namespace)
  const message = reads
    ? `${source.id} was deleted; spec.valuesFrom needs it, so helm-controller fails to compose values until it is back. Not triggered: restore it (or mark it optional) and the next change triggers.`
    : `${source.id}, which names this release in ${keys.targetNames}, was deleted. Not triggered.`
  return { kind: 'warn', release, reason: 'SourceDeleted', message }
}

/**
 * A release added or changed, with the precheck of its plan: only what makes a trigger due
 * (resumed, valuesFrom changed, config-digest edited) queues it; our own patches and
 * helm-controller's status writes come back here and decide to skip. A release just suspended
 * is said once.
 */
export function releaseChanged(previous: HelmRelease | undefined, release: HelmRelease & { readonly key: string }, decision: Decision | undefined): Reaction[] {
  if (decision?.action === 'trigger') return [{ kind: 'enqueue', releases: [release], at: undefined, immediate: false }]
  if (decision?.action === 'skip' && decision.reason === SkipReason.Suspended && previous !== undefined && !previous.suspend) {
    return [log('info', 'release suspended; it is left alone until resumed', { release: release.key })]
  }
  return []
}

export function unique(refs: readonly ReleaseRef[]): ReleaseRef[] {
  return [...new Map(refs.map((r) => [releaseKey(r), r])).values()]
}
