// The ports every engine and mode is written against: time, a log and where Events go. Tests
// pass fakes.

import { releaseKey } from '../core/model.ts'
import type { ClusterClient, ReleaseEvent } from '../kube/cluster.ts'
import { messageOf } from '../lib/errors.ts'
import { sleep } from '../lib/retry.ts'

export interface Clock {
  now(): number
  sleep(ms: number): Promise<void>
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep,
}

export interface Logger {
  info(message: string): void
  warning(message: string): void
}

/** Where the Events beside a write go: written now, queued for after a fan-out, or handed to a writer. */
export interface EventSink {
  record(event: ReleaseEvent): Promise<void>
}

/**
 * Events written one by one as they come. The write itself succeeded: an Event we may not
 * create is worth a warning, not a failure.
 */
export function eventRecorder(cluster: Pick<ClusterClient, 'recordEvent'>, log: Logger): EventSink {
  return {
    async record(event) {
      try {
        await cluster.recordEvent(event, { dryRun: false })
      } catch (error) {
        log.warning(`${releaseKey(event.release)}: could not record the ${event.type === 'Warning' ? 'Warning ' : ''}Event: ${messageOf(error)}`)
      }
    },
  }
}
