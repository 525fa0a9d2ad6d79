// The GitHub event payload (GITHUB_EVENT_PATH), read and checked once: the fields range
// resolution and the pull-request policy use, every other field dropped.

import { readFile } from 'node:fs/promises'
import { PULL_REQUEST_EVENTS } from '../core/pull-request.ts'
import { ConfigurationError } from '../lib/errors.ts'

/** The fields of the event payload that range resolution and the pull-request policy use. */
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
