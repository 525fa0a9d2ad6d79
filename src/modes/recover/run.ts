// Mode `recover`: re-trigger the HelmReleases that failed for a transient reason (or stalled
// with retries exhausted) with requestedAt + resetAt, within an attempt budget and an
// exponential backoff kept in annotations on each release. Observe (a LIST) → recover's
// action decides (action.ts) → the write engine acts; the outcome is awaited and reported as
// in trigger mode.

import type { HelmRelease } from '../../core/helmrelease.ts'
import { keysFor } from '../../core/keys.ts'
import { byReleaseKey } from '../../core/model.ts'
import type { OutcomeWaiter, Triggered } from '../../engine/outcome.ts'
import { eventRecorder, type Clock, type Logger } from '../../engine/ports.ts'
import { Reason, requestedResult, Status, type ReleaseResult, type TriggerReport } from '../../engine/result.ts'
import { tokenSequence } from '../../engine/tokens.ts'
import { writeRelease, type WriteContext, type WriteOutcome } from '../../engine/write-release.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { mapLimit } from '../../lib/concurrency.ts'
import { formatDuration } from '../../lib/duration.ts'
import type { Settings } from '../../settings.ts'
import { recoverAction, type RecoveryPolicy, type RecoverySkip, type RecoveryWrite } from './action.ts'

export { budgetResetPatch, decideRecovery, RecoverReason, recoveryPatch, type RecoveryDecision, type RecoveryPolicy } from './action.ts'

export interface RecoverDeps {
  readonly connect: () => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  readonly outcome?: OutcomeWaiter
  /** Link to the workflow run, named in the Events. */
  readonly runUrl?: string
}

/** What recover reads from the settings, and nothing else. */
export type RecoverOptions = Pick<
  Settings,
  'annotationPrefix' | 'recoverPatterns' | 'recoverMaxAttempts' | 'recoverBackoffMs' | 'namespaces' | 'maxConcurrency' | 'dryRun' | 'wait' | 'timeoutMs'
>

export async function runRecover(settings: RecoverOptions, deps: RecoverDeps): Promise<TriggerReport> {
  const keys = keysFor(settings.annotationPrefix)
  const policy: RecoveryPolicy = { patterns: settings.recoverPatterns, maxAttempts: settings.recoverMaxAttempts, backoffMs: settings.recoverBackoffMs, keys }
  const cluster = await deps.connect()
  const scoped = settings.namespaces.length > 0 ? settings.namespaces : [undefined]
  const releases = (await mapLimit(scoped, settings.maxConcurrency, (ns) => cluster.listReleases(ns))).flat()
  const write: WriteContext = {
    cluster,
    requestedAtKey: keys.requestedAt,
    dryRun: settings.dryRun,
    clock: deps.clock,
    log: deps.log,
    tokens: tokenSequence(),
    events: eventRecorder(cluster, deps.log),
  }
  const action = recoverAction(policy, deps.runUrl)
  const outcomes = await mapLimit(releases, settings.maxConcurrency, (r) => writeRelease(r, action, { ...write, observed: { live: r } }))
  const triggered = outcomes.flatMap((o) => (o.kind === 'written' && o.write.action === 'recover' ? [triggeredOf(o)] : []))
  const settled = outcomes.flatMap((o, i) => settledOf(o, releases[i], deps.clock.now()))
  const waited =
    settings.wait && !settings.dryRun && deps.outcome !== undefined && triggered.length > 0
      ? await deps.outcome.wait(cluster, triggered, deps.clock.now() + settings.timeoutMs)
      : triggered.map((t) => requestedResult(t, { reason: Reason.RecoveryRequested, what: 'reconcile and reset' }, settings.dryRun, deps.clock.now()))
  const results = [...settled, ...waited].sort(byReleaseKey)
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

/** A recovery written: handed to the outcome waiter as a release with no sources. */
function triggeredOf(o: Extract<WriteOutcome<RecoveryWrite, RecoverySkip>, { kind: 'written' }>): Triggered {
  const planned = { namespace: o.read.namespace, name: o.read.name, sources: [] }
  return { planned, release: o.release, before: o.read, token: o.token, force: false, reset: true, startedAt: o.startedAt }
}

/** The result of a release recover did not hand to the outcome waiter; none for an ignored one. */
function settledOf(o: WriteOutcome<RecoveryWrite, RecoverySkip>, listed: HelmRelease | undefined, now: number): ReleaseResult[] {
  if (listed === undefined) return []
  const result = (status: Status, reason: Reason, message: string, severity: ReleaseResult['severity']): ReleaseResult[] => [
    {
      namespace: listed.namespace,
      name: listed.name,
      sources: [],
      status,
      reason,
      message,
      durationMs: now - o.startedAt,
      severity,
      revisionBefore: (o.kind === 'written' ? o.read : o.kind === 'skipped' ? (o.live ?? listed) : listed).status.history[0]?.version,
    },
  ]
  switch (o.kind) {
    case 'written':
      return o.write.action === 'reset-budget' ? result(Status.Skipped, Reason.BudgetReset, 'Ready again; recovery attempts reset', 'none') : []
    case 'skipped':
      return o.skip.action === 'ignore' ? [] : result(Status.Skipped, o.skip.reason, o.skip.message, o.skip.severity)
    case 'failed':
      return result(Status.Failed, o.reason, o.message, 'error')
  }
}
