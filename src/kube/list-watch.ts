// LIST and WATCH of one resource type in one scope (a namespace or all, a label selector),
// as the watch mode's reflectors need them: a list is read page by page and keeps the
// snapshot's resourceVersion; a watch starts from a resourceVersion, asks for bookmarks,
// and ends cleanly when the server closes it. 410 Gone, in the answer or as an ERROR event,
// becomes GoneError: the caller must list again.

import type { Request } from './api-error.ts'
import { HELMRELEASE } from '../core/helmrelease.ts'
import type { RawClient } from './raw-client.ts'

export type WatchedResource = 'configmaps' | 'secrets' | 'helmreleases'

export interface ListScope {
  readonly resource: WatchedResource
  /** undefined: every namespace. */
  readonly namespace: string | undefined
  readonly labelSelector: string | undefined
}

export interface ListResult {
  readonly items: readonly unknown[]
  readonly resourceVersion: string
}

export type WatchEvent =
  { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: unknown } | { readonly type: 'BOOKMARK'; readonly resourceVersion: string }

export interface WatchOptions {
  readonly resourceVersion: string
  /** Server-side end of the watch; the client gives up on a silent stream a little after. */
  readonly timeoutSeconds: number
  readonly signal: AbortSignal
}

export interface ListWatchClient {
  list(scope: ListScope): Promise<ListResult>
  /** Resolves when the server ends the watch (or `signal` stops it); throws GoneError on 410. */
  watch(scope: ListScope, options: WatchOptions, onEvent: (event: WatchEvent) => void): Promise<void>
}

/** The resourceVersion we asked for is no longer in the server's history: list again. */
export class GoneError extends Error {
  override readonly name = 'GoneError'
}

const PAGE_SIZE = 500

export function createListWatchClient(raw: RawClient, options: { pageSize?: number } = {}): ListWatchClient {
  const pageSize = options.pageSize ?? PAGE_SIZE
  return {
    async list(scope) {
      const items: unknown[] = []
      let next: string | undefined
      let resourceVersion = ''
      do {
        const query = new URLSearchParams({ limit: String(pageSize) })
        if (scope.labelSelector !== undefined) query.set('labelSelector', scope.labelSelector)
        if (next !== undefined) query.set('continue', next)
        let page: unknown
        try {
          page = await raw.json({ method: 'GET', path: `${collectionPath(scope)}?${query}`, describe: describe(scope, 'list'), timeoutMs: 60_000 })
        } catch (error) {
          // An expired continue token: the snapshot is gone, start the list over.
          if (next !== undefined && isGone(error)) {
            items.length = 0
            next = undefined
            continue
          }
          throw error
        }
        const list = record(page)
        const metadata = record(list['metadata'])
        if (Array.isArray(list['items'])) items.push(...list['items'])
        resourceVersion = typeof metadata['resourceVersion'] === 'string' ? metadata['resourceVersion'] : resourceVersion
        next = typeof metadata['continue'] === 'string' && metadata['continue'] !== '' ? metadata['continue'] : undefined
      } while (next !== undefined)
      return { items, resourceVersion }
    },

    async watch(scope, o, onEvent) {
      const query = new URLSearchParams({
        watch: 'true',
        allowWatchBookmarks: 'true',
        resourceVersion: o.resourceVersion,
        timeoutSeconds: String(o.timeoutSeconds),
      })
      if (scope.labelSelector !== undefined) query.set('labelSelector', scope.labelSelector)
      let gone: GoneError | undefined
      try {
        await raw.stream(
          { path: `${collectionPath(scope)}?${query}`, describe: describe(scope, 'watch'), idleMs: (o.timeoutSeconds + 30) * 1000, signal: o.signal },
          (line) => {
            if (gone !== undefined) return
            const event = parseEvent(line)
            if (event === undefined) return
            if (event.type === 'ERROR') {
              gone = new GoneError(`watch ${scope.resource}: ${event.message || 'resource version too old'} (${event.code})`)
              if (event.code !== 410) throw new Error(`watch ${scope.resource} failed: ${event.message || event.reason} (${event.code})`)
              return
            }
            onEvent(event)
          },
        )
      } catch (error) {
        if (isGone(error)) throw new GoneError(`watch ${scope.resource}: resource version ${o.resourceVersion} is too old (410 Gone)`, { cause: error })
        throw error
      }
      if (gone !== undefined) throw gone
    },
  }
}

type ParsedEvent = WatchEvent | { readonly type: 'ERROR'; readonly code: number; readonly reason: string; readonly message: string }

function parseEvent(line: string): ParsedEvent | undefined {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return undefined
  }
  const event = record(value)
  const object = event['object']
  switch (event['type']) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      return { type: event['type'], object }
    case 'BOOKMARK': {
      const rv = record(record(object)['metadata'])['resourceVersion']
      return typeof rv === 'string' ? { type: 'BOOKMARK', resourceVersion: rv } : undefined
    }
    case 'ERROR': {
      const status = record(object)
      return {
        type: 'ERROR',
        code: typeof status['code'] === 'number' ? status['code'] : 0,
        reason: String(status['reason'] ?? ''),
        message: String(status['message'] ?? ''),
      }
    }
    default:
      return undefined
  }
}

function collectionPath(scope: ListScope): string {
  const ns = scope.namespace === undefined ? '' : `/namespaces/${encodeURIComponent(scope.namespace)}`
  if (scope.resource === 'helmreleases') return `/apis/${HELMRELEASE.group}/${HELMRELEASE.version}${ns}/${HELMRELEASE.plural}`
  return `/api/v1${ns}/${scope.resource}`
}

function describe(scope: ListScope, verb: 'list' | 'watch'): Request {
  return { verb, resource: scope.resource, group: scope.resource === 'helmreleases' ? HELMRELEASE.group : '', namespace: scope.namespace }
}

function isGone(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (typeof e === 'object' && 'code' in e && e.code === 410) return true
    e = typeof e === 'object' && 'cause' in e ? e.cause : undefined
  }
  return false
}

function record(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}
