// Who may touch a cluster: the pull-request policy. Decided once, by the entry, from the
// event payload (event.ts); every mode then reads the verdict instead of asking again.

import { PULL_REQUEST_EVENTS } from '../core/pull-request.ts'
import type { GitHubEventLike } from './event.ts'

/**
 * Why this run must not touch a cluster, or undefined when it may. A pull request is plan
 * only unless allowed; one whose head repository is not provably the base one (a fork, a
 * deleted repository, a payload without it) never is, whatever the inputs.
 */
export function clusterRefused(eventName: string, event: GitHubEventLike, allowPullRequests: boolean): string | undefined {
  // The payload, not the event name, says who started the run: workflow_run and issue_comment carry a pull request's content too.
  const started = event.startedBy
  if (started !== undefined && started.fromFork)
    return `${started.what} from a fork (or of unknown origin): plan only, whatever the inputs; a fork never gets cluster writes`
  if (!PULL_REQUEST_EVENTS.has(eventName) && event.pull_request === undefined && started === undefined) return undefined
  if (started === undefined && event.pull_request?.fromFork !== false)
    return `${eventName} event from a fork (or of unknown origin): plan only, whatever the inputs; a fork never gets cluster writes`
  if (!allowPullRequests) return `${eventName} event: plan only (set allow-pull-requests: true to trigger from pull requests)`
  return undefined
}
