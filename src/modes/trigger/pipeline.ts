// Trigger mode, steps 1–7 of the contract: range → plan → connect → wait for apply →
// patch → wait for outcome → report. The plan and the per-release decision are pure; this
// file only sequences I/O behind the GitReader and ClusterClient interfaces.

import { randomInt } from 'node:crypto'
import { mapLimit } from '../../lib/concurrency.ts'
import { appliedSource } from '../../core/applied-source.ts'
import { formatDuration } from '../../lib/duration.ts'
import { newToken } from '../../engine/tokens.ts'
import { buildPatch, decide, patchLanded, SkipReason, supersededBy, type Decision } from './decision.ts'
import { liveDigest, short } from '../../core/digest.ts'
import type { Clock, Logger } from '../../engine/ports.ts'
import type { OutcomeWaiter, Triggered } from '../../engine/outcome.ts'
import { ConfigurationError, messageOf, TransientError } from '../../lib/errors.ts'
import type { GitReader } from '../../git/reader.ts'
import { keysFor, type Keys } from '../../core/keys.ts'
import { ConflictError, ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient, LiveSource, ReleaseEvent } from '../../kube/cluster.ts'
import { toReleaseManifest, type HelmRelease } from '../../core/helmrelease.ts'
import { releaseKey, type Digest, type HeadFile, type Plan, type PlannedRelease, type PlannedSource, type SourceId, type SourceRef } from '../../core/model.ts'
import { parseInParallel } from '../../git/parse-pool.ts'
import { pathFilter, planChanges, retarget, type PlanOptions } from '../../core/plan.ts'
import { clusterRefused, resolveRange, type GitHubEventLike, type Range } from '../../git/range.ts'
import { FAILED, Status, type ReleaseResult, type SourceResult, type TriggerReport } from '../../engine/result.ts'
import type { Settings } from '../../settings.ts'

/** What the run is about: the event and where it came from. */
export interface RunContext {
  readonly eventName: string
  readonly event: GitHubEventLike
  /** GITHUB_SHA */
  readonly sha: string
  /** Link to the workflow run, named in the Kubernetes Events. */
  readonly runUrl: string | undefined
}

export interface TriggerDeps {
  readonly git: GitReader
  /** Connects lazily: plan-only runs never need a cluster. */
  readonly connect: () => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  /** Absent or `wait: false` → results stop at Triggered. */
  readonly outcome?: OutcomeWaiter
}

export interface PreparedPlan {
  readonly range: Range
  readonly plan: Plan
  readonly headFiles: readonly HeadFile[]
}

/** The plan's options, from the settings. */
export function planOptionsOf(settings: Settings): PlanOptions {
  return {
    prefix: settings.annotationPrefix,
    defaultNamespace: settings.defaultNamespace,
    semanticDigest: settings.semanticDigest,
    discover: settings.discover,
    paths: settings.paths,
  }
}

/** Steps 1–2: the range and the pure plan. Needs git only; `plan` in the CLI stops here. */
export async function preparePlan(settings: Settings, context: RunContext, git: GitReader): Promise<PreparedPlan> {
  const range = await rangeOf(settings, context, git)
  const filter = pathFilter(settings.paths)
  const [changes, headFiles] = await Promise.all([
    range.fullSync ? Promise.resolve([]) : git.changedFiles(range.base, range.head, filter),
    git.headFiles(range.head, filter),
  ])
  const input = { changes, headFiles, fullSync: range.fullSync, options: planOptionsOf(settings) }
  return { range, plan: planChanges({ ...input, parsed: await parseInParallel(input) }), headFiles }
}

/** Step 1: the commits the run compares, from the inputs and the event. */
export function rangeOf(settings: Settings, context: RunContext, git: GitReader): Promise<Range> {
  return resolveRange(
    { event: context.event, eventName: context.eventName, inputs: { base: settings.base, head: settings.head, fullSync: settings.fullSync }, sha: context.sha },
    git,
  )
}

/** A report of the plan alone: nothing read from or written to a cluster. */
export function planReport(prepared: PreparedPlan, settings: Settings, why: string): TriggerReport {
  const { range, plan } = prepared
  return { range, plan, planOnly: why, dryRun: settings.dryRun, notes: range.notes, problems: plan.problems, sources: [], results: planned(plan) }
}

export async function runTrigger(settings: Settings, context: RunContext, deps: TriggerDeps): Promise<TriggerReport> {
  return executePlan(await preparePlan(settings, context, deps.git), settings, context, deps)
}

/** Steps 3–7 on a plan made here or read back from a fleet plan file (never planned again). */
export async function executePlan(prepared: PreparedPlan, settings: Settings, context: RunContext, deps: Omit<TriggerDeps, 'git'>): Promise<TriggerReport> {
  const keys = keysFor(settings.annotationPrefix)
  const { range, headFiles } = prepared
  let plan = prepared.plan
  const base = { range, dryRun: settings.dryRun, notes: [...range.notes], problems: plan.problems }

  const planOnly = clusterRefused(context.eventName, context.event, settings.allowPullRequests)
  const triggering = plan.sources.some((s) => s.change !== 'deleted')
  if (planOnly !== undefined) return planReport(prepared, settings, planOnly)
  if (!triggering) return { ...base, plan, planOnly: 'no ConfigMap or Secret that triggers a release changed', sources: [], results: [] }

  const cluster = await deps.connect()
  if (settings.discover) plan = retarget(plan, await clusterReleases(cluster, plan, base.notes, deps.log))
  const start = deps.clock.now()
  const deadline = start + settings.timeoutMs

  const baseline = await baselineOf(cluster, plan, settings)
  const sources = await applySources(cluster, plan, headFiles, range.head, settings, deadline, deps)
  const unapplied = new Map(sources.filter((s) => !s.applied).map((s) => [s.id, s.message]))
  // Tokens differ within the run by sequence; a random start keeps two runs patching in the
  // same millisecond from writing one token (helm-controller would ignore the second).
  const sequence = { n: randomInt(1000) * 1000 }
  const ready = plan.releases.filter((r) => !r.sources.some((s) => unapplied.has(s.id)))
  const observed = await observeReleases(cluster, ready, settings.maxConcurrency)
  const observedDigests = observed.size > 0 && (settings.waitForApply || settings.apply) ? await sourceDigests(cluster, ready, settings) : undefined
  const events: ReleaseEvent[] = []
  const patchDeadline = deps.clock.now() + settings.timeoutMs
  const outcomes = await mapLimit(plan.releases, settings.maxConcurrency, (release) =>
    triggerRelease(cluster, release, {
      keys,
      settings,
      context,
      unapplied,
      deps,
      sequence,
      head: range.head,
      baseline,
      observed,
      observedDigests,
      events,
      deadline: patchDeadline,
    }),
  )

  const triggered = outcomes.flatMap((o) => ('triggered' in o ? [o.triggered] : []))
  const settled = outcomes.flatMap((o) => ('result' in o ? [o.result] : []))
  // Events are a record, not the trigger: written once every patch is sent, while helm-controller works.
  const recorded = flushEvents(cluster, events, settings.maxConcurrency, deps.log)
  const waited =
    settings.wait && !settings.dryRun && deps.outcome !== undefined && triggered.length > 0
      ? await deps.outcome.wait(cluster, triggered, deps.clock.now() + settings.timeoutMs)
      : triggered.map((t) => triggeredResult(t, settings.dryRun, deps.clock.now()))
  await recorded
  await recordFailures(cluster, waited, triggered, context, deps)

  const results = [...settled, ...waited].sort((a, b) => releaseKey(a).localeCompare(releaseKey(b)))
  return { ...base, plan, planOnly: undefined, sources, results }
}

/**
 * The releases as they were before the new config could reach the cluster: the revision an
 * upgrade is measured from. helm-controller may upgrade on its own between the apply and our
 * patch (values changed reset its failure count); that upgrade is still this commit's.
 */
async function baselineOf(cluster: ClusterClient, plan: Plan, settings: Settings): Promise<ReadonlyMap<string, HelmRelease>> {
  if (!settings.wait || settings.dryRun) return new Map()
  const listed = await observeReleases(cluster, plan.releases, settings.maxConcurrency)
  const rest = plan.releases.filter((r) => !listed.has(releaseKey(r)))
  const read = await mapLimit(rest, settings.maxConcurrency, async (r) => {
    try {
      return await cluster.getRelease(r)
    } catch {
      return undefined // observed again, with its error reported, when patched
    }
  })
  const releases = [...listed.values(), ...read].flatMap((r) => (r === undefined ? [] : [r]))
  return new Map(releases.map((r) => [releaseKey(r), r] as const))
}

/** From this many targets in one namespace, one paginated LIST is cheaper than a GET each. */
export const LIST_FROM = 50

/**
 * The targets of namespaces with at least LIST_FROM of them, read with a LIST per namespace
 * (1 request per 500 releases instead of one each), by key; a target absent from its
 * namespace's list maps to undefined. A namespace that cannot be listed (no `list` verb, any
 * error) is left out: its releases are read one by one, and report their own errors.
 */
async function observeReleases(
  cluster: ClusterClient,
  releases: readonly PlannedRelease[],
  concurrency: number,
): Promise<Map<string, HelmRelease | undefined>> {
  const byNamespace = new Map<string, PlannedRelease[]>()
  for (const r of releases) {
    const targets = byNamespace.get(r.namespace)
    if (targets === undefined) byNamespace.set(r.namespace, [r])
    else targets.push(r)
  }
  const observed = new Map<string, HelmRelease | undefined>()
  const listed = [...byNamespace].filter(([, targets]) => targets.length >= LIST_FROM)
  await mapLimit(listed, concurrency, async ([namespace, targets]) => {
    let live: HelmRelease[]
    try {
      live = await cluster.listReleases(namespace)
    } catch {
      return
    }
    const byKey = new Map(live.map((r) => [releaseKey(r), r]))
    for (const t of targets) observed.set(releaseKey(t), byKey.get(releaseKey(t)))
  })
  return observed
}

/**
 * Each plain source of these releases read once (undefined: gone), for the superseded check of
 * the listed releases; undefined when a read fails (each release then reads its own).
 */
async function sourceDigests(
  cluster: ClusterClient,
  releases: readonly PlannedRelease[],
  settings: Settings,
): Promise<Map<SourceId, Digest | undefined> | undefined> {
  const ids = [...new Set(releases.flatMap((r) => r.sources.filter((s) => !s.encrypted).map((s) => s.id)))]
  try {
    const read = await mapLimit(ids, settings.maxConcurrency, async (id) => {
      const live = await cluster.getSource(sourceRefOf(id))
      return [id, live === undefined ? undefined : liveDigest(live, settings.semanticDigest)] as const
    })
    return new Map(read)
  } catch {
    return undefined
  }
}

async function flushEvents(cluster: ClusterClient, events: readonly ReleaseEvent[], concurrency: number, log: Logger): Promise<void> {
  await mapLimit(events, concurrency, async (event) => {
    try {
      await cluster.recordEvent(event, { dryRun: false })
    } catch (error) {
      // The trigger itself succeeded; an Event we may not create is worth a warning, not a failure.
      log.warning(`${releaseKey(event.release)}: could not record the Event: ${messageOf(error)}`)
    }
  })
}

function planned(plan: Plan): ReleaseResult[] {
  return plan.releases.map((r) => ({
    namespace: r.namespace,
    name: r.name,
    sources: r.sources,
    status: Status.Planned,
    reason: SkipReason.PlanOnly,
    message: 'plan only',
    durationMs: 0,
    severity: 'none',
  }))
}

/**
 * valuesFrom only names objects in the release's own namespace, so the releases that can read a
 * changed source live in that source's namespace: list those namespaces, not the whole cluster.
 */
async function clusterReleases(cluster: ClusterClient, plan: Plan, notes: string[], log: Logger) {
  const namespaces = [...new Set(plan.sources.map((s) => s.namespace))].sort()
  const lists = await Promise.all(
    namespaces.map(async (ns) => {
      try {
        return await cluster.listReleases(ns)
      } catch (error) {
        if (!(error instanceof ForbiddenError)) throw error
        const note = `Discovery could not list HelmReleases in namespace ${ns} (${messageOf(error)}); only annotations and repository manifests were used there.`
        notes.push(note)
        log.warning(note)
        return []
      }
    }),
  )
  return lists.flat().map(toReleaseManifest)
}

// ---- Step 4: wait for apply -------------------------------------------------------------

async function applySources(
  cluster: ClusterClient,
  plan: Plan,
  headFiles: readonly HeadFile[],
  head: string,
  settings: Settings,
  deadline: number,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<SourceResult[]> {
  const needed = plan.sources.filter((s) => s.change !== 'deleted' && s.targets.length > 0)
  const refused = settings.apply ? await applyManifests(cluster, needed, headFiles, settings, deps.log) : new Map<SourceId, string>()
  if (!settings.waitForApply && !settings.apply) return []
  return mapLimit(needed, settings.maxConcurrency, async (source) => {
    const why = refused.get(source.id)
    if (why === undefined) return waitForSource(cluster, source, head, settings, deadline, deps)
    deps.log.warning(why)
    return { id: source.id, applied: false, message: why, durationMs: 0 }
  })
}

/**
 * A flat, fast poll while the apply usually lands (kustomize-controller right after the push):
 * a backoff made a late apply wait up to 2 s to be seen. Slower after that, to spare the apiserver.
 */
const APPLY_POLL_MS = 200
const APPLY_FAST_POLL_MS = 30_000
const APPLY_SLOW_POLL_MS = 1_000

async function waitForSource(
  cluster: ClusterClient,
  source: PlannedSource,
  head: string,
  settings: Settings,
  deadline: number,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<SourceResult> {
  const started = deps.clock.now()
  let last = 'not found in the cluster'
  for (;;) {
    const live = await cluster.getSource(source)
    const state = live === undefined ? { arrived: false, seen: 'not found in the cluster' } : await arrived(cluster, source, live, head, settings)
    if (state.arrived) return { id: source.id, applied: true, message: state.seen, durationMs: deps.clock.now() - started }
    last = state.seen
    const delay = deps.clock.now() - started < APPLY_FAST_POLL_MS ? APPLY_POLL_MS : APPLY_SLOW_POLL_MS
    if (deps.clock.now() + delay > deadline) break
    await deps.clock.sleep(delay)
  }
  const message = `${source.id} never reached the planned content within the timeout (last seen: ${last}); nothing that reads it was triggered. Is kustomize-controller applying ${source.origin.file}? Or set apply: true.`
  deps.log.warning(message)
  return { id: source.id, applied: false, message, durationMs: deps.clock.now() - started }
}

/** The live object holds the commit's content: equal digest, or for SOPS Secrets, its Kustomization applied the head commit. */
async function arrived(
  cluster: ClusterClient,
  source: PlannedSource,
  live: LiveSource,
  head: string,
  settings: Settings,
): Promise<{ arrived: boolean; seen: string }> {
  if (source.encrypted) {
    const name = live.labels['kustomize.toolkit.fluxcd.io/name']
    const namespace = live.labels['kustomize.toolkit.fluxcd.io/namespace']
    if (name === undefined || namespace === undefined) {
      return { arrived: true, seen: 'encrypted; exists (no owning Flux Kustomization label to check its revision)' }
    }
    const revision = (await cluster.getKustomizationRevision(namespace, name)) ?? ''
    return { arrived: revision.includes(head), seen: `Kustomization ${namespace}/${name} at ${revision || 'no revision'}` }
  }
  const digest = liveDigest(live, settings.semanticDigest)
  return { arrived: digest === source.digest, seen: `digest ${short(digest)}, planned ${short(source.digest ?? '')}` }
}

/**
 * apply: true — server-side apply the changed sources from the head commit (no kustomize-controller),
 * exactly the documents the plan digested, reduced to the allow-list of core/applied-source.ts, never
 * forced over another field manager. Returns the sources refused, each with its sentence.
 */
async function applyManifests(
  cluster: ClusterClient,
  sources: readonly PlannedSource[],
  headFiles: readonly HeadFile[],
  settings: Settings,
  log: Logger,
): Promise<Map<SourceId, string>> {
  const files = new Map(headFiles.map((f) => [f.path, f]))
  const options = { keys: keysFor(settings.annotationPrefix), semanticDigest: settings.semanticDigest, maxAliasCount: 100 }
  const refused = new Map<SourceId, string>()
  await mapLimit(sources, settings.maxConcurrency, async (source) => {
    if (source.encrypted) {
      log.warning(`${source.id} is SOPS-encrypted: not applied (only kustomize-controller can decrypt it).`)
      return
    }
    const file = files.get(source.origin.file)
    if (file === undefined || file.content.type !== 'file')
      throw new ConfigurationError(`${source.id}: its manifest in ${source.origin.file} could not be read back for apply.`)
    const applied = appliedSource(Buffer.from(file.content.bytes).toString('utf8'), source, options)
    if ('refused' in applied) return void refused.set(source.id, applied.refused)
    try {
      await cluster.applyObject(applied.object, { dryRun: settings.dryRun })
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error
      refused.set(
        source.id,
        `${source.id}: another field manager owns fields this apply would change (${messageOf(error)}); apply: true never takes them over. Let that manager apply it.`,
      )
    }
  })
  return refused
}

// ---- Step 5: patch ------------------------------------------------------------------------

/** What one patch needs; trigger mode and watch mode (src/watch) both build one. */
export interface PatchScope {
  readonly keys: Keys
  readonly settings: Settings
  readonly context: RunContext
  readonly unapplied: ReadonlyMap<SourceId, string>
  readonly deps: Pick<TriggerDeps, 'clock' | 'log'>
  readonly sequence: { n: number }
  readonly head: string
  /** Releases as first observed, before waiting for the sources. */
  readonly baseline: ReadonlyMap<string, HelmRelease>
  /** Who asked, for the Event; default the commit (`for commit <sha>`). */
  readonly requestedBy?: string
  /**
   * Releases read just before the fan-out, by key (a LIST per namespace with many targets);
   * undefined for a key means listed and absent. The first attempt decides on this instead of
   * a GET; the patch carries its resourceVersion, so a release changed since conflicts and is
   * read again. Keys not in it are read one by one.
   */
  readonly observed?: ReadonlyMap<string, HelmRelease | undefined>
  /** Live source digests read after `observed` (same order as a GET then the source reads). */
  readonly observedDigests?: ReadonlyMap<SourceId, Digest | undefined>
  /** When given, the ConfigChanged Events are queued here and written after the fan-out (flushEvents). */
  readonly events?: ReleaseEvent[]
  /**
   * No release starts after this (clock ms): each request is bounded, but a hung apiserver
   * would otherwise take a bounded-but-huge time for each of thousands of releases.
   */
  readonly deadline?: number
}

export type Outcome = { readonly triggered: Triggered } | { readonly result: ReleaseResult }

const MAX_CONFLICTS = 5

export async function triggerRelease(cluster: ClusterClient, planned: PlannedRelease, scope: PatchScope): Promise<Outcome> {
  const { settings, deps } = scope
  const started = deps.clock.now()
  const settle = (status: Status, reason: string, message: string, severity: ReleaseResult['severity'], live?: HelmRelease): Outcome => ({
    result: {
      namespace: planned.namespace,
      name: planned.name,
      sources: planned.sources,
      status,
      reason,
      message,
      durationMs: deps.clock.now() - started,
      severity,
      revisionBefore: live?.status.history[0]?.version,
    },
  })
  const missing = planned.sources.filter((s) => scope.unapplied.has(s.id))
  if (missing.length > 0) {
    return settle(Status.Failed, SkipReason.SourceNotApplied, `not patched: ${missing.map((s) => s.id).join(', ')} never reached the cluster`, 'error')
  }
  if (scope.deadline !== undefined && started > scope.deadline) {
    return settle(
      Status.TimedOut,
      'NotAttempted',
      `not patched: the timeout (${formatDuration(settings.timeoutMs)}) passed before its turn; the API server answered too slowly or not at all`,
      'error',
    )
  }
  const done = async (release: HelmRelease, sent: Sent): Promise<Outcome> => {
    if (!settings.dryRun) await recordTrigger(cluster, release, planned, sent.decision, scope)
    return {
      triggered: { planned, release, before: sent.before, token: sent.token, force: sent.decision.force, reset: sent.decision.reset, startedAt: started },
    }
  }
  let sent: Sent | undefined
  try {
    for (let attempt = 1; ; attempt++) {
      const listed = attempt === 1 && scope.observed?.has(releaseKey(planned)) === true
      const live = listed ? scope.observed?.get(releaseKey(planned)) : await cluster.getRelease(planned)
      // Our last patch landed though its answer was lost (its retry then conflicted with it).
      if (sent !== undefined && live !== undefined && patchLanded(live, sent.token, scope.keys)) return await done(live, sent)
      const decision = decide({ planned, live, digestKey: scope.keys.configDigest, force: settings.force, reset: settings.reset })
      if (decision.action === 'skip' || live === undefined)
        return settle(
          Status.Skipped,
          skipReason(decision),
          skipMessage(decision),
          decision.action === 'skip' && decision.reason === SkipReason.NotFound ? 'warning' : 'none',
        )
      // After the release read whose resourceVersion the patch carries: a newer run that wrote
      // since makes the patch conflict, one that writes later writes last (never a regression).
      const moved =
        settings.waitForApply || settings.apply
          ? supersededBy(
              planned,
              listed && scope.observedDigests !== undefined ? scope.observedDigests : await liveDigests(cluster, planned, settings.semanticDigest),
            )
          : undefined
      if (moved !== undefined) return settle(Status.Skipped, skipReason(moved), skipMessage(moved), 'none')
      const token = newToken(new Date(deps.clock.now()), scope.sequence.n++)
      const patch = buildPatch(live, planned, decision, token, scope.keys)
      sent = { token, decision, before: scope.baseline.get(releaseKey(planned)) ?? live }
      try {
        return await done(await cluster.patchRelease(planned, patch, { dryRun: settings.dryRun }), sent)
      } catch (error) {
        // Someone changed the release between our read and our patch: observe again, decide again.
        if (!(error instanceof ConflictError) || attempt >= MAX_CONFLICTS) throw error
      }
    }
  } catch (error) {
    // The connection failed after a patch went out: it may have landed. Look once more, so the report says what happened.
    const uncertain = sent !== undefined && !settings.dryRun && error instanceof TransientError ? sent : undefined
    let unread = false
    if (uncertain !== undefined) {
      const live = await cluster.getRelease(planned).catch(() => {
        unread = true
        return undefined
      })
      if (live !== undefined && patchLanded(live, uncertain.token, scope.keys)) return await done(live, uncertain)
    }
    const message =
      uncertain !== undefined && unread
        ? `${messageOf(error)} Whether the patch (requestedAt ${uncertain.token}) landed could not be read back.`
        : messageOf(error)
    deps.log.warning(`${releaseKey(planned)}: ${message}`)
    return settle(Status.Failed, error instanceof ForbiddenError ? 'Forbidden' : 'PatchFailed', message, 'error')
  }
}

interface Sent {
  readonly token: string
  readonly decision: Extract<Decision, { action: 'trigger' }>
  /** The release as first observed (revision before). */
  readonly before: HelmRelease
}

function skipReason(decision: Decision): string {
  return decision.action === 'skip' ? decision.reason : SkipReason.NotFound
}

function skipMessage(decision: Decision): string {
  return decision.action === 'skip' ? decision.message : 'release not found'
}

/** Each plain source's live digest (undefined: gone). Encrypted ones are tracked by revision, not digest. */
async function liveDigests(cluster: ClusterClient, planned: PlannedRelease, semantic: boolean): Promise<Map<SourceId, Digest | undefined>> {
  const plain = planned.sources.filter((s) => !s.encrypted)
  const read = await Promise.all(
    plain.map(async (s) => {
      const live = await cluster.getSource(sourceRefOf(s.id))
      return [s.id, live === undefined ? undefined : liveDigest(live, semantic)] as const
    }),
  )
  return new Map(read)
}

function sourceRefOf(id: SourceId): SourceRef {
  const [kind = '', namespace = '', name = ''] = id.split('/')
  return { kind: kind === 'Secret' ? 'Secret' : 'ConfigMap', namespace, name }
}

async function recordTrigger(cluster: ClusterClient, release: HelmRelease, planned: PlannedRelease, decision: Decision, scope: PatchScope): Promise<void> {
  const sources = planned.sources.map((s) => `${s.id} ${short(s.digest)}`).join(', ')
  const why = decision.action === 'trigger' ? decision.why : ''
  const run = scope.context.runUrl === undefined ? '' : ` Run: ${scope.context.runUrl}`
  const by = scope.requestedBy ?? `for commit ${scope.head.slice(0, 12)}`
  const message = `Reconcile requested ${by}: ${why} (${sources}).${run}`
  if (scope.events !== undefined) {
    scope.events.push({ release, type: 'Normal', reason: 'ConfigChanged', message })
    return
  }
  try {
    await cluster.recordEvent({ release, type: 'Normal', reason: 'ConfigChanged', message }, { dryRun: false })
  } catch (error) {
    // The trigger itself succeeded; an Event we may not create is worth a warning, not a failure.
    scope.deps.log.warning(`${releaseKey(planned)}: could not record the Event: ${messageOf(error)}`)
  }
}

function triggeredResult(t: Triggered, dryRun: boolean, now: number): ReleaseResult {
  return {
    namespace: t.planned.namespace,
    name: t.planned.name,
    sources: t.planned.sources,
    status: dryRun ? Status.DryRun : Status.Triggered,
    reason: dryRun ? 'DryRun' : 'ReconcileRequested',
    message: dryRun ? 'server-side dry run of the patch succeeded; nothing written' : 'reconcile requested; outcome not awaited',
    token: t.token,
    revisionBefore: t.before.status.history[0]?.version,
    durationMs: now - t.startedAt,
    severity: 'none',
  }
}

/** A Warning Event on each release whose upgrade failed, so `kubectl describe` shows it too. */
async function recordFailures(
  cluster: ClusterClient,
  results: readonly ReleaseResult[],
  triggered: readonly Triggered[],
  context: RunContext,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<void> {
  const byKey = new Map(triggered.map((t) => [releaseKey(t.planned), t.release]))
  await Promise.all(
    results
      .filter((r) => FAILED.has(r.status))
      .map(async (r) => {
        const release = byKey.get(releaseKey(r))
        if (release === undefined) return
        const run = context.runUrl === undefined ? '' : ` Run: ${context.runUrl}`
        try {
          await cluster.recordEvent(
            { release, type: 'Warning', reason: 'UpgradeFailed', message: `${r.status} after the config change: ${r.message}.${run}` },
            { dryRun: false },
          )
        } catch (error) {
          deps.log.warning(`${releaseKey(r)}: could not record the Warning Event: ${messageOf(error)}`)
        }
      }),
  )
}
