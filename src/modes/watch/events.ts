// Watch mode's Kubernetes Events: a trigger's Normal Event queued beside the patches (see
// event-writer.ts), a deleted source's Warning written at once. An Event that cannot be
// written is a warning in the log, never a failed trigger; a dropped one is counted and said
// once per burst.
// Under a burst (BURST_PER_SECOND or more Events in the last second) the Events are
// aggregated, as client-go's EventCorrelator does: a release's first Event of a kind is written
// at once; more of the same kind within AGGREGATE_WINDOW_MS wait for the window's end and go
// out as one Event with their count (firstTimestamp, lastTimestamp, count). Each Event costs
// the apiserver a write, as much as the patch itself: at 100 changes/s this keeps the
// patches' share of the apiserver. Outside a burst every Event is written at once.

import { messageOf } from '../../lib/errors.ts'
import { releaseKey } from '../../core/model.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import type { ClusterClient, ReleaseEvent } from '../../kube/cluster.ts'
import { EventWriter } from './event-writer.ts'
import type { EventLog } from './log.ts'
import type { WatchMetrics } from './metrics.ts'

/** Events waiting to be written beyond which new ones are dropped (a burst; each ~1 KB). */
export const EVENTS_WAITING_LIMIT = 10_000
/** A release's Events of one kind within this long after one was written are aggregated. */
export const AGGREGATE_WINDOW_MS = 10_000
/** Events per second from which they are aggregated. */
export const BURST_PER_SECOND = 10

export interface WatchEvents {
  /** Queues a trigger's Event (aggregated with the release's others under a burst). */
  add(event: ReleaseEvent): void
  /** Writes a Warning Event on the release now (nothing on a dry run). */
  warn(release: HelmRelease, reason: string, message: string): Promise<void>
  /** Writes the aggregated Events whose window has ended (called every second or so). */
  tick(): void
  /** Writes everything held and waits for it. */
  drain(): Promise<void>
}

export interface WatchEventsOptions {
  readonly cluster: Pick<ClusterClient, 'recordEvent'>
  readonly log: EventLog
  readonly metrics: Pick<WatchMetrics, 'eventsDropped'>
  readonly maxConcurrency: number
  readonly dryRun: boolean
  readonly now: () => number
}

interface Kind {
  /** When the last Event of this kind was handed to the writer. */
  writtenAt: number
  /** Held until the window ends. */
  held: { event: ReleaseEvent; count: number; firstAt: number } | undefined
}

export function createWatchEvents(o: WatchEventsOptions): WatchEvents {
  const record = async (event: ReleaseEvent): Promise<void> => {
    try {
      await o.cluster.recordEvent(event, { dryRun: false })
    } catch (error) {
      // The trigger itself succeeded; an Event we may not create is worth a warning, not a failure.
      o.log.event('warning', 'could not record the Event', { release: releaseKey(event.release), error: messageOf(error) })
    }
  }
  let dropping = false
  const writer: EventWriter<ReleaseEvent> = new EventWriter<ReleaseEvent>({
    // Events are not what anyone waits for: few at once, so the patches keep the apiserver.
    concurrency: Math.max(1, Math.ceil(o.maxConcurrency / 5)),
    limit: EVENTS_WAITING_LIMIT,
    write: async (event) => {
      await record(event)
      if (writer.depth <= 1) dropping = false
    },
    onDropped: (event) => {
      o.metrics.eventsDropped.inc()
      if (!dropping)
        o.log.event('warning', 'too many Events waiting: dropping Events until the backlog clears', {
          release: releaseKey(event.release),
          waiting: EVENTS_WAITING_LIMIT,
        })
      dropping = true
    },
  })

  const kinds = new Map<string, Kind>()
  /** When the last BURST_PER_SECOND Events were added, oldest first. */
  const recent: number[] = []
  const bursting = (now: number): boolean => {
    recent.push(now)
    if (recent.length > BURST_PER_SECOND) recent.shift()
    return recent.length === BURST_PER_SECOND && now - (recent[0] ?? now) < 1_000
  }
  const release = (kind: Kind, now: number): void => {
    const held = kind.held
    if (held === undefined) return
    kind.held = undefined
    kind.writtenAt = now
    writer.add(held.count === 1 ? held.event : { ...held.event, count: held.count, firstAt: held.firstAt })
  }
  const tick = (): void => {
    const now = o.now()
    for (const [key, kind] of kinds) {
      if (now - kind.writtenAt < AGGREGATE_WINDOW_MS) continue
      if (kind.held === undefined) kinds.delete(key)
      else release(kind, now)
    }
  }

  return {
    add: (event) => {
      const now = o.now()
      const key = `${releaseKey(event.release)}\u0000${event.type}\u0000${event.reason}`
      const kind = kinds.get(key)
      const burst = bursting(now)
      if (kind === undefined || (kind.held === undefined && (!burst || now - kind.writtenAt >= AGGREGATE_WINDOW_MS))) {
        kinds.set(key, { writtenAt: now, held: undefined })
        writer.add(event)
      } else if (kind.held === undefined) {
        kind.held = { event, count: 1, firstAt: now }
      } else {
        // The latest message (its token and sources) speaks for the aggregate.
        kind.held = { event, count: kind.held.count + 1, firstAt: kind.held.firstAt }
      }
    },
    warn: async (r, reason, message) => {
      if (!o.dryRun) await record({ release: r, type: 'Warning', reason, message })
    },
    tick,
    drain: async () => {
      const now = o.now()
      for (const kind of kinds.values()) release(kind, now)
      await writer.drain()
    },
  }
}
