// Bounded retries around network calls only. Delays are injectable so tests run at zero.

import { TransientError } from './errors.ts'

export interface RetryPolicy {
  readonly attempts: number
  readonly minDelayMs: number
  readonly maxDelayMs: number
  /** Waits; tests pass one that returns at once. */
  readonly sleep: (ms: number) => Promise<void>
  /** Shared by the calls to one server: lets them outlast its outage. */
  readonly patience?: Patience
}

/**
 * A server that answered and then stops being reachable is restarting (an upgrade, a failover),
 * not misconfigured: a call that runs out of attempts on an unreachable error goes on retrying,
 * backing off to the longest delay, until the server answers again or the outage is older than
 * `patienceMs`. A server that never answered gets no patience: a wrong address fails after the
 * attempts.
 */
export interface Patience {
  /** A call got its answer. */
  answered(): void
  /** A call ran out of attempts on this error: may it go on? */
  persists(error: TransientError): boolean
}

export function outagePatience(patienceMs: number, now: () => number = Date.now): Patience {
  let answeredOnce = false
  // When the first call ran out of attempts in this outage; undefined while the server answers.
  let downSince: number | undefined
  return {
    answered: () => {
      answeredOnce = true
      downSince = undefined
    },
    persists: (error) => {
      if (!answeredOnce || !error.unreachable) return false
      downSince ??= now()
      return now() - downSince < patienceMs
    },
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, minDelayMs: 200, maxDelayMs: 5_000, sleep }

/**
 * Runs `fn` until it succeeds, throws a non-transient error, or the attempts (and the policy's
 * patience with an outage) run out.
 * A TransientError's `retryAfterMs` (from Retry-After) wins over the backoff, capped at maxDelayMs.
 */
export async function withRetry<T>(fn: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      const value = await fn()
      policy.patience?.answered()
      return value
    } catch (error) {
      if (!(error instanceof TransientError)) throw error
      if (attempt >= policy.attempts && !(policy.patience?.persists(error) ?? false)) throw error
      const backoff = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** Math.min(attempt - 1, 30))
      const jitter = backoff * 0.2 * Math.random()
      const delay = error.retryAfterMs === undefined ? backoff + jitter : Math.min(policy.maxDelayMs, error.retryAfterMs)
      await policy.sleep(delay)
    }
  }
}
