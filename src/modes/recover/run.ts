// Mode `recover`: re-trigger the HelmReleases that failed for a transient reason (or stalled
// with retries exhausted) with requestedAt + resetAt, within an attempt budget and an
// exponential backoff kept in annotations on each release. Observe → decide (pure,
// `decideRecovery`) → act; the outcome is awaited and reported as in trigger mode.

import { randomInt } from 'node:crypto'
import { mapLimit } from '../../lib/concurrency.ts'
import { isStalled } from '../../core/helmrelease.ts'
import { newToken } from '../../engine/tokens.ts'
import { formatDuration } from '../../lib/duration.ts'
import { messageOf } from '../../lib/errors.ts'
import { keysFor, type Keys } from '../../core/keys.ts'
import { ConflictError, ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient, ReleasePatch } from '../../kube/cluster.ts'
import { condition, type HelmRelease } from '../../core/helmrelease.ts'
import { releaseKey } from '../../core/model.ts'
import { Status, type ReleaseResult, type TriggerReport } from '../../engine/result.ts'
import type { Settings } from '../../settings.ts'
import type { Clock, Logger } from '../../engine/ports.ts'
import type { OutcomeWaiter, Triggered } from '../../engine/outcome.ts'

export const RecoverReason = {
  Suspended: 'Suspended',
  NotTransient: 'NotTransient',
  BudgetExhausted: 'BudgetExhausted',
  BackingOff: 'BackingOff',
  BudgetReset: 'BudgetReset',
} as const

export type RecoveryDecision =
  /** Healthy or still working: not listed. */
  | { readonly action: 'ignore' }
  /** Ready again: forget the attempts. */
  | { readonly action: 'reset-budget' }
  | { readonly action: 'skip'; readonly reason: string; readonly message: string; readonly severity: ReleaseResult['severity'] }
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

// ---- Engine -------------------------------------------------------------------------------

export interface RecoverDeps {
  readonly connect: () => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  readonly outcome?: OutcomeWaiter
  /** Link to the workflow run, named in the Events. */
  readonly runUrl?: string
}

type Outcome = { readonly triggered: Triggered } | { readonly result: ReleaseResult } | undefined

const MAX_CONFLICTS = 5

export async function runRecover(settings: Settings, deps: RecoverDeps): Promise<TriggerReport> {
  const keys = keysFor(settings.annotationPrefix)
  const policy: RecoveryPolicy = { patterns: settings.recoverPatterns, maxAttempts: settings.recoverMaxAttempts, backoffMs: settings.recoverBackoffMs, keys }
  const cluster = await deps.connect()
  const scoped = settings.namespaces.length > 0 ? settings.namespaces : [undefined]
  const releases = (await mapLimit(scoped, settings.maxConcurrency, (ns) => cluster.listReleases(ns))).flat()
  // A random start, as in trigger mode: two runs in one millisecond never write one token.
  const sequence = { n: randomInt(1000) * 1000 }
  const outcomes = await mapLimit(releases, settings.maxConcurrency, (r) => recoverRelease(cluster, r, { settings, policy, deps, sequence }))
  const triggered = outcomes.flatMap((o) => (o !== undefined && 'triggered' in o ? [o.triggered] : []))
  const settled = outcomes.flatMap((o) => (o !== undefined && 'result' in o ? [o.result] : []))
  const waited =
    settings.wait && !settings.dryRun && deps.outcome !== undefined && triggered.length > 0
      ? await deps.outcome.wait(cluster, triggered, deps.clock.now() + settings.timeoutMs)
      : triggered.map((t) => requested(t, settings.dryRun, deps.clock.now()))
  const results = [...settled, ...waited].sort((a, b) => releaseKey(a).localeCompare(releaseKey(b)))
  const scope = settings.namespaces.length > 0 ? `namespaces ${settings.namespaces.join(', ')}` : 'all namespaces'
  const note = `Recover: ${releases.length} HelmReleases checked in ${scope}; budget ${settings.recoverMaxAttempts} attempts, backoff ${formatDuration(settings.recoverBackoffMs)} doubling.`
  return {
    range: undefined,
    plan: { sources: [], releases: [], problems: [] },
    planOnly: undefined,
    dryRun: settings.dryRun,
    sources: [],
    results,
    notes: [note],
    problems: [],
  }
}

interface Scope {
  readonly settings: Settings
  readonly policy: RecoveryPolicy
  readonly deps: RecoverDeps
  readonly sequence: { n: number }
}

async function recoverRelease(cluster: ClusterClient, first: HelmRelease, scope: Scope): Promise<Outcome> {
  const { settings, policy, deps } = scope
  const started = deps.clock.now()
  const result = (live: HelmRelease, status: Status, reason: string, message: string, severity: ReleaseResult['severity']): Outcome => ({
    result: {
      namespace: live.namespace,
      name: live.name,
      sources: [],
      status,
      reason,
      message,
      durationMs: deps.clock.now() - started,
      severity,
      revisionBefore: live.status.history[0]?.version,
    },
  })
  let live: HelmRelease | undefined = first
  for (let attempt = 1; live !== undefined; attempt++) {
    const decision = decideRecovery(live, deps.clock.now(), policy)
    try {
      switch (decision.action) {
        case 'ignore':
          return undefined
        case 'skip':
          return result(live, Status.Skipped, decision.reason, decision.message, decision.severity)
        case 'reset-budget':
          await cluster.patchRelease(live, budgetResetPatch(live, policy.keys), { dryRun: settings.dryRun })
          return result(live, Status.Skipped, RecoverReason.BudgetReset, 'Ready again; recovery attempts reset', 'none')
        case 'recover': {
          const token = newToken(new Date(deps.clock.now()), scope.sequence.n++)
          const patched = await cluster.patchRelease(live, recoveryPatch(live, decision.attempt, token, policy.keys), { dryRun: settings.dryRun })
          if (!settings.dryRun) await recordRecovery(cluster, patched, decision, scope)
          return {
            triggered: {
              planned: { namespace: live.namespace, name: live.name, sources: [] },
              release: patched,
              before: live,
              token,
              force: false,
              reset: true,
              startedAt: started,
            },
          }
        }
      }
    } catch (error) {
      if (error instanceof ConflictError && attempt < MAX_CONFLICTS) {
        live = await cluster.getRelease(live)
        continue
      }
      return result(live, Status.Failed, error instanceof ForbiddenError ? 'Forbidden' : 'PatchFailed', messageOf(error), 'error')
    }
  }
  return undefined
}

async function recordRecovery(cluster: ClusterClient, release: HelmRelease, decision: { attempt: number; why: string }, scope: Scope): Promise<void> {
  const run = scope.deps.runUrl === undefined ? '' : ` Run: ${scope.deps.runUrl}`
  const message = `Recovery attempt ${decision.attempt} of ${scope.policy.maxAttempts}: ${decision.why}; reconcile and reset requested.${run}`
  try {
    await cluster.recordEvent({ release, type: 'Normal', reason: 'RecoveryRequested', message }, { dryRun: false })
  } catch (error) {
    scope.deps.log.warning(`${releaseKey(release)}: could not record the Event: ${messageOf(error)}`)
  }
}

function requested(t: Triggered, dryRun: boolean, now: number): ReleaseResult {
  return {
    namespace: t.planned.namespace,
    name: t.planned.name,
    sources: [],
    status: dryRun ? Status.DryRun : Status.Triggered,
    reason: dryRun ? 'DryRun' : 'RecoveryRequested',
    message: dryRun ? 'server-side dry run of the patch succeeded; nothing written' : 'reconcile and reset requested; outcome not awaited',
    token: t.token,
    revisionBefore: t.before.status.history[0]?.version,
    durationMs: now - t.startedAt,
    severity: 'none',
  }
}
