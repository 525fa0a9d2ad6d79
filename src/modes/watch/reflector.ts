// One resource type in one scope kept in memory: LIST, then WATCH from the list's
// resourceVersion with bookmarks. Unlike client-node's ListWatch (which stops on any error but
// 410), it never gives up: a watch the server ends is reopened from the last resourceVersion;
// 410 Gone, a dropped connection or an apiserver restart lead to a fresh LIST after a backoff,
// diffed against what we held, so changes and deletions made meanwhile are delivered too.

import { messageOf } from '../../lib/errors.ts'
import { ConfigurationError } from '../../lib/errors.ts'
import { GoneError, type ListScope, type ListWatchClient, type WatchEvent } from '../../kube/list-watch.ts'

export interface ObjectMeta {
  readonly key: string
  readonly resourceVersion: string
}

export type Change<T> =
  | { readonly type: 'added'; readonly object: T }
  | { readonly type: 'modified'; readonly object: T; readonly previous: T }
  /** `relist`: missing from a fresh list (deleted or unlabelled while the watch was down). */
  | { readonly type: 'deleted'; readonly object: T; readonly via: 'watch' | 'relist' }

export type RestartReason = 'expired' | 'gone' | 'error'

export interface ReflectorHooks<T> {
  /** Every change, in order. `receivedAt` is when the event reached us (for latency). */
  readonly onChange: (change: Change<T>, receivedAt: number) => void
  /** After each successful LIST has been delivered (the first one is the initial sync). */
  readonly onSynced: (relist: boolean) => void
  /** The watch was reopened: `expired` the server ended it, `gone` 410, `error` anything else. */
  readonly onRestart: (reason: RestartReason, error: unknown) => void
  /** A bookmark or an event: the view is known fresh now. */
  readonly onFresh: (at: number) => void
}

export interface ReflectorOptions<T> {
  readonly name: string
  readonly client: ListWatchClient
  readonly scope: ListScope
  /** The typed view of an object, or undefined to ignore it. */
  readonly parse: (object: unknown) => (T & ObjectMeta) | undefined
  readonly hooks: ReflectorHooks<T & ObjectMeta>
  readonly now: () => number
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>
  /** Backoff after an error: doubled from min up to max, with jitter. */
  readonly backoff?: { readonly minMs: number; readonly maxMs: number }
  /** Server-side watch timeout, randomised between min and 2×min like client-go's reflector. */
  readonly watchTimeoutSeconds?: number
}

export interface Reflector<T> {
  /** Runs until `signal` aborts. Rejects only when the very first LIST, or a WATCH before any has opened, fails with a configuration error. */
  run(signal: AbortSignal): Promise<void>
  readonly store: ReadonlyMap<string, T>
  readonly synced: boolean
}

export function createReflector<T>(options: ReflectorOptions<T>): Reflector<T & ObjectMeta> {
  const store = new Map<string, T & ObjectMeta>()
  const { hooks, client, scope } = options
  const minBackoff = options.backoff?.minMs ?? 500
  const maxBackoff = options.backoff?.maxMs ?? 10_000
  const timeout = options.watchTimeoutSeconds ?? 300
  let synced = false

  /** Replaces the store with a fresh list, delivering the difference. */
  function replace(items: readonly unknown[], relist: boolean, at: number): void {
    const fresh = new Map<string, T & ObjectMeta>()
    for (const item of items) {
      const object = options.parse(item)
      if (object !== undefined) fresh.set(object.key, object)
    }
    for (const [key, object] of fresh) {
      const previous = store.get(key)
      store.set(key, object)
      if (previous === undefined) hooks.onChange({ type: 'added', object }, at)
      else if (previous.resourceVersion !== object.resourceVersion) hooks.onChange({ type: 'modified', object, previous }, at)
    }
    for (const [key, object] of [...store]) {
      if (fresh.has(key)) continue
      store.delete(key)
      hooks.onChange({ type: 'deleted', object, via: 'relist' }, at)
    }
    synced = true
    hooks.onSynced(relist)
  }

  function apply(event: WatchEvent, at: number): string | undefined {
    if (event.type === 'BOOKMARK') return event.resourceVersion
    const object = options.parse(event.object)
    if (object === undefined) return undefined
    const previous = store.get(object.key)
    if (event.type === 'DELETED') {
      store.delete(object.key)
      hooks.onChange({ type: 'deleted', object: previous ?? object, via: 'watch' }, at)
    } else {
      store.set(object.key, object)
      if (previous === undefined) hooks.onChange({ type: 'added', object }, at)
      else hooks.onChange({ type: 'modified', object, previous }, at)
    }
    return object.resourceVersion
  }

  return {
    store,
    get synced() {
      return synced
    },
    async run(signal) {
      let resourceVersion: string | undefined
      let delay = minBackoff
      let listed = false
      let watched = false
      let watching = false
      while (!signal.aborted) {
        try {
          if (resourceVersion === undefined) {
            const list = await client.list(scope)
            if (signal.aborted) return
            replace(list.items, listed, options.now())
            listed = true
            hooks.onFresh(options.now())
            resourceVersion = list.resourceVersion
            delay = minBackoff
          }
          const started = options.now()
          watching = true
          await client.watch(scope, { resourceVersion, timeoutSeconds: timeout + Math.floor(Math.random() * timeout), signal }, (event) => {
            watched = true
            const at = options.now()
            const rv = apply(event, at)
            if (rv !== undefined) resourceVersion = rv
            hooks.onFresh(at)
          })
          watching = false
          watched = true
          if (signal.aborted) return
          hooks.onRestart('expired', undefined)
          // A server that ends watches at once (overloaded, shutting down) must not become a hot loop.
          if (options.now() - started < 1_000) await options.sleep(minBackoff, signal)
          delay = minBackoff
        } catch (error) {
          if (signal.aborted) return
          // Without a first list there is nothing to serve: a wrong kubeconfig or missing RBAC is fatal.
          // So is a watch refused before any opened: relisting in its place would poll, warning each time.
          if ((!listed || (watching && !watched)) && error instanceof ConfigurationError) throw error
          watching = false
          const gone = error instanceof GoneError
          hooks.onRestart(gone ? 'gone' : 'error', error)
          // Whatever broke, list again: the diff delivers what changed while we were away.
          resourceVersion = undefined
          if (!gone) {
            await options.sleep(delay * (1 + Math.random() * 0.2), signal)
            delay = Math.min(delay * 2, maxBackoff)
          }
        }
      }
    },
  }
}

export function describeRestart(name: string, reason: RestartReason, error: unknown): string {
  if (reason === 'expired') return `${name}: watch ended by the server; reopened from the last resourceVersion`
  if (reason === 'gone') return `${name}: watch history expired (410 Gone); listing again`
  return `${name}: watch failed (${messageOf(error)}); listing again after a backoff`
}
