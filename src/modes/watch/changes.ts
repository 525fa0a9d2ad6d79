// Watch mode's handlers of what the reflectors deliver: a source or release change is decided
// in react.ts (pure) and carried out here (logged, queued, a Warning Event written). Nothing is
// queued before the view is complete or while this replica does not lead: the full pass after
// the sync, or on becoming leader, covers every release.

import { releaseKey, type ReleaseRef } from '../../core/model.ts'
import type { GoneSource, Via } from './gone.ts'
import type { EventLog } from './log.ts'
import { newProblems, releaseChanged, sourceChanged, type Reaction } from './react.ts'
import type { Change } from './reflector.ts'
import type { Selector, WatchedRelease, WatchedSource, WatchView } from './view.ts'
import type { WatchEvents } from './events.ts'

/** Annotation mistakes remembered (said once per version of a source) before the memory is cleared. */
const WARNED_LIMIT = 10_000

export interface ChangeOptions {
  readonly view: WatchView
  readonly log: EventLog
  readonly events: Pick<WatchEvents, 'warn'>
  readonly queue: { add(key: string, at: number | undefined, options?: { immediate?: boolean }): void }
  readonly ready: () => boolean
  readonly leading: () => boolean
  readonly checkGone: (source: GoneSource, via: Via, at: number) => Promise<void>
}

export interface ChangeHandlers {
  /** `guarded`: queue only once synced and leading (a change); unguarded: a known deletion's consequence. */
  carry(reactions: readonly Reaction[], guarded: boolean): Promise<void>
  onSource(selector: Selector, change: Change<WatchedSource>, at: number): void
  onRelease(change: Change<WatchedRelease>): void
  /** Every watched source's releases, queued at once (after the sync, a relist, on leading). */
  fullPass(why: string): void
}

export function createChangeHandlers(o: ChangeOptions): ChangeHandlers {
  const { view, log, queue } = o
  const active = (): boolean => o.ready() && o.leading()
  const enqueue = (refs: readonly ReleaseRef[], at: number | undefined): void => {
    if (!active()) return // the full pass after sync or on leading covers them
    for (const r of refs) queue.add(releaseKey(r), at)
  }

  function carry(reactions: readonly Reaction[], guarded: boolean): Promise<void> {
    const writes: Promise<void>[] = []
    for (const r of reactions) {
      if (r.kind === 'log') log.event(r.level, r.message, r.fields)
      else if (r.kind === 'warn') writes.push(o.events.warn(r.release, r.reason, r.message))
      else if (guarded) enqueue(r.releases, r.at)
      else for (const t of r.releases) queue.add(releaseKey(t), r.at, r.immediate ? { immediate: true } : {})
    }
    return Promise.all(writes).then(() => undefined)
  }

  const warned = new Set<string>()
  function onSource(selector: Selector, change: Change<WatchedSource>, at: number): void {
    if (change.type === 'deleted') {
      const removed = view.removeSource(selector, change.object.id)
      if (removed !== undefined && o.ready()) void o.checkGone(removed, change.via, at)
      return
    }
    const source = change.object
    for (const { id, problem } of newProblems(source, warned)) {
      log.event('warning', 'source annotation ignored', { source: source.id, problem })
      if (warned.size > WARNED_LIMIT) warned.clear()
      warned.add(id)
    }
    const before = view.source(source.id)
    const targets = view.upsertSource(selector, source)
    void carry(sourceChanged(before, source, targets, o.ready(), at), true)
  }

  function onRelease(change: Change<WatchedRelease>): void {
    if (change.type === 'deleted') {
      view.removeRelease(change.object.key)
      return
    }
    const previous = view.upsertRelease(change.object)
    if (!active()) return
    const planned = view.plan(change.object)
    if (planned.sources.length === 0) return
    void carry(releaseChanged(previous, change.object, view.precheck(planned)), false)
  }

  function fullPass(why: string): void {
    if (!active()) return
    const targets = view.allTargets()
    log.event('info', 'reconciling every watched source', { why, sources: view.sourceCount, releases: targets.length })
    for (const t of targets) queue.add(releaseKey(t), undefined, { immediate: true })
  }

  return { carry, onSource, onRelease, fullPass }
}
