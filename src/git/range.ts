// Which commits to compare, decided from the event and the inputs. No I/O of its own: it asks
// git two questions (CommitLookup), so it runs against a fake and against a real clone alike.

import { PULL_REQUEST_EVENTS } from '../core/pull-request.ts'
import { ConfigurationError } from '../lib/errors.ts'

/** The two questions range resolution asks of git (a GitReader answers them). */
export interface CommitLookup {
  /** Full SHA of a commit; undefined when it is not in the clone. */
  resolve(rev: string): Promise<string | undefined>
  /** First parent; undefined for a root commit or when the parent was not fetched. */
  parent(sha: string): Promise<string | undefined>
}

/** The fields of the event payload that range resolution uses (github/event.ts reads them). */
export interface RangeEvent {
  /** push: the branch tip before the push; all zeros for a new branch. */
  readonly before?: string
  /** push: the branch tip after the push; all zeros when the branch was deleted. */
  readonly after?: string
  /** push: the push deleted the branch. */
  readonly deleted?: boolean
  readonly pull_request?: { readonly base: { readonly sha: string }; readonly head: { readonly sha: string } }
}

export interface RangeInputs {
  /** The `base` input; empty means unset. */
  readonly base?: string
  /** The `head` input; empty means unset. */
  readonly head?: string
  readonly fullSync: boolean
}

export interface RangeRequest {
  readonly event: RangeEvent
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
    // GITHUB_SHA is the base branch here: planning it would describe the wrong commit. Never
    // advise checking the head out in this event: the job holds the base repository's secrets.
    throw new ConfigurationError(
      `pull request head ${short(prHead)} is not in the clone; plan pull requests on the pull_request event (a plan needs no secret), or fetch the head's objects without checking them out (git fetch origin refs/pull/<number>/head)`,
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

function pullRequestOf(request: RangeRequest): RangeEvent['pull_request'] {
  return PULL_REQUEST_EVENTS.has(request.eventName) ? request.event.pull_request : undefined
}

function isBranchDeletion(event: RangeEvent): boolean {
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
