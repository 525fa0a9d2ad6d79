// Watch mode's Kubernetes Events: a trigger's Normal Event queued beside the patches (see
// event-writer.ts), a deleted source's Warning written at once. An Event that cannot be
// written is a warning in the log, never a failed trigger; a dropped one is counted and said
// once per burst.

import { messageOf } from '../../lib/errors.ts'
import { releaseKey } from '../../core/model.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import type { ClusterClient, ReleaseEvent } from '../../kube/cluster.ts'
import { EventWriter } from './event-writer.ts'
import type { EventLog } from './log.ts'
import type { WatchMetrics } from './metrics.ts'

/** Events waiting to be written beyond which new ones are dropped (a burst; each ~1 KB). */
export const EVENTS_WAITING_LIMIT = 10_000

export interface WatchEvents {
  /** Queues a trigger's Event. */
  add(event: ReleaseEvent): void
  /** Writes a Warning Event on the release now (nothing on a dry run). */
  warn(release: HelmRelease, reason: string, message: string): Promise<void>
  drain(): Promise<void>
}

export interface WatchEventsOptions {
  readonly cluster: Pick<ClusterClient, 'recordEvent'>
  readonly log: EventLog
  readonly metrics: Pick<WatchMetrics, 'eventsDropped'>
  readonly maxConcurrency: number
  readonly dryRun: boolean
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
    concurrency: Math.max(1, Math.ceil(o.maxConcurrency / 2)),
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
  return {
    add: (event) => writer.add(event),
    warn: async (release, reason, message) => {
      if (!o.dryRun) await record({ release, type: 'Warning', reason, message })
    },
    drain: () => writer.drain(),
  }
}
