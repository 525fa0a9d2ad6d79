// Recover's release action, pure: which failing releases to re-trigger (decideRecovery: a
// transient failure or a stall, within the attempt budget and its doubling backoff, both kept
// in annotations on the release), the patches, and the Event. Table-tested on its own.

import { condition, isStalled, type HelmRelease } from '../../core/helmrelease.ts'
import type { Keys } from '../../core/keys.ts'
import { Reason, type ReleaseResult } from '../../engine/result.ts'
import type { ReleaseAction } from '../../engine/write-release.ts'
import type { ReleasePatch } from '../../kube/cluster.ts'
import { formatDuration } from '../../lib/duration.ts'

/** The reasons recover's decision gives. */
export const RecoverReason = {
  Suspended: Reason.Suspended,
  NotTransient: Reason.NotTransient,
  BudgetExhausted: Reason.BudgetExhausted,
  BackingOff: Reason.BackingOff,
  BudgetReset: Reason.BudgetReset,
} as const
export type RecoverReason = (typeof RecoverReason)[keyof typeof RecoverReason]

export type RecoveryDecision =
  /** Healthy or still working: not listed. */
  | { readonly action: 'ignore' }
  /** Ready again: forget the attempts. */
  | { readonly action: 'reset-budget' }
  | { readonly action: 'skip'; readonly reason: RecoverReason; readonly message: string; readonly severity: ReleaseResult['severity'] }
  | { readonly action: 'recover'; readonly attempt: number; readonly why: string }

export interface RecoveryPolicy {
  readonly patterns: readonly RegExp[]
  readonly maxAttempts: number
  readonly backoffMs: number
  readonly keys: Keys
}

export function decideRecovery(live: HelmRelease, now: number, policy: RecoveryPolicy): RecoveryDecision {
  const { keys } = policy
  const ready = condition(live, 'Ready')
  const attempts = attemptsOf(live, keys)
  if (ready?.status === 'True') return attempts > 0 || live.annotations[keys.recoverAt] !== undefined ? { action: 'reset-budget' } : { action: 'ignore' }
  if (ready?.status !== 'False') return { action: 'ignore' }
  const message = ready.message || ready.reason
  if (live.suspend)
    return { action: 'skip', reason: RecoverReason.Suspended, message: `spec.suspend is true; left alone (failing: ${message})`, severity: 'none' }
  const stalled = isStalled(live)
  const pattern = policy.patterns.find((p) => p.test(ready.message))
  if (!stalled && pattern === undefined) {
    return {
      action: 'skip',
      reason: RecoverReason.NotTransient,
      message: `failing for a reason recover-patterns do not match; left alone: ${message}`,
      severity: 'warning',
    }
  }
  if (attempts >= policy.maxAttempts) {
    return {
      action: 'skip',
      reason: RecoverReason.BudgetExhausted,
      message: `${attempts} recovery attempts made (recover-max-attempts ${policy.maxAttempts}) and still failing: ${message}`,
      severity: 'error',
    }
  }
  const last = lastAttemptAt(live, keys)
  if (last !== undefined && attempts > 0) {
    const next = last + policy.backoffMs * 2 ** (attempts - 1)
    if (now < next)
      return {
        action: 'skip',
        reason: RecoverReason.BackingOff,
        message: `attempt ${attempts + 1} not before ${new Date(next).toISOString()} (in ${formatDuration(next - now)})`,
        severity: 'none',
      }
  }
  const why = stalled ? `stalled (${ready.reason || 'RetriesExceeded'})` : `failed with a transient error (matches /${pattern?.source ?? ''}/)`
  return { action: 'recover', attempt: attempts + 1, why }
}

function attemptsOf(live: HelmRelease, keys: Keys): number {
  const n = Number(live.annotations[keys.recoverAttempts] ?? '0')
  return Number.isInteger(n) && n > 0 ? n : 0
}

/** The token is RFC 3339 with nanoseconds; milliseconds are enough for a backoff. */
function lastAttemptAt(live: HelmRelease, keys: Keys): number | undefined {
  const at = live.annotations[keys.recoverAt]
  if (at === undefined) return undefined
  const ms = Date.parse(at.length > 24 ? `${at.slice(0, 23)}Z` : at)
  return Number.isNaN(ms) ? undefined : ms
}

/** requestedAt and resetAt with one token, and the budget. */
export function recoveryPatch(live: HelmRelease, attempt: number, token: string, keys: Keys): ReleasePatch {
  return {
    annotations: { [keys.requestedAt]: token, [keys.resetAt]: token, [keys.recoverAttempts]: String(attempt), [keys.recoverAt]: token },
    labels: {},
    resourceVersion: live.resourceVersion,
  }
}

export function budgetResetPatch(live: HelmRelease, keys: Keys): ReleasePatch {
  return { annotations: { [keys.recoverAttempts]: null, [keys.recoverAt]: null }, labels: {}, resourceVersion: live.resourceVersion }
}

// ---- The release action ------------------------------------------------------------------

export type RecoveryWrite = Extract<RecoveryDecision, { action: 'recover' | 'reset-budget' }>
/** `ignore`: healthy or still working, or gone; not listed. */
export type RecoverySkip = Extract<RecoveryDecision, { action: 'ignore' | 'skip' }>

export function recoverAction(policy: RecoveryPolicy, runUrl: string | undefined): ReleaseAction<RecoveryWrite, RecoverySkip> {
  const { keys } = policy
  return {
    decide: (live, now) => {
      if (live === undefined) return { kind: 'skip', skip: { action: 'ignore' } }
      const decision = decideRecovery(live, now, policy)
      return decision.action === 'ignore' || decision.action === 'skip' ? { kind: 'skip', skip: decision } : { kind: 'write', write: decision }
    },
    patch: (write, live, token) => (write.action === 'recover' ? recoveryPatch(live, write.attempt, token, keys) : budgetResetPatch(live, keys)),
    landed: (write, live, token) =>
      write.action === 'recover'
        ? live.annotations[keys.requestedAt] === token
        : live.annotations[keys.recoverAttempts] === undefined && live.annotations[keys.recoverAt] === undefined,
    event: (write) =>
      write.action === 'recover' ? { reason: Reason.RecoveryRequested, message: recoveryEventMessage(write, policy.maxAttempts, runUrl) } : undefined,
  }
}

export function recoveryEventMessage(write: { attempt: number; why: string }, maxAttempts: number, runUrl: string | undefined): string {
  const run = runUrl === undefined ? '' : ` Run: ${runUrl}`
  return `Recovery attempt ${write.attempt} of ${maxAttempts}: ${write.why}; reconcile and reset requested.${run}`
}
