// Step 6: wait until helm-controller has handled our token, then say what it did.
// Done when lastHandledReconcileAt (and forceAt/resetAt when sent) equals our token, or a
// plain request written over ours after our patch, the generation is observed, and Ready is
// True with nothing Reconciling (the rule the flux CLI applies), or Ready is False: the attempt
// that handled our token failed. Watches each namespace (replaying current state on every
// reconnect) under one overall deadline; `assess` is the pure part.

import { ConfigurationError, messageOf } from '../lib/errors.ts'
import type { ClusterClient } from '../kube/cluster.ts'
import { condition, type HelmRelease } from '../core/helmrelease.ts'
import { FLUX_KEYS } from '../core/keys.ts'
import { releaseKey, type PlannedRelease } from '../core/model.ts'
import { specHolds } from '../core/plan-rendered.ts'
import { hasAttempted, lastAttempted, type ChartAttempt } from '../core/chart-source.ts'
import { controllerReason, Reason, Status, type ReleaseResult } from './result.ts'
import type { Clock, Logger } from './ports.ts'

/** A release we patched (or, when only its spec changed, wait for), handed to the outcome waiter. */
export interface Triggered {
  readonly planned: PlannedRelease
  /** The release as the patch response returned it (as first observed, when not patched). */
  readonly release: HelmRelease
  /** The release as first observed in this run, before the new config arrived (revision before). */
  readonly before: HelmRelease
  /** The requestedAt token sent; undefined when not patched: helm-controller acts on the new generation. */
  readonly token: string | undefined
  /** The chart's new artifact (its chart source changed): done only once helm-controller has attempted it. */
  readonly chartAttempt?: ChartAttempt
  readonly force: boolean
  readonly reset: boolean
  readonly startedAt: number
}

/** Step 6: waits for helm-controller to handle each token (createOutcomeWaiter below). */
export interface OutcomeWaiter {
  wait(cluster: ClusterClient, triggered: readonly Triggered[], deadline: number): Promise<ReleaseResult[]>
}

/** The release's result once helm-controller has handled `t.token`; undefined while it has not. */
export function assess(t: Triggered, live: HelmRelease, now: number): ReleaseResult | undefined {
  if (!handled(t, live)) return undefined
  const result = judge(t, live, now)
  // Said whenever requestedAt moved on: the outcome may be that later request's as much as ours.
  const later = live.annotations[FLUX_KEYS.requestedAt]
  if (t.token === undefined || later === undefined || later === t.token) return result
  return { ...result, message: `${result.message} (a later request, requestedAt ${later}, came while helm-controller worked on ours)` }
}

/** What helm-controller did, once it has handled the request. */
function judge(t: Triggered, live: HelmRelease, now: number): ReleaseResult {
  const ready = condition(live, 'Ready')
  const before = t.before.status.history[0]
  const after = live.status.history[0]
  const base = {
    namespace: t.planned.namespace,
    name: t.planned.name,
    sources: t.planned.sources,
    token: t.token,
    revisionBefore: before?.version,
    revisionAfter: after?.version,
    durationMs: now - t.startedAt,
  }
  if (ready?.status === 'False') {
    return {
      ...base,
      status: Status.Failed,
      reason: ready.reason ? controllerReason(ready.reason) : Reason.NotReady,
      message: `${ready.message || 'Ready=False'}${retryNote(live)}`,
      severity: 'error',
    }
  }
  if (after === undefined || after.status !== 'deployed') {
    return {
      ...base,
      status: Status.Failed,
      reason: Reason.NotDeployed,
      message: `latest Helm release is ${after?.status ?? 'missing'}, not deployed`,
      severity: 'error',
    }
  }
  const newRevision = before === undefined || after.version !== before.version
  if (newRevision || after.configDigest !== before.configDigest) {
    return {
      ...base,
      status: Status.Upgraded,
      reason: ready?.reason ? controllerReason(ready.reason) : Reason.UpgradeSucceeded,
      message: ready?.message || `revision ${after.version} deployed`,
      severity: 'none',
    }
  }
  const message =
    t.chartAttempt !== undefined && hasAttempted(t.before, t.chartAttempt)
      ? `helm-controller had attempted this chart before the run first read the release (revision ${after.version}); no newer Helm revision`
      : t.token !== undefined
        ? 'reconciled; values unchanged, no new Helm revision'
        : t.chartAttempt !== undefined
          ? 'new chart artifact reconciled; chart and values unchanged, no new Helm revision'
          : `new generation ${live.generation} reconciled; no new Helm revision`
  return { ...base, status: Status.Unchanged, reason: Reason.Unchanged, message, severity: 'none' }
}

/** Ready's reason when helm-controller stops waiting for workloads because a newer request came (helmrelease_controller.go, Flux ≥ 2.8). */
const HEALTH_CHECK_CANCELED = 'HealthCheckCanceled'

function handled(t: Triggered, live: HelmRelease): boolean {
  const s = live.status
  // A release whose spec changed is judged on its new generation, once the cluster holds it.
  if (t.planned.spec !== undefined && !specHolds(live.spec, t.planned.spec.expect)) return false
  if (t.chartAttempt !== undefined && !hasAttempted(live, t.chartAttempt)) return false
  if (t.token !== undefined) {
    if (s.lastHandledReconcileAt !== t.token && replacedBy(t, live) === undefined) return false
    if (t.force && s.lastHandledForceAt !== t.token) return false
    if (t.reset && s.lastHandledResetAt !== t.token) return false
  }
  if (s.observedGeneration !== live.generation) return false
  const ready = condition(live, 'Ready')
  // helm-controller writes lastHandledReconcileAt in the final status patch of the attempt
  // that saw our token, so Ready=False now is that attempt's failure. It keeps
  // Reconciling=True while it retries on its own (a render error retries forever with
  // backoff): the committer's upgrade failed all the same, and waiting would only time out.
  // Except a health check cut short for a newer request (the CancelHealthCheckOnNewRevision
  // gate): no verdict on anything, and the next attempt, for that request, follows at once.
  if (ready?.status === 'False') return ready.reason !== HEALTH_CHECK_CANCELED
  return ready?.status === 'True' && condition(live, 'Reconciling')?.status !== 'True'
}

/**
 * The request that replaced ours and was handled, if one did: our patch set requestedAt to our
 * token, so another value there was written after it (a newer run, `flux reconcile`), and the
 * reconcile that handled it read our commit's config too. A plain request cannot stand in for a
 * forceAt or resetAt we sent.
 */
function replacedBy(t: Triggered, live: HelmRelease): string | undefined {
  const current = live.annotations[FLUX_KEYS.requestedAt]
  if (t.force || t.reset || current === undefined || current === t.token) return undefined
  return live.status.lastHandledReconcileAt === current ? current : undefined
}

/** Said after a failure: whether helm-controller goes on retrying by itself. */
function retryNote(live: HelmRelease): string {
  if (condition(live, 'Stalled')?.status === 'True') return ' (stalled: helm-controller will not retry until reset)'
  if (condition(live, 'Reconciling')?.status === 'True')
    return ` (helm-controller keeps retrying; ${live.status.failures} failure${live.status.failures === 1 ? '' : 's'} so far)`
  return ''
}

/** What was last seen, for a TimedOut result. */
export function lastSeen(t: Triggered, live: HelmRelease | undefined): string {
  if (live === undefined) return t.token === undefined ? 'release not seen in the cluster' : 'release not seen since the patch'
  const ready = condition(live, 'Ready')
  const reconciling = condition(live, 'Reconciling')
  const handledNote =
    t.planned.spec !== undefined && !specHolds(live.spec, t.planned.spec.expect)
      ? `new spec not applied yet (${t.planned.spec.fields.join(', ')})`
      : t.chartAttempt !== undefined && !hasAttempted(live, t.chartAttempt)
        ? `chart ${t.chartAttempt.value.slice(0, 19)} not attempted yet (last attempted ${lastAttempted(live, t.chartAttempt.kind).slice(0, 19) || 'none'})`
        : t.token === undefined
          ? `generation ${live.generation}, observed ${live.status.observedGeneration}`
          : live.status.lastHandledReconcileAt === t.token
            ? 'token handled'
            : `lastHandledReconcileAt=${live.status.lastHandledReconcileAt || 'none'} (waiting for ${t.token})`
  const readyNote =
    ready === undefined ? 'no Ready condition' : `Ready=${ready.status}${ready.reason ? ` ${ready.reason}` : ''}${ready.message ? `: ${ready.message}` : ''}`
  return `${handledNote}; ${readyNote}${reconciling?.status === 'True' ? `; Reconciling: ${reconciling.message}` : ''}`
}

export function createOutcomeWaiter(deps: { clock: Clock; log: Logger }): OutcomeWaiter {
  return {
    async wait(cluster, triggered, deadline) {
      const pending = new Map(triggered.map((t) => [releaseKey(t.planned), t]))
      const seen = new Map<string, HelmRelease>()
      const done = new Map<string, ReleaseResult>()
      const namespaces = [...new Set(triggered.map((t) => t.planned.namespace))]
      const observe = (live: HelmRelease): void => {
        const key = releaseKey(live)
        const t = pending.get(key)
        if (t === undefined) return
        seen.set(key, live)
        const result = assess(t, live, deps.clock.now())
        if (result === undefined) return
        pending.delete(key)
        done.set(key, result)
      }
      const pendingIn = (ns: string): Triggered[] => [...pending.values()].filter((t) => t.planned.namespace === ns)
      await Promise.all(
        namespaces.map(async (ns) => {
          const watched = await watchNamespace(cluster, ns, () => pendingIn(ns).length > 0, observe, deadline, deps)
          if (!watched) await pollNamespace(cluster, () => pendingIn(ns), observe, deadline, deps)
        }),
      )
      const now = deps.clock.now()
      return triggered.map((t) => {
        const key = releaseKey(t.planned)
        return (
          done.get(key) ?? {
            namespace: t.planned.namespace,
            name: t.planned.name,
            sources: t.planned.sources,
            token: t.token,
            status: Status.TimedOut,
            reason: Reason.TimedOut,
            message: `helm-controller did not finish within the timeout; last seen: ${lastSeen(t, seen.get(key))}`,
            revisionBefore: t.before.status.history[0]?.version,
            revisionAfter: seen.get(key)?.status.history[0]?.version,
            durationMs: now - t.startedAt,
            severity: 'error',
          }
        )
      })
    },
  }
}

/**
 * Re-opens the watch when the server ends it (timeouts, restarts) until nothing is pending or
 * the deadline passes. Returns false when watching is refused (RBAC without `watch`): the
 * caller then polls with GETs instead of retrying what can never succeed.
 */
async function watchNamespace(
  cluster: ClusterClient,
  namespace: string,
  anyPending: () => boolean,
  observe: (r: HelmRelease) => void,
  deadline: number,
  deps: { clock: Clock; log: Logger },
): Promise<boolean> {
  let backoff = 500
  while (anyPending() && deps.clock.now() < deadline) {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - deps.clock.now()))
    const check = setInterval(() => {
      if (!anyPending()) controller.abort()
    }, 100)
    const started = deps.clock.now()
    try {
      await cluster.watchReleases(
        namespace,
        (r) => {
          observe(r)
          if (!anyPending()) controller.abort()
        },
        controller.signal,
      )
      // A watch the server ends at once (overloaded, restarting) must not become a hot loop.
      if (deps.clock.now() - started < 1_000 && anyPending()) await deps.clock.sleep(250)
      backoff = 500
    } catch (error) {
      if (error instanceof ConfigurationError) {
        deps.log.warning(`${messageOf(error)} Polling the releases in ${namespace} instead.`)
        return false
      }
      deps.log.warning(`watching HelmReleases in ${namespace} failed (${messageOf(error)}); retrying`)
      await deps.clock.sleep(Math.min(backoff, Math.max(0, deadline - deps.clock.now())))
      backoff = Math.min(backoff * 2, 5_000)
    } finally {
      clearTimeout(timer)
      clearInterval(check)
    }
  }
  return true
}

/** GET each pending release until it is done or the deadline passes. */
async function pollNamespace(
  cluster: ClusterClient,
  pending: () => readonly Triggered[],
  observe: (r: HelmRelease) => void,
  deadline: number,
  deps: { clock: Clock; log: Logger },
): Promise<void> {
  let delay = 500
  while (pending().length > 0 && deps.clock.now() < deadline) {
    for (const t of pending()) {
      try {
        const live = await cluster.getRelease(t.planned)
        if (live !== undefined) observe(live)
      } catch (error) {
        deps.log.warning(`reading ${releaseKey(t.planned)} failed (${messageOf(error)})`)
      }
    }
    if (pending().length === 0) return
    await deps.clock.sleep(Math.min(delay, Math.max(0, deadline - deps.clock.now())))
    delay = Math.min(delay * 2, 2_000)
  }
}
