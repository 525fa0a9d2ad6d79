// Bounded concurrency for API calls: at most `limit` in flight, results in input order.

export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  async function worker(): Promise<void> {
    while (next < items.length) {
      const index = next++
      // Index is in range by the loop condition; the item exists.
      results[index] = await fn(items[index] as T, index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker))
  return results
}

/** Runs the functions it is given at most `limit` at a time, across all callers (a semaphore). */
export function limiter(limit: number): <R>(fn: () => Promise<R>) => Promise<R> {
  let running = 0
  const waiting: (() => void)[] = []
  return async (fn) => {
    if (running >= Math.max(1, limit)) await new Promise<void>((resolve) => waiting.push(resolve))
    else running += 1
    try {
      return await fn()
    } finally {
      const next = waiting.shift()
      if (next === undefined) running -= 1
      else next()
    }
  }
}
