// Per-release debounce with bounded concurrency. A key becomes due `debounceMs` after its
// last event (several sources changing together give one run), but never later than
// `maxDelayMs` after its first pending event, so a source edited in a loop cannot starve its
// releases. A key is never processed twice at once: an event during its run queues one more
// run after it. Timers are injected so tests drive time by hand.

export interface Timers {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/**
 * A zero delay (`--debounce 0`, an immediate run) goes on the next turn of the event loop
 * (setImmediate), not through setTimeout's 1 ms floor: in an idle process that timer cost
 * 1.5–2 ms between a change and its patch (BENCHMARKS.md §4).
 */
export const systemTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms): SystemTimer => (ms > 0 ? { timeout: setTimeout(fn, ms) } : { immediate: setImmediate(fn) }),
  clearTimeout: (handle) => {
    if (!isSystemTimer(handle)) return
    if ('timeout' in handle) clearTimeout(handle.timeout)
    else clearImmediate(handle.immediate)
  },
}

type SystemTimer = { readonly timeout: NodeJS.Timeout } | { readonly immediate: NodeJS.Immediate }

function isSystemTimer(handle: unknown): handle is SystemTimer {
  return typeof handle === 'object' && handle !== null && ('timeout' in handle || 'immediate' in handle)
}

export interface QueueOptions<K> {
  readonly debounceMs: number
  readonly maxDelayMs: number
  readonly concurrency: number
  readonly timers: Timers
  /** `firstEventAt`: when the oldest event this run covers arrived (undefined for a resync). */
  readonly process: (key: K, firstEventAt: number | undefined) => Promise<void>
  /** Called after every change of depth (for the gauge). */
  readonly onDepth?: (depth: number) => void
}

interface Entry {
  /** Oldest unprocessed event; undefined when only resyncs asked. */
  firstEventAt: number | undefined
  /** When the oldest pending request arrived (bounds the debounce). */
  since: number
  timer: unknown
  due: boolean
}

export class DebounceQueue<K> {
  private readonly options: QueueOptions<K>
  private readonly pending = new Map<K, Entry>()
  private readonly ready: K[] = []
  private readonly running = new Map<K, Promise<void>>()
  private readonly again = new Map<K, Entry>()
  private stopped = false
  private paused = false

  constructor(options: QueueOptions<K>) {
    this.options = options
  }

  /** Waiting for their debounce or a free slot, plus running. */
  get depth(): number {
    return this.pending.size + this.again.size + this.running.size
  }

  get inFlight(): number {
    return this.running.size
  }

  /** A change concerning `key` arrived at `eventAt` (undefined: a resync, not an event). */
  add(key: K, eventAt: number | undefined, options: { immediate?: boolean } = {}): void {
    if (this.stopped) return
    const now = this.options.timers.now()
    if (this.running.has(key)) {
      const later = this.again.get(key)
      this.again.set(key, { firstEventAt: earliest(later?.firstEventAt, eventAt), since: later?.since ?? now, timer: undefined, due: false })
      this.depthChanged()
      return
    }
    const entry = this.pending.get(key) ?? { firstEventAt: undefined, since: now, timer: undefined, due: false }
    entry.firstEventAt = earliest(entry.firstEventAt, eventAt)
    this.pending.set(key, entry)
    if (!entry.due) this.arm(key, entry, options.immediate === true ? 0 : this.options.debounceMs)
    this.depthChanged()
  }

  /** Stop starting runs (leadership lost): pending keys are dropped, running ones finish. */
  pause(): void {
    this.paused = true
    for (const entry of this.pending.values()) this.options.timers.clearTimeout(entry.timer)
    this.pending.clear()
    this.again.clear()
    this.ready.length = 0
    this.depthChanged()
  }

  resume(): void {
    this.paused = false
    this.pump()
  }

  get isPaused(): boolean {
    return this.paused
  }

  /** No new runs ever; resolves when the running ones finished. */
  async drain(): Promise<void> {
    this.stopped = true
    this.pause()
    await Promise.allSettled([...this.running.values()])
  }

  private arm(key: K, entry: Entry, delayMs: number): void {
    this.options.timers.clearTimeout(entry.timer)
    const now = this.options.timers.now()
    const at = Math.min(now + delayMs, entry.since + this.options.maxDelayMs)
    entry.timer = this.options.timers.setTimeout(() => this.becomeDue(key), Math.max(0, at - now))
  }

  private becomeDue(key: K): void {
    const entry = this.pending.get(key)
    if (entry === undefined || entry.due) return
    entry.due = true
    this.ready.push(key)
    this.pump()
  }

  private pump(): void {
    while (!this.paused && !this.stopped && this.running.size < this.options.concurrency && this.ready.length > 0) {
      const key = this.ready.shift() as K
      const entry = this.pending.get(key)
      if (entry === undefined) continue
      this.pending.delete(key)
      const run = this.options
        .process(key, entry.firstEventAt)
        .catch(() => undefined)
        .finally(() => {
          this.running.delete(key)
          const later = this.again.get(key)
          this.again.delete(key)
          if (later !== undefined && !this.stopped && !this.paused) {
            this.pending.set(key, later)
            this.arm(key, later, this.options.debounceMs)
          }
          this.depthChanged()
          this.pump()
        })
      this.running.set(key, run)
    }
  }

  private depthChanged(): void {
    this.options.onDepth?.(this.depth)
  }
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b
  if (b === undefined) return a
  return Math.min(a, b)
}
