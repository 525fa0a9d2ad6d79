// Watch mode's Events: a trigger's Event is written beside the patches; an Event that cannot
// be written is a warning in the log; a Warning on a dry run is not written.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import type { ReleaseEvent } from '../../../../src/kube/cluster.ts'
import { createWatchEvents } from '../../../../src/modes/watch/events.ts'
import { createEventLog } from '../../../../src/modes/watch/log.ts'
import { createWatchMetrics } from '../../../../src/modes/watch/metrics.ts'

const release = toHelmRelease({ metadata: { namespace: 'apps', name: 'app' }, spec: {} })

function setup(dryRun: boolean, fail: boolean) {
  const written: string[] = []
  const lines: string[] = []
  const metrics = createWatchMetrics({ queueDepth: () => 0, lastSync: () => 0, sources: () => 0, releases: () => 0, leader: () => 1, ready: () => 1 }, 0)
  const events = createWatchEvents({
    cluster: {
      recordEvent: async (event: ReleaseEvent) => {
        if (fail) throw new Error('events is forbidden')
        written.push(`${event.type}:${event.reason}`)
      },
    },
    log: createEventLog('text', { write: (_l, line) => void lines.push(line) }),
    metrics,
    maxConcurrency: 4,
    dryRun,
  })
  return { events, written, lines }
}

describe('createWatchEvents', () => {
  it('writes queued Events and Warnings', async () => {
    const t = setup(false, false)
    t.events.add({ release, type: 'Normal', reason: 'ReconcileRequested', message: 'm' })
    await t.events.warn(release, 'SourceDeleted', 'gone')
    await t.events.drain()
    expect(t.written.sort()).toEqual(['Normal:ReconcileRequested', 'Warning:SourceDeleted'])
  })

  it('writes no Warning on a dry run', async () => {
    const t = setup(true, false)
    await t.events.warn(release, 'SourceDeleted', 'gone')
    expect(t.written).toEqual([])
  })

  it('says an Event it could not write as a warning, and goes on', async () => {
    const t = setup(false, true)
    t.events.add({ release, type: 'Normal', reason: 'ReconcileRequested', message: 'm' })
    await t.events.drain()
    expect(t.lines).toEqual(['warning: could not record the Event release=apps/app error="events is forbidden"'])
  })
})
