// Watch mode's Events: a trigger's Event is written beside the patches; an Event that cannot
// be written is a warning in the log; a Warning on a dry run is not written.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import type { ReleaseEvent } from '../../../../src/kube/cluster.ts'
import { BURST_PER_SECOND, createWatchEvents } from '../../../../src/modes/watch/events.ts'
import { createEventLog } from '../../../../src/modes/watch/log.ts'
import { createWatchMetrics } from '../../../../src/modes/watch/metrics.ts'

const release = toHelmRelease({ metadata: { namespace: 'apps', name: 'app' }, spec: {} })

const clock = { now: 0 }

function setup(dryRun: boolean, fail: boolean) {
  clock.now = 0
  const written: string[] = []
  const lines: string[] = []
  const metrics = createWatchMetrics({ queueDepth: () => 0, lastSync: () => 0, sources: () => 0, releases: () => 0, leader: () => 1, ready: () => 1 }, 0)
  const events = createWatchEvents({
    cluster: {
      recordEvent: async (event: ReleaseEvent) => {
        if (fail) throw new Error('events is forbidden')
        written.push(`${event.type}:${event.reason}${event.count === undefined ? '' : ` x${event.count} since ${event.firstAt}`}`)
      },
    },
    log: createEventLog('text', { write: (_l, line) => void lines.push(line) }),
    metrics,
    maxConcurrency: 4,
    dryRun,
    now: () => clock.now,
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

  /** A burst: BURST_PER_SECOND Events on releases of their own within a second, written at once. */
  const burst = (t: ReturnType<typeof setup>): void => {
    for (let i = 0; i < BURST_PER_SECOND; i++) {
      t.events.add({
        release: toHelmRelease({ metadata: { namespace: 'burst', name: `r${i}` }, spec: {} }),
        type: 'Normal',
        reason: 'ReconcileRequested',
        message: '',
      })
    }
  }

  it('writes every Event at once outside a burst', async () => {
    const t = setup(false, false)
    const event: ReleaseEvent = { release, type: 'Normal', reason: 'ReconcileRequested', message: 'm' }
    t.events.add(event)
    clock.now = 2_000
    t.events.add(event)
    clock.now = 4_000
    t.events.add(event)
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
    expect(t.written).toHaveLength(3)
  })

  it('aggregates a release’s Events within the window into one with their count under a burst, written when it ends', async () => {
    const t = setup(false, false)
    const event = (message: string): ReleaseEvent => ({ release, type: 'Normal', reason: 'ReconcileRequested', message })
    const other = toHelmRelease({ metadata: { namespace: 'apps', name: 'other' }, spec: {} })
    t.events.add(event('first')) // written at once
    clock.now = 2_000
    burst(t)
    await t.events.drain()
    t.written.length = 0
    t.events.add(event('second'))
    t.events.add({ ...event('elsewhere'), release: other }) // another release: at once
    clock.now = 3_000
    t.events.add(event('third'))
    t.events.tick()
    await t.events.drain()
    expect(t.written).toEqual(['Normal:ReconcileRequested', 'Normal:ReconcileRequested x2 since 2000'])
    t.written.length = 0
    clock.now = 20_000
    t.events.tick()
    t.events.add(event('later')) // the window passed: at once again
    await t.events.drain()
    expect(t.written).toEqual(['Normal:ReconcileRequested'])
  })

  it('writes held Events when their window ends', async () => {
    const t = setup(false, false)
    const event: ReleaseEvent = { release, type: 'Normal', reason: 'ReconcileRequested', message: 'm' }
    t.events.add(event)
    clock.now = 1_000
    burst(t)
    await t.events.drain()
    t.written.length = 0
    t.events.add(event)
    t.events.tick()
    await new Promise((resolve) => setImmediate(resolve))
    expect(t.written).toHaveLength(0)
    clock.now = 10_000
    t.events.tick()
    await new Promise((resolve) => setImmediate(resolve))
    expect(t.written).toEqual(['Normal:ReconcileRequested'])
  })
})
