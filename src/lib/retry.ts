// Bounded retries around network calls only. Delays are injectable so tests run at zero.

import { TransientError } from './errors.ts'

export interface RetryPolicy {
  readonly attempts: number
  readonly minDelayMs: number
  readonly maxDelayMs: number
  /** Waits; tests pass one that returns at once. */
  readonly sleep: (ms: number) => Promise<void>
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, minDelayMs: 200, maxDelayMs: 5_000, sleep }

/**
 * Runs `fn` until it succeeds, throws a non-transient error, or the attempts run out.
 * A TransientError's `retryAfterMs` (from Retry-After) wins over the backoff, capped at maxDelayMs.
 */
export async function withRetry<T>(fn: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (error) {
      if (!(error instanceof TransientError) || attempt >= policy.attempts) throw error
      const backoff = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** (attempt - 1))
      const jitter = backoff * 0.2 * Math.random()
      const delay = error.retryAfterMs === undefined ? backoff + jitter : Math.min(policy.maxDelayMs, error.retryAfterMs)
      await policy.sleep(delay)
    }
  }
}
