// Which commits to compare, decided from the event and the inputs. Pure apart from the two
// git questions it asks, so it runs against a fake and against a real clone alike.

import { readFile } from 'node:fs/promises'
import { ConfigurationError } from '../lib/errors.ts'

/** The two questions range resolution asks of git (a GitReader answers them). */
export interface CommitLookup {
  /** Full SHA of a commit; undefined when it is not in the clone. */
  resolve(rev: string): Promise<string | undefined>
  /** First parent; undefined for a root commit or when the parent was not fetched. */
  parent(sha: string): Promise<string | undefined>
}

/** The fields of the event payload (GITHUB_EVENT_PATH) that range resolution uses. */
export interface GitHubEventLike {
  /** push: the branch tip before the push; all zeros for a new branch. */
  readonly before?: string
  /** push: the branch tip after the push; all zeros when the branch was deleted. */
  readonly after?: string
  /** push: the push deleted the branch. */
  readonly deleted?: boolean
  readonly pull_request?: {
    /** The pull request's number, when the payload has it (the GitHub report comments there). */
    readonly number?: number
    readonly base: { readonly sha: string }
    readonly head: { readonly sha: string }
    /** The head branch lives in another repository (a fork, or one deleted since). */
    readonly fromFork: boolean
  }
  /**
   * Another event started by pull request content: a workflow_run after a pull request's run (or
   * from another repository's head), an issue_comment on a pull request. Its payload says what.
   */
  readonly startedBy?: {
    readonly what: string
    /** Not provably the repository's own content (a fork, or unknown). */
    readonly fromFork: boolean
  }
}

export interface RangeInputs {
  /** The `base` input; empty means unset. */
  readonly base?: string
  /** The `head` input; empty means unset. */
  readonly head?: string
  readonly fullSync: boolean
}

export interface RangeRequest {
  readonly event: GitHubEventLike
  /** GITHUB_EVENT_NAME */
  readonly eventName: string
  readonly inputs: RangeInputs
  /** GITHUB_SHA: the commit the workflow runs on. */
  readonly sha: string
}

export interface Range {
  /** Compare against this commit; undefined = every file at head counts as added. */
  readonly base?: string
  readonly head: string
  /** Every labelled source at head, whatever changed. */
  readonly fullSync: boolean
  /** Why the range is not the obvious one; said in the summary. */
  readonly notes: readonly string[]
}

/** A commit, or none, with what is worth telling about how it was found. */
interface Found {
  readonly sha: string | undefined
  readonly notes: readonly string[]
}

/** Events a pull request starts (a fork's too): their payload carries the pull request. */
const PULL_REQUEST_EVENTS: ReadonlySet<string> = new Set(['pull_request', 'pull_request_target', 'pull_request_review', 'pull_request_review_comment'])

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

export async function resolveRange(request: RangeRequest, git: CommitLookup): Promise<Range> {
  const baseInput = nonEmpty(request.inputs.base)
  if (request.eventName === 'push' && isBranchDeletion(request.event) && nonEmpty(request.inputs.head) === undefined) {
    const head = await requireCommit(git, request.sha, 'GITHUB_SHA')
    return { base: head, head, fullSync: false, notes: ['the push deleted the branch; there is nothing to compare'] }
  }
  const head = await resolveHead(request, git)
  if (request.inputs.fullSync) {
    const ignored = baseInput === undefined ? [] : [`input 'base' is ignored under full-sync`]
    return { head: head.sha, fullSync: true, notes: [...head.notes, ...ignored, `full sync: every labelled source at ${short(head.sha)}`] }
  }
  const base = baseInput === undefined ? await defaultBase(request, head.sha, git) : { sha: await requireInput(git, 'base', baseInput), notes: [] }
  return { ...(base.sha === undefined ? {} : { base: base.sha }), head: head.sha, fullSync: false, notes: [...head.notes, ...base.notes] }
}

async function resolveHead(request: RangeRequest, git: CommitLookup): Promise<{ sha: string; notes: readonly string[] }> {
  const headInput = nonEmpty(request.inputs.head)
  if (headInput !== undefined) return { sha: await requireInput(git, 'head', headInput), notes: [] }
  const pr = pullRequestOf(request)
  if (pr !== undefined) return pullRequestHead(request, pr.head.sha, git)
  const after = request.eventName === 'push' ? nonEmpty(request.event.after) : undefined
  const found = after === undefined ? undefined : await git.resolve(after)
  if (found !== undefined) return { sha: found, notes: [] }
  const sha = await requireCommit(git, request.sha, 'GITHUB_SHA')
  const notes = after === undefined ? [] : [`pushed commit ${short(after)} is not in the clone; used the checked-out commit ${short(sha)}`]
  return { sha, notes }
}

/** pull_request checks out the merge commit, whose first parent is the base: a fine stand-in for the head. */
async function pullRequestHead(request: RangeRequest, prHead: string, git: CommitLookup): Promise<{ sha: string; notes: readonly string[] }> {
  const found = await git.resolve(prHead)
  if (found !== undefined) return { sha: found, notes: [] }
  if (request.eventName === 'pull_request_target') {
    // GITHUB_SHA is the base branch here: planning it would describe the wrong commit.
    throw new ConfigurationError(
      `pull request head ${short(prHead)} is not in the clone; check it out (actions/checkout with ref: \${{ github.event.pull_request.head.sha }})`,
    )
  }
  const sha = await requireCommit(git, request.sha, 'GITHUB_SHA')
  return { sha, notes: [`pull request head ${short(prHead)} is not in the clone; used the checked-out merge commit ${short(sha)}`] }
}

async function defaultBase(request: RangeRequest, head: string, git: CommitLookup): Promise<Found> {
  const pr = pullRequestOf(request)
  if (pr !== undefined) return baseOrParent(git, pr.base.sha, head, (sha) => `pull request base ${short(sha)} is not in the clone`)
  const before = request.eventName === 'push' ? nonEmpty(request.event.before) : undefined
  if (before === undefined) return parentOf(git, head, [])
  if (isZeroSha(before)) return parentOf(git, head, ['new branch: no previous commit to compare with; compared with the parent of the head'])
  return baseOrParent(
    git,
    before,
    head,
    (sha) => `before commit ${short(sha)} is not in the clone (force push or shallow checkout? use fetch-depth: 2 or more)`,
  )
}

async function baseOrParent(git: CommitLookup, candidate: string, head: string, missing: (sha: string) => string): Promise<Found> {
  const sha = await git.resolve(candidate)
  if (sha !== undefined) return { sha, notes: [] }
  return parentOf(git, head, [`${missing(candidate)}; compared with the parent of the head instead`])
}

async function parentOf(git: CommitLookup, head: string, notes: readonly string[]): Promise<Found> {
  const sha = await git.parent(head)
  if (sha !== undefined) return { sha, notes }
  const why = `head ${short(head)} has no parent in the clone (root commit, or a shallow checkout: use fetch-depth: 2 or more); every file at the head counts as added`
  return { sha: undefined, notes: [...notes, why] }
}

async function requireInput(git: CommitLookup, name: 'base' | 'head', rev: string): Promise<string> {
  const sha = await git.resolve(rev)
  if (sha === undefined) {
    throw new ConfigurationError(`input '${name}': commit '${rev}' not found in the clone; fetch it (actions/checkout fetch-depth: 0)`)
  }
  return sha
}

async function requireCommit(git: CommitLookup, rev: string, what: string): Promise<string> {
  const sha = await git.resolve(rev)
  if (sha === undefined) throw new ConfigurationError(`${what} commit '${rev}' is not in the clone; check out the repository first (actions/checkout)`)
  return sha
}

function pullRequestOf(request: RangeRequest): GitHubEventLike['pull_request'] {
  return PULL_REQUEST_EVENTS.has(request.eventName) ? request.event.pull_request : undefined
}

function isBranchDeletion(event: GitHubEventLike): boolean {
  return event.deleted === true || (event.after !== undefined && isZeroSha(event.after))
}

function isZeroSha(sha: string): boolean {
  return /^0+$/.test(sha)
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim()
  return trimmed === '' ? undefined : trimmed
}

function short(sha: string): string {
  return /^[0-9a-f]{40,64}$/.test(sha) ? sha.slice(0, 7) : sha
}

// ---- event payload -----------------------------------------------------------------------------

/**
 * Reads the event payload. No path or no file gives an empty event (local runs, the CLI);
 * a file that is not JSON, or whose fields have the wrong types, is an error naming the file.
 */
export async function readEvent(path: string | undefined): Promise<GitHubEventLike> {
  if (path === undefined || path.trim() === '') return {}
  const text = await readFile(path, 'utf8').catch((error: unknown) => {
    if (isErrnoCode(error, 'ENOENT')) return undefined
    throw new ConfigurationError(`cannot read the event payload ${path}`, { cause: error })
  })
  if (text === undefined) return {}
  return parseEvent(text, path)
}

export function parseEvent(text: string, path: string): GitHubEventLike {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ConfigurationError(`the event payload ${path} is not valid JSON`, { cause: error })
  }
  if (!isRecord(json)) throw new ConfigurationError(`the event payload ${path} is not a JSON object`)
  const field = (name: string): string | undefined => optionalString(json[name], name, path)
  const before = field('before')
  const after = field('after')
  const deleted = optionalBoolean(json.deleted, 'deleted', path)
  const pullRequest = json.pull_request === undefined || json.pull_request === null ? undefined : readPullRequest(json.pull_request, path)
  const startedBy = startedByPullRequest(json)
  return {
    ...(before === undefined ? {} : { before }),
    ...(after === undefined ? {} : { after }),
    ...(deleted === undefined ? {} : { deleted }),
    ...(pullRequest === undefined ? {} : { pull_request: pullRequest }),
    ...(startedBy === undefined ? {} : { startedBy }),
  }
}

/**
 * A workflow_run whose triggering run was a pull request's, or whose head repository is not this
 * one; an issue_comment on a pull request (whose head the payload does not name: unknown origin).
 */
function startedByPullRequest(json: Record<string, unknown>): GitHubEventLike['startedBy'] {
  const run = json.workflow_run
  if (isRecord(run)) {
    const event = typeof run.event === 'string' ? run.event : 'unknown'
    const fromFork = fullName(run.head_repository) === undefined || fullName(run.head_repository) !== fullName(json.repository)
    if (PULL_REQUEST_EVENTS.has(event)) return { what: `workflow_run event after a ${event} run`, fromFork }
    if (fromFork) return { what: 'workflow_run event for another repository', fromFork }
    return undefined
  }
  const issue = json.issue
  if (isRecord(issue) && issue.pull_request !== undefined && issue.pull_request !== null && json.comment !== undefined) {
    return { what: 'issue_comment event on a pull request', fromFork: true }
  }
  return undefined
}

function fullName(repository: unknown): string | undefined {
  return isRecord(repository) && typeof repository.full_name === 'string' ? repository.full_name : undefined
}

function readPullRequest(value: unknown, path: string): NonNullable<GitHubEventLike['pull_request']> {
  const sha = (side: 'base' | 'head'): string => {
    const ref = isRecord(value) ? value[side] : undefined
    const sha = isRecord(ref) ? ref.sha : undefined
    if (typeof sha !== 'string' || sha === '') throw invalidField(`pull_request.${side}.sha`, 'a commit SHA', path)
    return sha
  }
  const number = isRecord(value) ? value.number : undefined
  if (number !== undefined && number !== null && (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 1))
    throw invalidField('pull_request.number', 'a positive whole number', path)
  return { ...(typeof number === 'number' ? { number } : {}), base: { sha: sha('base') }, head: { sha: sha('head') }, fromFork: isFork(value) }
}

/** Unknown counts as a fork: only a head repository that is provably the base one is trusted. */
function isFork(pr: unknown): boolean {
  const repoName = (side: 'base' | 'head'): unknown => {
    const ref = isRecord(pr) ? pr[side] : undefined
    const repo = isRecord(ref) ? ref.repo : undefined
    return isRecord(repo) ? repo.full_name : undefined
  }
  const head = repoName('head')
  return typeof head !== 'string' || head !== repoName('base')
}

function optionalString(value: unknown, name: string, path: string): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalidField(name, 'a string', path)
  return value
}

function optionalBoolean(value: unknown, name: string, path: string): boolean | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'boolean') throw invalidField(name, 'true or false', path)
  return value
}

function invalidField(name: string, expected: string, path: string): ConfigurationError {
  return new ConfigurationError(`the event payload ${path}: '${name}' must be ${expected}`)
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isErrnoCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === code
}
