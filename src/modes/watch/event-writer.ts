// The Kubernetes Events of the watch mode, written beside the patches rather than in their
// queue slot: at 100 changes/s an Event written after each patch doubled the time a slot was
// held, and the patches queued behind them. Bounded twice: at most `concurrency` writes at
// once, and at most `limit` waiting; beyond that an Event is dropped (counted), so a burst of
// changes cannot grow memory without end.

export interface EventWriterOptions<E> {
  readonly concurrency: number
  readonly limit: number
  /** Writes one Event; its own errors are its to report (a rejection is ignored). */
  readonly write: (event: E) => Promise<void>
  /** One Event was dropped because `limit` were waiting. */
  readonly onDropped: (event: E) => void
}

export class EventWriter<E> {
  private readonly options: EventWriterOptions<E>
  private readonly waiting: E[] = []
  private readonly running = new Set<Promise<void>>()

  constructor(options: EventWriterOptions<E>) {
    this.options = options
  }

  /** Waiting plus being written. */
  get depth(): number {
    return this.waiting.length + this.running.size
  }

  add(event: E): void {
    if (this.waiting.length >= this.options.limit) {
      this.options.onDropped(event)
      return
    }
    this.waiting.push(event)
    this.pump()
  }

  /** Resolves when every Event added so far is written (or failed). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running])
  }

  private pump(): void {
    while (this.running.size < this.options.concurrency && this.waiting.length > 0) {
      const event = this.waiting.shift() as E
      const run: Promise<void> = this.options
        .write(event)
        .catch(() => undefined)
        .finally(() => {
          this.running.delete(run)
          this.pump()
        })
      this.running.add(run)
    }
  }
}
