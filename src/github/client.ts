// The GitHub REST client: @actions/github's Octokit (proxy-aware, GITHUB_TOKEN or any token)
// with the retry and throttling plugins. Waits for rate limits go through the injected clock,
// so a test counts them instead of sleeping.

import { GitHub, getOctokitOptions } from '@actions/github/lib/utils'
import { retry } from '@octokit/plugin-retry'
import { throttling } from '@octokit/plugin-throttling'
import Bottleneck from 'bottleneck/light.js'

export type GitHubClient = InstanceType<typeof GitHub>

export interface GitHubClientOptions {
  readonly token: string
  /** GITHUB_API_URL; https://api.github.com by default. */
  readonly baseUrl?: string
  /** Where rate-limit waits happen: the system clock in a run, a counting one in tests. */
  readonly sleep: (ms: number) => Promise<void>
  readonly warn: (message: string) => void
  /** Retries of a request GitHub rate-limited (primary or secondary) before giving up. */
  readonly rateLimitRetries?: number
  /** Base of the retry plugin's backoff for 5xx answers (retry n waits n² × this); 0 in tests. */
  readonly retryBaseMs?: number
  /**
   * Least time between two writes (GitHub asks for a second, three before a comment: the
   * plugin's defaults); tests set 0, since the loopback API has no secondary limits to avoid.
   */
  readonly writeSpacingMs?: number
}

const Client = GitHub.plugin(retry, throttling)

export function createGitHubClient(options: GitHubClientOptions): GitHubClient {
  const retries = options.rateLimitRetries ?? 2
  // Honour Retry-After ourselves (through `sleep`) and tell the plugin to add no wait of its own.
  const onLimit =
    (kind: string) =>
    async (retryAfter: number, request: { method: string; url: string }, _octokit: unknown, retryCount: number): Promise<boolean> => {
      if (retryCount >= retries) {
        options.warn(`GitHub ${kind} rate limit on ${request.method} ${request.url}: gave up after ${retryCount + 1} attempts.`)
        return false
      }
      await options.sleep(retryAfter * 1000)
      return true
    }
  return new Client(
    getOctokitOptions(options.token, {
      ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
      // 429 and 403 rate limits belong to the throttling plugin: the retry plugin must not retry them too.
      retry: { retryAfterBaseValue: options.retryBaseMs ?? 1000, doNotRetry: [400, 401, 403, 404, 410, 422, 429, 451] },
      throttle: {
        retryAfterBaseValue: 0,
        onRateLimit: onLimit('primary'),
        onSecondaryRateLimit: onLimit('secondary'),
        ...(options.writeSpacingMs === undefined ? {} : spacing(options.writeSpacingMs)),
      },
      // Octokit's own console output would print request details; our warnings say what matters.
      log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    }),
  )
}

function spacing(minTime: number): { write: Bottleneck.Group; notifications: Bottleneck.Group } {
  return { write: new Bottleneck.Group({ maxConcurrent: 1, minTime }), notifications: new Bottleneck.Group({ maxConcurrent: 1, minTime }) }
}
