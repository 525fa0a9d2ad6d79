// The per-release debounce queue, driven by a hand-cranked clock: coalescing, the max delay,
// one run per key at a time, the concurrency bound, pause and drain.
import { describe, expect, it } from 'vitest'
import { DebounceQueue, systemTimers, type Timers } from '../../../../src/modes/watch/queue.ts'

/** Timers that fire only when the test advances time. */
class ManualTimers implements Timers {
  private current = 0
  private next = 1
  private readonly due = new Map<number, { at: number; fn: () => void }>()
  now(): number {
    return this.current
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++
    this.due.set(id, { at: this.current + ms, fn })
    return id
  }
  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number)
  }
  /** Moves time forward, firing what falls due in order, letting promises settle in between. */
  async advance(ms: number): Promise<void> {
    const end = this.current + ms
    for (;;) {
      const [id, first] = [...this.due.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0] ?? []
      if (id === undefined || first === undefined) break
      this.due.delete(id)
      this.current = first.at
      first.fn()
      await settle()
    }
    this.current = end
    await settle()
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve()
}

interface Run {
  readonly key: string
  readonly firstEventAt: number | undefined
  readonly at: number
  finish: () => void
}

function setup(options: { debounceMs?: number; maxDelayMs?: number; concurrency?: number; hold?: boolean } = {}) {
  const timers = new ManualTimers()
  const runs: Run[] = []
  const depths: number[] = []
  const queue = new DebounceQueue<string>({
    debounceMs: options.debounceMs ?? 2_000,
    maxDelayMs: options.maxDelayMs ?? 10_000,
    concurrency: options.concurrency ?? 10,
    timers,
    onDepth: (d) => depths.push(d),
    process: (key, firstEventAt) =>
      new Promise<void>((resolve) => {
        const run: Run = { key, firstEventAt, at: timers.now(), finish: resolve }
        runs.push(run)
        if (options.hold !== true) resolve()
      }),
  })
  return { timers, runs, queue, depths }
}

describe('DebounceQueue', () => {
  it('runs a key once, debounce after its last event, covering the first event time', async () => {
    const { timers, runs, queue } = setup()
    queue.add('ns/app', 0)
    await timers.advance(1_000)
    queue.add('ns/app', 1_000)
    await timers.advance(1_999)
    expect(runs).toEqual([])
    await timers.advance(1)
    expect(runs.map((r) => [r.key, r.firstEventAt, r.at])).toEqual([['ns/app', 0, 3_000]])
    await timers.advance(10_000)
    expect(runs).toHaveLength(1)
  })

  it('never delays a key longer than maxDelay after its first event, however often it changes', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 2_000, maxDelayMs: 5_000 })
    for (let t = 0; t <= 8_000; t += 1_000) {
      queue.add('ns/app', t)
      await timers.advance(1_000)
    }
    expect(runs[0]?.at).toBe(5_000)
    expect(runs[0]?.firstEventAt).toBe(0)
  })

  it('keeps keys apart: two releases changed together run independently', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 100 })
    queue.add('ns/a', 0)
    queue.add('ns/b', 0)
    queue.add('ns/a', 0)
    await timers.advance(100)
    expect(runs.map((r) => r.key).sort()).toEqual(['ns/a', 'ns/b'])
  })

  it('runs an immediate add without waiting for the debounce', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 2_000 })
    queue.add('ns/app', undefined, { immediate: true })
    await timers.advance(0)
    expect(runs.map((r) => [r.key, r.firstEventAt])).toEqual([['ns/app', undefined]])
  })

  it('never runs one key twice at once: an event during a run queues exactly one more run after it', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 100, hold: true })
    queue.add('ns/app', 0)
    await timers.advance(100)
    expect(runs).toHaveLength(1)
    queue.add('ns/app', 150)
    queue.add('ns/app', 160)
    await timers.advance(1_000)
    expect(runs).toHaveLength(1)
    expect(queue.depth).toBe(2)
    runs[0]?.finish()
    await settle()
    await timers.advance(100)
    expect(runs).toHaveLength(2)
    expect(runs[1]?.firstEventAt).toBe(150)
  })

  it('bounds the runs in flight by the concurrency', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 0, concurrency: 2, hold: true })
    for (const k of ['a', 'b', 'c', 'd']) queue.add(`ns/${k}`, 0)
    await timers.advance(0)
    expect(runs).toHaveLength(2)
    expect(queue.inFlight).toBe(2)
    runs[0]?.finish()
    await settle()
    expect(runs).toHaveLength(3)
    runs[1]?.finish()
    runs[2]?.finish()
    await settle()
    expect(runs).toHaveLength(4)
  })

  it('reports its depth: waiting, queued again and running', async () => {
    const { timers, queue, depths } = setup({ debounceMs: 100, hold: true })
    queue.add('ns/a', 0)
    queue.add('ns/b', 0)
    expect(queue.depth).toBe(2)
    await timers.advance(100)
    expect(queue.depth).toBe(2) // both running
    expect(depths.at(-1)).toBe(2)
  })

  it('drops waiting keys on pause and starts nothing until resumed', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 100 })
    queue.add('ns/a', 0)
    queue.pause()
    await timers.advance(1_000)
    expect(runs).toEqual([])
    expect(queue.depth).toBe(0)
    queue.resume()
    queue.add('ns/a', 1_000)
    await timers.advance(100)
    expect(runs).toHaveLength(1)
  })

  it('drain waits for the running runs and accepts nothing more', async () => {
    const { timers, runs, queue } = setup({ debounceMs: 0, hold: true })
    queue.add('ns/a', 0)
    await timers.advance(0)
    let drained = false
    const draining = queue.drain().then(() => (drained = true))
    queue.add('ns/b', 0)
    await timers.advance(1_000)
    expect(drained).toBe(false)
    runs[0]?.finish()
    await draining
    expect(runs.map((r) => r.key)).toEqual(['ns/a'])
  })

  it('survives a failing run and goes on with the next', async () => {
    const timers = new ManualTimers()
    const seen: string[] = []
    const queue = new DebounceQueue<string>({
      debounceMs: 0,
      maxDelayMs: 1_000,
      concurrency: 1,
      timers,
      process: async (key) => {
        seen.push(key)
        if (key === 'ns/bad') throw new Error('boom')
      },
    })
    queue.add('ns/bad', 0)
    queue.add('ns/good', 0)
    await timers.advance(0)
    await settle()
    expect(seen).toEqual(['ns/bad', 'ns/good'])
  })
})

describe('the system timers', () => {
  it('runs a zero delay on the next turn of the event loop, and can cancel it', async () => {
    const order: string[] = []
    systemTimers.setTimeout(() => order.push('zero delay'), 0)
    const cancelled = systemTimers.setTimeout(() => order.push('cancelled'), 0)
    systemTimers.clearTimeout(cancelled)
    // Immediates run in the order queued: once this one ran, the two above have had their turn.
    await new Promise((resolve) => setImmediate(resolve))
    expect(order).toEqual(['zero delay'])
  })

  it('runs a positive delay as a timer, and can cancel it', async () => {
    const order: string[] = []
    const cancelled = systemTimers.setTimeout(() => order.push('cancelled'), 1)
    systemTimers.clearTimeout(cancelled)
    // Timers fire in the order they fall due: the cancelled one would have come first.
    await new Promise<void>((resolve) =>
      systemTimers.setTimeout(() => {
        order.push('kept')
        resolve()
      }, 2),
    )
    expect(order).toEqual(['kept'])
    // A handle that is not ours is left alone.
    expect(() => systemTimers.clearTimeout(42)).not.toThrow()
  })
})
