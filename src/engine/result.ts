// One typed result per release: the summary, the outputs, the logs and the Events all read it.

import type { DeployedDiff } from '../core/deployed-diff.ts'
import type { PredictedDiff } from '../core/predicted-diff.ts'
import type { HelmRelease } from '../core/helmrelease.ts'
import type { Digest, FileProblem, Origin, Plan, ReleaseRef, SourceId } from '../core/model.ts'
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

/**
 * Why a release ended as it did: every reason this project gives, in one vocabulary
 * (PascalCase, like Kubernetes reasons). helm-controller's own reasons (Ready's reason after
 * an upgrade) pass through as a ControllerReason.
 */
export const Reason = {
  // Trigger's decision (also watch's).
  NotFound: 'NotFound',
  Suspended: 'Suspended',
  UpToDate: 'UpToDate',
  SourceNotApplied: 'SourceNotApplied',
  PlanOnly: 'PlanOnly',
  /** A newer commit's content is live: a newer run triggers it, this one must not write older digests. */
  Superseded: 'Superseded',
  /** Its own spec changed: helm-controller upgrades it on the new generation, no patch needed. */
  SpecChanged: 'SpecChanged',
  /** Its new spec never reached the cluster: not patched, so no upgrade runs on half the commit. */
  SpecNotApplied: 'SpecNotApplied',
  /** The OCIRepository its chartRef names changed: helm-controller upgrades it on the new artifact, no patch needed. */
  ChartChanged: 'ChartChanged',
  /** source-controller could not fetch the chart the commit names (a missing tag, a registry refusing). */
  ChartNotFetched: 'ChartNotFetched',
  // Recover's decision.
  NotTransient: 'NotTransient',
  BudgetExhausted: 'BudgetExhausted',
  BackingOff: 'BackingOff',
  BudgetReset: 'BudgetReset',
  // Written, outcome not awaited.
  ReconcileRequested: 'ReconcileRequested',
  RecoveryRequested: 'RecoveryRequested',
  CorrectionRequested: 'CorrectionRequested',
  DryRun: 'DryRun',
  // Not written.
  Forbidden: 'Forbidden',
  PatchFailed: 'PatchFailed',
  /** The run's timeout passed before the release's turn. */
  NotAttempted: 'NotAttempted',
  // The outcome, when helm-controller gave no reason of its own.
  UpgradeSucceeded: 'UpgradeSucceeded',
  Unchanged: 'Unchanged',
  NotReady: 'NotReady',
  NotDeployed: 'NotDeployed',
  TimedOut: 'TimedOut',
} as const
export type OwnReason = (typeof Reason)[keyof typeof Reason]

declare const controller: unique symbol
/** A reason helm-controller wrote (the Ready condition's), reported as it is. */
export type ControllerReason = string & { readonly [controller]: true }
export type Reason = OwnReason | ControllerReason

/** helm-controller's reason, marked as such: the only way a reason outside `Reason` enters a result. */
export function controllerReason(text: string): ControllerReason {
  return text as ControllerReason
}

const OWN: ReadonlySet<string> = new Set(Object.values(Reason))

/** A reason read back as text (a cluster's result file): ours when it is in the vocabulary, else helm-controller's. */
export function reasonOf(text: string): Reason {
  return OWN.has(text) ? (text as OwnReason) : controllerReason(text)
}

export interface ReleaseResult extends ReleaseRef {
  /** The cluster tree it belongs to, when the repository holds several (`staging` for clusters/staging). */
  readonly cluster?: string
  /** What the upgrade changed, from Helm's storage (revision before the trigger against the new one); or why that is not known. */
  readonly deployed?: DeployedDiff
  /** What the upgrade will change, predicted before merge (plan-only runs with the diff on); or why it is not predicted. */
  readonly predicted?: PredictedDiff
  /** The changed sources it read, each with where the key it reads was edited (when known); a Secret's digest is never in a result. */
  readonly sources: readonly { readonly id: SourceId; readonly digest?: Digest; readonly origin?: Origin }[]
  /** Its own rendered spec changed in the range: the changed fields and the release's file:line. */
  readonly spec?: { readonly fields: readonly string[]; readonly origin: Origin }
  /** The chart source its chartRef names changed in the range: which one, its changed fields and file:line, and the artifact fetched. */
  readonly chart?: { readonly source: string; readonly fields: readonly string[]; readonly origin: Origin; readonly revision?: string }
  readonly status: Status
  /** Short constant: why (NotFound, Suspended, UpToDate, SourceNotApplied, Forbidden, or helm-controller's UpgradeFailed…). */
  readonly reason: Reason
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
  /** The repository holds several cluster trees: the ones this report covers (a plan-only run: each with work gets a section). */
  readonly clusters?: readonly string[]
}

export const FAILED: ReadonlySet<Status> = new Set([Status.Failed, Status.TimedOut])

/** A patch sent, as far as its result needs it (outcome.ts's Triggered is one). */
export interface Sent {
  readonly planned: ReleaseRef & { readonly sources: ReleaseResult['sources'] }
  readonly before: HelmRelease
  readonly token: string | undefined
  readonly startedAt: number
}

/**
 * The result of a patch whose outcome is not awaited (wait: false) or that was a server-side dry
 * run: what was requested (`reconcile`, `reconcile and reset`) and the revision it started from.
 */
export function requestedResult(sent: Sent, requested: { readonly reason: OwnReason; readonly what: string }, dryRun: boolean, now: number): ReleaseResult {
  return {
    namespace: sent.planned.namespace,
    name: sent.planned.name,
    sources: sent.planned.sources,
    status: dryRun ? Status.DryRun : Status.Triggered,
    reason: dryRun ? Reason.DryRun : requested.reason,
    message: dryRun ? 'server-side dry run of the patch succeeded; nothing written' : `${requested.what} requested; outcome not awaited`,
    token: sent.token,
    revisionBefore: sent.before.status.history[0]?.version,
    durationMs: now - sent.startedAt,
    severity: 'none',
  }
}
