// The GitHub report of a trigger run, wired from the settings and the run's environment: the
// action and the CLI both start it before the cluster is touched and finish it with the
// verdict. No token, no repository or a fork's pull request: nothing is written.

import type { GitHubEventLike } from '../github/event.ts'
import { createGitHubClient } from '../github/client.ts'
import { createGitHubReporter, type GitHubReporter, type Verdict } from '../github/reporter.ts'
import type { Logger } from '../engine/ports.ts'
import type { TriggerReport } from '../engine/result.ts'
import { errorVerdict, triggerVerdict } from '../modes/trigger/verdict.ts'
import type { Settings } from '../settings.ts'

type Env = Readonly<Record<string, string | undefined>>

export interface GitHubRunScope {
  readonly env: Env
  readonly event: GitHubEventLike
  /** The commit the run is about (GITHUB_SHA, or the CLI's head). */
  readonly sha: string
  readonly runUrl: string | undefined
  /** Why the run must not touch a cluster (the entry's pull-request verdict); undefined: it may. */
  readonly refused: string | undefined
  readonly log: Logger
  readonly sleep: (ms: number) => Promise<void>
  readonly now: () => number
}

export interface GitHubRun {
  /** Marks the check and the deployment in progress; returns the pull request behind the commit when flux-attribution wants it. */
  start(): Promise<{ readonly changeRequest?: number }>
  finish(report: TriggerReport): Promise<void>
  /** A verdict rendered elsewhere (the fleet's, over every cluster). */
  finishWith(verdict: Verdict): Promise<void>
  /** The run ended without a report (no cluster, bad input): the check says why. */
  fail(message: string): Promise<void>
}

const NOTHING: GitHubRun = { start: async () => ({}), finish: async () => undefined, finishWith: async () => undefined, fail: async () => undefined }

export function githubRunOf(settings: Settings, scope: GitHubRunScope): GitHubRun {
  const wanted = settings.githubReport.size > 0 || settings.deploymentEnvironment !== undefined
  if (!wanted) return NOTHING
  if (settings.githubToken === undefined) {
    scope.log.info('GitHub report: no github-token, nothing written to GitHub.')
    return NOTHING
  }
  const repository = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(scope.env['GITHUB_REPOSITORY'] ?? '')
  if (repository === null) {
    scope.log.warning('GitHub report: GITHUB_REPOSITORY is not set as owner/name; nothing written to GitHub.')
    return NOTHING
  }
  const pr = scope.event.pull_request
  const client = createGitHubClient({
    token: settings.githubToken,
    ...(scope.env['GITHUB_API_URL'] ? { baseUrl: scope.env['GITHUB_API_URL'] } : {}),
    sleep: scope.sleep,
    warn: (m) => scope.log.warning(m),
  })
  const reporter: GitHubReporter = createGitHubReporter(
    {
      owner: repository[1] ?? '',
      repo: repository[2] ?? '',
      // A pull request's check belongs on its head commit, where the pull request shows it.
      sha: pr?.head.sha ?? settings.head ?? scope.sha,
      checkName: settings.checkName,
      runUrl: scope.runUrl,
      pullRequest: pr?.number,
      // Unknown origin counts as a fork, as for cluster writes.
      fromFork: pr !== undefined && pr.fromFork,
      checks: settings.githubReport.has('check'),
      comment: settings.githubReport.has('comment'),
      // A plan-only run deploys nothing, so it records no deployment.
      deploymentEnvironment: scope.refused === undefined ? settings.deploymentEnvironment : undefined,
    },
    { client, now: scope.now, log: scope.log },
  )
  return {
    start: async () => {
      await reporter.start()
      const changeRequest = settings.fluxAttribution ? await reporter.pullRequest() : undefined
      return changeRequest === undefined ? {} : { changeRequest }
    },
    finish: (report) => reporter.finish(triggerVerdict(report, { failOn: settings.failOn, runUrl: scope.runUrl })),
    finishWith: (verdict) => reporter.finish(verdict),
    fail: (message) => reporter.finish(errorVerdict(message, scope.runUrl)),
  }
}
