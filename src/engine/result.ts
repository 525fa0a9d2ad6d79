// One typed result per release: the summary, the outputs, the logs and the Events all read it.

import type { Digest, FileProblem, Plan, ReleaseRef, SourceId } from '../core/model.ts'
import type { Range } from '../git/range.ts'

export const Status = {
  /** Patched; outcome not awaited (wait: false). */
  Triggered: 'Triggered',
  /** helm-controller made a new revision, deployed. */
  Upgraded: 'Upgraded',
  /** helm-controller handled the request; values unchanged, no new revision. */
  Unchanged: 'Unchanged',
  /** Patch sent as a server-side dry run only. */
  DryRun: 'DryRun',
  /** Plan only (pull request): nothing written. */
  Planned: 'Planned',
  Skipped: 'Skipped',
  Failed: 'Failed',
  TimedOut: 'TimedOut',
} as const
export type Status = (typeof Status)[keyof typeof Status]

export interface ReleaseResult extends ReleaseRef {
  readonly sources: readonly { readonly id: SourceId; readonly digest: Digest }[]
  readonly status: Status
  /** Short constant: why (NotFound, Suspended, UpToDate, SourceNotApplied, Forbidden, UpgradeFailed…). */
  readonly reason: string
  readonly message: string
  /** The requestedAt token we sent. */
  readonly token?: string
  readonly revisionBefore?: number
  readonly revisionAfter?: number
  readonly durationMs: number
  /** A missing release is a warning, not an error (fail-on: warning turns it red). */
  readonly severity: 'none' | 'warning' | 'error'
}

/** Whether each changed source reached the cluster (wait-for-apply / apply). */
export interface SourceResult {
  readonly id: SourceId
  readonly applied: boolean
  readonly message: string
  readonly durationMs: number
}

export interface TriggerReport {
  /** undefined when no commit drives the run (recover: it reads the cluster alone). */
  readonly range: Range | undefined
  readonly plan: Plan
  /** Why nothing was written, when nothing was (pull request, no change). */
  readonly planOnly: string | undefined
  readonly dryRun: boolean
  readonly sources: readonly SourceResult[]
  readonly results: readonly ReleaseResult[]
  /** Said in the summary: fallbacks taken, things worth knowing. */
  readonly notes: readonly string[]
  readonly problems: readonly FileProblem[]
}

export const FAILED: ReadonlySet<Status> = new Set([Status.Failed, Status.TimedOut])
