// Writes a run's verdict where developers look: a check run on the commit (a commit status
// when checks cannot be written), one sticky comment on the pull request behind the commit,
// and optionally a GitHub Deployment. Each write needs one permission; a refused or failed
// write is a warning naming what to add, never a failed deploy. Nothing here decides the
// verdict: the mode renders it, this file only delivers it. The sticky comment is only ever one
// this token's own identity wrote: anyone can post a comment carrying the public marker.

import { messageOf } from '../lib/errors.ts'
import type { GitHubClient } from './client.ts'

export type CheckConclusion = 'success' | 'failure' | 'neutral' | 'cancelled' | 'skipped' | 'timed_out' | 'action_required'

export interface CheckAnnotation {
  /** Repository-relative path. */
  readonly path: string
  readonly startLine: number
  readonly level: 'notice' | 'warning' | 'failure'
  readonly title: string
  readonly message: string
}

/** A finished run, rendered: what the check, the commit status, the comment and the deployment say. */
export interface Verdict {
  readonly conclusion: CheckConclusion
  /** One line, e.g. "3 upgraded, 1 failed". */
  readonly title: string
  /** Markdown: the per-release table. */
  readonly summary: string
  /** Markdown shown under the summary (plan, value changes); may be empty. */
  readonly text: string
  /** On the file and line that introduced each change; identical across re-runs of one commit. */
  readonly annotations: readonly CheckAnnotation[]
  /** Markdown body of the sticky pull-request comment (the marker is added here). */
  readonly comment: string
}

export interface GitHubScope {
  readonly owner: string
  readonly repo: string
  /** The commit the check, the status and the deployment belong to. */
  readonly sha: string
  /** Name of the check run and context of the commit status; also keys the sticky comment. */
  readonly checkName: string
  readonly runUrl: string | undefined
  /** The pull request of a pull_request event; otherwise the one behind `sha` is looked up. */
  readonly pullRequest: number | undefined
  /** A fork's pull request: nothing is written, whatever the inputs. */
  readonly fromFork: boolean
  readonly checks: boolean
  readonly comment: boolean
  /** Creates one deployment per run in this environment; undefined creates none. */
  readonly deploymentEnvironment: string | undefined
}

export interface GitHubReporter {
  /** Marks the check and the deployment in progress, before the cluster is touched. */
  start(): Promise<void>
  /** The pull request behind the commit (looked up once); undefined when there is none or it cannot be read. */
  pullRequest(): Promise<number | undefined>
  finish(verdict: Verdict): Promise<void>
}

export interface ReporterDeps {
  readonly client: GitHubClient
  readonly now: () => number
  readonly log: { info(message: string): void; warning(message: string): void }
}

/** GitHub's limits: annotations per request, characters in a check's summary/text and a comment body, a status description. */
export const LIMITS = { annotations: 50, checkText: 65_535, comment: 65_536, statusDescription: 140 } as const

/** The marker that finds our comment again; one per check name, so a matrix of clusters keeps one comment each. */
export function commentMarker(checkName: string): string {
  return `<!-- helmrelease-trigger: ${checkName.replace(/--/g, '- -')} -->`
}

type Permission = 'checks' | 'statuses' | 'pull-requests' | 'deployments'

export function createGitHubReporter(scope: GitHubScope, deps: ReporterDeps): GitHubReporter {
  if (scope.fromFork) {
    deps.log.info('GitHub report: a pull request from a fork gets nothing written (no check, comment or deployment).')
    return { start: async () => undefined, pullRequest: async () => undefined, finish: async () => undefined }
  }
  const { client, log } = deps
  const repo = { owner: scope.owner, repo: scope.repo }
  const refused = new Set<Permission>()
  const iso = (): string => new Date(deps.now()).toISOString()
  let check: { id: number; annotated: boolean } | undefined
  let deployment: number | undefined
  let started = false
  /** Who this token writes as, learnt from what it wrote: a check run's app, a status's creator. */
  let author: string | undefined
  const wroteAs = (login: string | undefined): void => {
    if (login) author ??= login
  }

  /** Runs one write; a failure becomes a warning naming the permission it needs. */
  const attempt = async <T>(permission: Permission, what: string, write: () => Promise<T>): Promise<T | undefined> => {
    if (refused.has(permission)) return undefined
    try {
      return await write()
    } catch (error) {
      const status = statusOf(error)
      if (status === 403 && !/rate limit/i.test(messageOf(error))) {
        refused.add(permission)
        log.warning(
          `GitHub report: could not ${what}: the token lacks a permission (403 ${messageOf(error)}). Add \`${permission}: write\` to the job's \`permissions:\`.`,
        )
      } else {
        log.warning(`GitHub report: could not ${what}: ${status === undefined ? '' : `${status} `}${messageOf(error)}`)
      }
      return undefined
    }
  }

  const findCheck = async (): Promise<{ id: number; annotated: boolean } | undefined> => {
    const found = await client.rest.checks.listForRef({ ...repo, ref: scope.sha, check_name: scope.checkName, filter: 'latest', per_page: 1 })
    const run = found.data.check_runs[0]
    return run === undefined ? undefined : { id: run.id, annotated: run.output.annotations_count > 0 }
  }

  const startCheck = async (): Promise<void> => {
    const output = { title: 'Running', summary: `helmrelease-trigger is running${scope.runUrl === undefined ? '' : ` ([run](${scope.runUrl}))`}.` }
    const ok = await attempt('checks', 'create the check run', async () => {
      check ??= await findCheck()
      const common = {
        ...repo,
        status: 'in_progress' as const,
        started_at: iso(),
        output,
        ...(scope.runUrl === undefined ? {} : { details_url: scope.runUrl }),
      }
      const written =
        check === undefined
          ? await client.rest.checks.create({ ...common, name: scope.checkName, head_sha: scope.sha })
          : await client.rest.checks.update({ ...common, check_run_id: check.id })
      check ??= { id: written.data.id, annotated: false }
      wroteAs(botOf(written.data.app?.slug))
      return true
    })
    if (ok === undefined) await postStatus('pending', 'running')
  }

  const finishCheck = async (verdict: Verdict): Promise<void> => {
    const annotations = verdict.annotations.map((a) => ({
      path: a.path,
      start_line: a.startLine,
      end_line: a.startLine,
      annotation_level: a.level,
      title: a.title,
      message: a.message,
    }))
    const ok = await attempt('checks', 'complete the check run', async () => {
      check ??= await findCheck()
      // GitHub appends annotations on every update: send them once per check, 50 per request.
      const batches = check?.annotated === true ? [] : chunk(annotations, LIMITS.annotations)
      const output = (batch: typeof annotations) => ({
        title: verdict.title,
        summary: clip(verdict.summary, LIMITS.checkText),
        ...(verdict.text === '' ? {} : { text: clip(verdict.text, LIMITS.checkText) }),
        ...(batch.length === 0 ? {} : { annotations: batch }),
      })
      const done = { ...repo, status: 'completed' as const, conclusion: verdict.conclusion, completed_at: iso(), output: output(batches[0] ?? []) }
      const details = scope.runUrl === undefined ? {} : { details_url: scope.runUrl }
      const written =
        check === undefined
          ? await client.rest.checks.create({ ...done, ...details, name: scope.checkName, head_sha: scope.sha })
          : await client.rest.checks.update({ ...done, ...details, check_run_id: check.id })
      check ??= { id: written.data.id, annotated: false }
      wroteAs(botOf(written.data.app?.slug))
      for (const batch of batches.slice(1)) await client.rest.checks.update({ ...repo, check_run_id: check.id, output: output(batch) })
      check = { id: check.id, annotated: check.annotated || annotations.length > 0 }
      return true
    })
    if (ok === undefined) await postStatus(statusState(verdict.conclusion), verdict.title)
  }

  /** Where checks cannot be written (a token of no GitHub App): a commit status with the same name. */
  const postStatus = async (state: 'pending' | 'success' | 'failure' | 'error', description: string): Promise<void> => {
    const written = await attempt('statuses', 'set the commit status', () =>
      client.rest.repos.createCommitStatus({
        ...repo,
        sha: scope.sha,
        state,
        context: scope.checkName,
        description: clip(description, LIMITS.statusDescription),
        ...(scope.runUrl === undefined ? {} : { target_url: scope.runUrl }),
      }),
    )
    wroteAs(written?.data.creator?.login)
  }

  let lookup: Promise<number | undefined> | undefined
  const pullRequestNumber = (): Promise<number | undefined> => (lookup ??= findPullRequest())
  const findPullRequest = async (): Promise<number | undefined> => {
    if (scope.pullRequest !== undefined) return scope.pullRequest
    const pulls = await attempt('pull-requests', 'find the pull request of the commit', () =>
      client.rest.repos.listPullRequestsAssociatedWithCommit({ ...repo, commit_sha: scope.sha, per_page: 100 }),
    )
    // GitHub lists open pull requests that merely contain the commit too, a fork's among them.
    const found = pulls?.data.find((pull) => pullOfCommit(pull, `${scope.owner}/${scope.repo}`, scope.sha))?.number
    if (pulls !== undefined && found === undefined)
      log.info(
        `GitHub report: commit ${scope.sha.slice(0, 12)} has no pull request of this repository (merged as it, or with it as its head); no comment written.`,
      )
    return found
  }

  const writeComment = async (body: string): Promise<void> => {
    const issue = await pullRequestNumber()
    if (issue === undefined) return
    const marker = commentMarker(scope.checkName)
    const text = `${marker}\n${clip(body, LIMITS.comment - marker.length - 1)}`
    await attempt('pull-requests', `write the comment on pull request #${issue}`, async () => {
      const me = await identity()
      // Every page is read: the sticky comment may be anywhere among hundreds.
      const comments = await client.paginate(client.rest.issues.listComments, { ...repo, issue_number: issue, per_page: 100 })
      const marked = comments.filter((c) => c.body?.startsWith(marker) === true)
      const mine = marked.find((c) => c.user?.login === me)
      for (const planted of marked.filter((c) => c !== mine && c.user?.login !== me))
        log.info(
          `GitHub report: comment ${planted.id} on pull request #${issue} carries this report's marker but was not written by ${me}; it is left as it is.`,
        )
      if (mine === undefined) {
        const created = await client.rest.issues.createComment({ ...repo, issue_number: issue, body: text })
        wroteAs(created.data.user?.login)
      } else if (mine.body !== text) await client.rest.issues.updateComment({ ...repo, comment_id: mine.id, body: text })
    })
  }

  /**
   * Who this token writes as: learnt from the check run or status it wrote; else a user token
   * says (GET /user); else it is an installation token that could write neither, taken to be the
   * workflow's own GITHUB_TOKEN (github-actions[bot]). Asked once per run.
   */
  let asked: Promise<string> | undefined
  const identity = (): Promise<string> =>
    (asked ??= (async () => {
      if (author !== undefined) return author
      try {
        const user = await client.rest.users.getAuthenticated()
        return user.data.login
      } catch {
        return GITHUB_ACTIONS_BOT
      }
    })())

  const startDeployment = async (environment: string): Promise<void> => {
    deployment = await attempt('deployments', `create the deployment to ${environment}`, async () => {
      const created = await client.rest.repos.createDeployment({
        ...repo,
        ref: scope.sha,
        environment,
        auto_merge: false,
        // The check this run writes is not done yet: GitHub must not wait for it (or any other).
        required_contexts: [],
        description: `helmrelease-trigger: ${scope.checkName}`,
        payload: { tool: 'helmrelease-trigger', check: scope.checkName },
      })
      if (!('id' in created.data)) throw new Error(created.data.message ?? 'GitHub created no deployment')
      return created.data.id
    })
    if (deployment !== undefined) await deploymentStatus('in_progress', 'triggering the HelmReleases')
  }

  const deploymentStatus = async (state: 'in_progress' | 'success' | 'failure' | 'error' | 'inactive', description: string): Promise<void> => {
    const id = deployment
    if (id === undefined) return
    await attempt('deployments', `set the deployment status to ${state}`, () =>
      client.rest.repos.createDeploymentStatus({
        ...repo,
        deployment_id: id,
        state,
        description: clip(description, LIMITS.statusDescription),
        ...(scope.runUrl === undefined ? {} : { log_url: scope.runUrl }),
        auto_inactive: true,
      }),
    )
  }

  return {
    async start() {
      started = true
      if (scope.checks) await startCheck()
      if (scope.deploymentEnvironment !== undefined) await startDeployment(scope.deploymentEnvironment)
    },
    pullRequest: pullRequestNumber,
    async finish(verdict) {
      if (!started && scope.deploymentEnvironment !== undefined) await startDeployment(scope.deploymentEnvironment)
      if (scope.checks) await finishCheck(verdict)
      if (scope.comment) await writeComment(verdict.comment)
      await deploymentStatus(verdict.conclusion === 'failure' ? 'failure' : 'success', verdict.title)
    },
  }
}

/** The login of the GITHUB_TOKEN every workflow gets. */
export const GITHUB_ACTIONS_BOT = 'github-actions[bot]'

/** A GitHub App's bot login: `<slug>[bot]`. */
function botOf(slug: string | undefined): string | undefined {
  return slug ? `${slug}[bot]` : undefined
}

interface PullOfCommit {
  readonly merged_at?: string | null
  readonly merge_commit_sha?: string | null
  readonly head?: { readonly sha?: string; readonly repo?: { readonly full_name?: string } | null }
  readonly base?: { readonly repo?: { readonly full_name?: string } | null }
}

/** A pull request of this repository that was merged as `sha`, or whose head is `sha` and lives here. */
export function pullOfCommit(pull: PullOfCommit, repository: string, sha: string): boolean {
  if (pull.base?.repo?.full_name !== repository) return false
  if (pull.merged_at && pull.merge_commit_sha === sha) return true
  return pull.head?.sha === sha && pull.head.repo?.full_name === repository
}

function statusState(conclusion: CheckConclusion): 'success' | 'failure' | 'error' {
  return conclusion === 'failure' || conclusion === 'timed_out' || conclusion === 'action_required'
    ? 'failure'
    : conclusion === 'cancelled'
      ? 'error'
      : 'success'
}

function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'status' in error && typeof error.status === 'number' ? error.status : undefined
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** Cuts text that GitHub would refuse as too long, saying so. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text
  if (max < 200) return `${text.slice(0, max - 1)}…`
  const note = '\n\n… (cut: too long for GitHub; the job summary has everything)'
  return `${text.slice(0, Math.max(max - note.length, 0))}${note}`
}
