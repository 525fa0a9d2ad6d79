// wait-for-apply's ear on one source: a watch on it (field-selected by name, from the
// resourceVersion of the first read) wakes the wait the moment kustomize-controller's apply
// lands, instead of on the next poll. The poll stays as the fallback: a client without watch,
// a watch refused (many clusters grant no `watch` on Secrets) or ended early leaves the wait
// to poll as before.

import type { LiveSource, SourceRef } from '../../core/model.ts'
import type { ClusterClient } from '../../kube/cluster.ts'

export interface SourceChanges {
  /** True while the watch is open: the caller may poll slowly. */
  readonly watching: boolean
  /**
   * The source's next change seen by the watch ({ live }; live undefined: deleted), or
   * undefined when `ms` passed first (poll). A change seen since the last call returns at once.
   */
  next(ms: number, sleep: (ms: number) => Promise<void>): Promise<{ readonly live: LiveSource | undefined } | undefined>
  stop(): void
}

/** Watch server ends (its timeout) reopened from the last resourceVersion at most this often. */
const MAX_REOPENS = 10

export function sourceChanges(cluster: Pick<ClusterClient, 'watchSource'>, ref: SourceRef, resourceVersion: string | undefined): SourceChanges {
  const stop = new AbortController()
  let latest: { live: LiveSource | undefined } | undefined
  let wake: (() => void) | undefined
  let watching = cluster.watchSource !== undefined && resourceVersion !== undefined

  const open = async (from: string): Promise<void> => {
    let rv = from
    for (let reopened = 0; reopened <= MAX_REOPENS && !stop.signal.aborted; reopened++) {
      await cluster.watchSource?.(
        ref,
        rv,
        (live) => {
          if (live?.resourceVersion !== undefined) rv = live.resourceVersion
          latest = { live }
          wake?.()
        },
        stop.signal,
      )
    }
  }
  if (watching && resourceVersion !== undefined) {
    open(resourceVersion)
      .catch(() => undefined)
      .finally(() => {
        watching = false
        wake?.()
      })
  }

  return {
    get watching() {
      return watching && !stop.signal.aborted
    },
    async next(ms, sleep) {
      if (latest === undefined && watching) {
        // A timer of our own (cleared on wake), not the clock's sleep: a change ends the wait.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, ms)
          function done(): void {
            clearTimeout(timer)
            wake = undefined
            resolve()
          }
          wake = done
        })
      } else if (latest === undefined) {
        await sleep(ms)
      }
      const seen = latest
      latest = undefined
      return seen
    },
    stop: () => stop.abort(),
  }
}
