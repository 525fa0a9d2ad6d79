// The reflector against a scripted list/watch client: list then watch from the list's
// resourceVersion, bookmarks move it, a server-ended watch reopens from it, 410 and errors
// list again and deliver the difference (deletions included), a configuration error of the
// first list, or of a watch before any opened, is fatal.
import { describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../../src/lib/errors.ts'
import { GoneError, type ListResult, type ListScope, type ListWatchClient, type WatchEvent, type WatchOptions } from '../../../../src/kube/list-watch.ts'
import { createReflector, type Change } from '../../../../src/modes/watch/reflector.ts'

interface Item {
  readonly key: string
  readonly resourceVersion: string
  readonly value: string
}

type Step = { list: ListResult } | { list: Error } | { watch: { events: WatchEvent[]; end: 'close' | Error } }

function obj(name: string, rv: string, value = 'x'): unknown {
  return { metadata: { name, resourceVersion: rv }, value }
}

/** Plays the steps in order; each list/watch call takes the next step of its kind. */
class ScriptedClient implements ListWatchClient {
  readonly watchedFrom: string[] = []
  lists = 0
  private readonly steps: Step[]
  private readonly stop: AbortController
  constructor(steps: Step[], stop: AbortController) {
    this.steps = steps
    this.stop = stop
  }
  async list(_scope: ListScope): Promise<ListResult> {
    this.lists++
    const step = this.steps.shift()
    if (step === undefined || !('list' in step)) throw new Error(`unexpected list, next step ${JSON.stringify(step)}`)
    if (step.list instanceof Error) throw step.list
    return step.list
  }
  async watch(_scope: ListScope, options: WatchOptions, onEvent: (e: WatchEvent) => void): Promise<void> {
    this.watchedFrom.push(options.resourceVersion)
    const step = this.steps.shift()
    if (step === undefined) {
      this.stop.abort()
      return
    }
    if (!('watch' in step)) throw new Error(`unexpected watch, next step is a list`)
    for (const e of step.watch.events) onEvent(e)
    if (step.watch.end instanceof Error) throw step.watch.end
  }
}

function run(steps: Step[]) {
  const stop = new AbortController()
  const client = new ScriptedClient(steps, stop)
  const changes: string[] = []
  const hooks = { synced: [] as boolean[], restarts: [] as string[] }
  const reflector = createReflector<Item>({
    name: 'test',
    client,
    scope: { resource: 'configmaps', namespace: undefined, labelSelector: 'a=b' },
    parse: (o) => {
      const m = o as { metadata: { name: string; resourceVersion: string }; value: string }
      return { key: m.metadata.name, resourceVersion: m.metadata.resourceVersion, value: m.value }
    },
    now: () => 0,
    sleep: async () => undefined,
    hooks: {
      onChange: (c: Change<Item>) => changes.push(`${c.type}:${c.object.key}@${c.object.resourceVersion}${c.type === 'deleted' ? `(${c.via})` : ''}`),
      onSynced: (relist) => hooks.synced.push(relist),
      onRestart: (reason) => hooks.restarts.push(reason),
      onFresh: () => undefined,
    },
  })
  return { done: reflector.run(stop.signal), client, changes, hooks, reflector }
}

describe('reflector', () => {
  it('lists, then watches from the list resourceVersion; bookmarks and events move it; a server-ended watch reopens from it', async () => {
    const r = run([
      { list: { items: [obj('a', '10')], resourceVersion: '12' } },
      {
        watch: {
          events: [
            { type: 'MODIFIED', object: obj('a', '13') },
            { type: 'BOOKMARK', resourceVersion: '20' },
          ],
          end: 'close',
        },
      },
      {
        watch: {
          events: [
            { type: 'ADDED', object: obj('b', '21') },
            { type: 'DELETED', object: obj('a', '22') },
          ],
          end: 'close',
        },
      },
    ])
    await r.done
    expect(r.client.watchedFrom).toEqual(['12', '20', '22'])
    expect(r.client.lists).toBe(1)
    expect(r.changes).toEqual(['added:a@10', 'modified:a@13', 'added:b@21', 'deleted:a@13(watch)'])
    expect(r.hooks.synced).toEqual([false])
    expect(r.hooks.restarts).toEqual(['expired', 'expired'])
    expect([...r.reflector.store.keys()]).toEqual(['b'])
  })

  it('lists again on 410 Gone and delivers only the difference, deletions included', async () => {
    const r = run([
      { list: { items: [obj('a', '1'), obj('b', '2'), obj('c', '3')], resourceVersion: '3' } },
      { watch: { events: [], end: new GoneError('too old') } },
      { list: { items: [obj('a', '1'), obj('b', '7'), obj('d', '8')], resourceVersion: '9' } },
    ])
    await r.done
    expect(r.changes.slice(3)).toEqual(['modified:b@7', 'added:d@8', 'deleted:c@3(relist)'])
    expect(r.hooks.restarts).toEqual(['gone'])
    expect(r.hooks.synced).toEqual([false, true])
    expect(r.client.watchedFrom).toEqual(['3', '9'])
  })

  it('after a dropped connection or a refused list, backs off and lists again instead of giving up', async () => {
    const r = run([
      { list: { items: [obj('a', '1')], resourceVersion: '1' } },
      { watch: { events: [{ type: 'MODIFIED', object: obj('a', '2') }], end: new Error('ECONNRESET') } },
      { list: new Error('ECONNREFUSED') },
      { list: { items: [obj('a', '5')], resourceVersion: '6' } },
    ])
    await r.done
    expect(r.hooks.restarts).toEqual(['error', 'error'])
    expect(r.changes).toEqual(['added:a@1', 'modified:a@2', 'modified:a@5'])
    expect(r.client.lists).toBe(3)
  })

  it('fails at once when the first list is refused for a configuration reason (RBAC, kubeconfig)', async () => {
    const r = run([{ list: new ConfigurationError('Forbidden: cannot list configmaps') }])
    await expect(r.done).rejects.toThrow(/Forbidden/)
  })

  it('fails when the first watch is refused for a configuration reason, though the list was allowed', async () => {
    const r = run([
      { list: { items: [obj('a', '1')], resourceVersion: '1' } },
      { watch: { events: [], end: new ConfigurationError('Forbidden: cannot watch configmaps') } },
    ])
    await expect(r.done).rejects.toThrow(/cannot watch configmaps/)
    expect(r.client.lists).toBe(1)
  })

  it('keeps going when a watch is refused after one has opened', async () => {
    const r = run([
      { list: { items: [], resourceVersion: '1' } },
      { watch: { events: [], end: 'close' } },
      { watch: { events: [], end: new ConfigurationError('Forbidden: cannot watch configmaps') } },
      { list: { items: [obj('a', '3')], resourceVersion: '3' } },
    ])
    await r.done
    expect(r.hooks.restarts).toEqual(['expired', 'error'])
    expect(r.changes).toEqual(['added:a@3'])
  })

  it('keeps going after the first list when a later list is refused', async () => {
    const r = run([
      { list: { items: [], resourceVersion: '1' } },
      { watch: { events: [], end: new Error('reset') } },
      { list: new ConfigurationError('Forbidden: cannot list configmaps') },
      { list: { items: [obj('a', '3')], resourceVersion: '3' } },
    ])
    await r.done
    expect(r.changes).toEqual(['added:a@3'])
  })
})
