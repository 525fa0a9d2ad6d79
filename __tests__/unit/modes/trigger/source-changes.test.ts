// wait-for-apply's watch on a source: a change wakes the wait at once; without a watch (or
// with one refused) the wait polls as before.

import { describe, expect, it } from 'vitest'
import type { LiveSource, SourceRef } from '../../../../src/core/model.ts'
import type { ClusterClient } from '../../../../src/kube/cluster.ts'
import { sourceChanges } from '../../../../src/modes/trigger/source-changes.ts'

const ref: SourceRef = { kind: 'ConfigMap', namespace: 'apps', name: 'values' }
const live = (rv: string, v: string): LiveSource => ({ kind: 'ConfigMap', data: { v }, binaryData: {}, labels: {}, resourceVersion: rv })

/** A watch the test drives: `send` delivers a change, `fail` refuses it, `end` closes it as the server would. */
function fakeWatch() {
  const calls: { rv: string; signal: AbortSignal }[] = []
  let send: (l: LiveSource | undefined) => void = () => undefined
  let settle: { resolve: () => void; reject: (e: unknown) => void } | undefined
  const cluster: Pick<ClusterClient, 'watchSource'> = {
    watchSource: (r, rv, onSource, signal) => {
      calls.push({ rv, signal })
      send = onSource
      return new Promise<void>((resolve, reject) => {
        settle = { resolve, reject }
        signal.addEventListener('abort', () => resolve(), { once: true })
      })
    },
  }
  return { cluster, calls, send: (l: LiveSource | undefined) => send(l), fail: (e: unknown) => settle?.reject(e), end: () => settle?.resolve() }
}

const never = (): Promise<void> => new Promise(() => undefined)

describe('sourceChanges', () => {
  it('polls with the given sleep when the client cannot watch', async () => {
    const changes = sourceChanges({}, ref, '5')
    expect(changes.watching).toBe(false)
    const slept: number[] = []
    expect(await changes.next(200, async (ms) => void slept.push(ms))).toBeUndefined()
    expect(slept).toEqual([200])
  })

  it('wakes the wait with the change, from the first read’s resourceVersion', async () => {
    const w = fakeWatch()
    const changes = sourceChanges(w.cluster, ref, '5')
    expect(changes.watching).toBe(true)
    const waiting = changes.next(60_000, never)
    w.send(live('6', 'new'))
    expect(await waiting).toEqual({ live: live('6', 'new') })
    expect(w.calls.map((c) => c.rv)).toEqual(['5'])
    w.send(undefined) // deleted, seen before the next call
    expect(await changes.next(60_000, never)).toEqual({ live: undefined })
    changes.stop()
    expect(w.calls[0]?.signal.aborted).toBe(true)
  })

  it('reopens a watch the server ended, from the last resourceVersion seen', async () => {
    const w = fakeWatch()
    const changes = sourceChanges(w.cluster, ref, '5')
    w.send(live('7', 'x'))
    await changes.next(60_000, never)
    w.end()
    await new Promise((resolve) => setImmediate(resolve))
    expect(w.calls.map((c) => c.rv)).toEqual(['5', '7'])
    changes.stop()
  })

  it('falls back to the poll when the watch is refused, ending the wait in progress', async () => {
    const w = fakeWatch()
    const changes = sourceChanges(w.cluster, ref, '5')
    const waiting = changes.next(60_000, never)
    w.fail(new Error('secrets is forbidden: cannot watch'))
    expect(await waiting).toBeUndefined()
    expect(changes.watching).toBe(false)
  })
})
