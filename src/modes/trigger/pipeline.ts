// Trigger mode, steps 1–7 of the contract: range → plan → connect → wait for apply →
// patch → wait for outcome → report. The plan and the per-release decision are pure; this
// file only sequences I/O behind the GitReader and ClusterClient interfaces.

import { mapLimit } from '../../lib/concurrency.ts'
import { appliedObjectOf, appliedSource, type AppliedSource } from '../../core/applied-source.ts'
import { tokenSequence } from '../../engine/tokens.ts'
import { SkipReason, type TriggerOptions } from './action.ts'
import { sourceRefOf, triggerRelease, type TriggerOutcome, type TriggerScope } from './release.ts'
import { chartFetcher, type ChartFetcher } from './chart-fetch.ts'
import { isSecretId, keyedReads, liveDigest, recordedDigestOf, shownDigest, type DigestKey, type SecretDigests } from '../../core/digest.ts'
import { DIGEST_KEY_SECRET, loadDigestKey } from '../../kube/digest-key.ts'
import { eventRecorder, type Clock, type EventSink, type Logger } from '../../engine/ports.ts'
import type { OutcomeWaiter, Triggered } from '../../engine/outcome.ts'
import { ConfigurationError, messageOf } from '../../lib/errors.ts'
import type { GitReader } from '../../git/reader.ts'
import { keysFor, type Keys } from '../../core/keys.ts'
import { ConflictError, ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient, LiveSource, ReleaseEvent } from '../../kube/cluster.ts'
import { sourceChanges, type SourceChanges } from './source-changes.ts'
import { toHelmRelease, toReleaseManifest, type HelmRelease } from '../../core/helmrelease.ts'
import {
  byReleaseKey,
  chartSourceId,
  releaseKey,
  type Digest,
  type HeadFile,
  type Plan,
  type PlannedRelease,
  type PlannedSource,
  type SourceId,
} from '../../core/model.ts'
import { parseInParallel } from '../../git/parse-pool.ts'
import { clusteredPlan, clusterKey, inCluster } from '../../core/cluster-plan.ts'
import { clusterLocator, type LocateCluster } from './own-cluster.ts'
import { readBefore, withDeployed } from './deployed.ts'
import { withPredictions, type Predictor, type RenderedTree } from './predict.ts'
import type { PredictedDiff } from '../../core/predicted-diff.ts'
import { pathFilter, planChanges, retarget, type PlanOptions } from '../../core/plan.ts'
import { planRendered, renderedReleaseKeys, specHolds } from '../../core/plan-rendered.ts'
import type { RenderedRepository } from '../../core/rendered.ts'
import { resolveRange, type Range } from '../../git/range.ts'
import type { GitHubEventLike } from '../../github/event.ts'
import { FAILED, Reason, requestedResult, Status, type ReleaseResult, type SourceResult, type TriggerReport } from '../../engine/result.ts'
import type { PlanSettings, TriggerRunOptions } from '../../settings.ts'

/** What the run is about: the event and where it came from. */
export interface RunContext {
  readonly eventName: string
  readonly event: GitHubEventLike
  /** GITHUB_SHA */
  readonly sha: string
  /** Link to the workflow run, named in the Kubernetes Events. */
  readonly runUrl: string | undefined
  /** The pull request behind the commit, when the GitHub report found one (stamped for Flux). */
  readonly changeRequest?: number
  /** Why this run must not touch a cluster (github/policy.ts, decided once by the entry); undefined: it may. */
  readonly refused: string | undefined
}

/** A range rendered as Flux applies it, at base (empty under full-sync) and head. */
export interface RenderedChange {
  readonly base: RenderedRepository
  readonly head: RenderedRepository
  /** The GitRepositories taken as this repository (`<namespace>/<name>`): a chart they hold is read from the checkout. */
  readonly source?: { readonly gitRepositories: readonly string[] }
}

/** The range rendered, or undefined when no Flux Kustomization reads this repository (then files are read one by one). */
export interface RangeReading {
  readonly rendered: RenderedChange | undefined
  /** Which way the repository was read and why: one sentence, always in the run's notes. */
  readonly reading: string
  /** The repository holds several clusters' trees and `rendered` is this one's (found by `locate`). */
  readonly cluster?: string
  /** The repository holds several clusters' trees and no cluster said which is its own: each rendered apart. */
  readonly clusters?: readonly ClusterReading[]
}

/** One cluster tree's range, rendered apart from the others'. */
export interface ClusterReading {
  readonly name: string
  readonly rendered: RenderedChange | undefined
  readonly reading: string
}

/** `locate`: a run that talks to a cluster says which of several cluster trees is its own. */
export type RenderRange = (range: Range, locate?: LocateCluster) => Promise<RangeReading>

export interface TriggerDeps {
  readonly git: GitReader
  /** Absent: the file-by-file plan only. */
  readonly render?: RenderRange
  /** Connects lazily: plan-only runs never need a cluster. */
  readonly connect: () => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  /** Absent or `wait: false` → results stop at Triggered. */
  readonly outcome?: OutcomeWaiter
  /** Plan-only runs with the diff on: what each planned release's upgrade will change (predict.ts). */
  readonly predict?: Predictor
}

export interface PreparedPlan {
  readonly range: Range
  readonly plan: Plan
  readonly headFiles: readonly HeadFile[]
  /** Present when the plan was made on rendered objects: `apply: true` applies those. */
  readonly rendered?: RenderedChange
  /** A rendered plan read back from a fleet plan file: the releases its rendered commit held (`namespace/name`). */
  readonly knownReleases?: readonly string[]
  /** The repository holds several cluster trees: the one planned (a run that found its cluster), or each (plan only). */
  readonly clusters?: readonly string[]
  /** The rendered range of each tree planned (one without `cluster` for a single tree): what the diff renders releases from. */
  readonly trees?: readonly RenderedTree[]
}

/** The plan's options, from the settings. */
export function planOptionsOf(settings: PlanSettings): PlanOptions {
  return {
    prefix: settings.annotationPrefix,
    defaultNamespace: settings.defaultNamespace,
    semanticDigest: settings.semanticDigest,
    discover: settings.discover,
    paths: settings.paths,
    crossNamespaceTargets: settings.crossNamespaceTargets,
  }
}

/** Trigger's release options, from the settings: who asked (for the Event) and the run's link. */
export function triggerOptionsOf(settings: TriggerRunOptions, keys: Keys, requestedBy: string, runUrl: string | undefined): TriggerOptions {
  return { keys, force: settings.force, reset: settings.reset, checkSuperseded: settings.waitForApply || settings.apply, requestedBy, runUrl }
}

/** A commit's trigger names the commit (and its pull request) for Flux's notification-controller, unless turned off. */
function attributionOf(settings: TriggerRunOptions, context: RunContext, head: string): Pick<TriggerOptions, 'attribution'> {
  if (!settings.fluxAttribution) return {}
  const changeRequest = context.changeRequest ?? context.event.pull_request?.number
  return { attribution: { commit: head, ...(changeRequest === undefined ? {} : { changeRequest }) } }
}

/**
 * Steps 1–2: the range and the pure plan. Needs git only (`plan` in the CLI stops here), unless
 * `locate` is given: then, in a repository of several cluster trees, the cluster says which is its own.
 */
export async function preparePlan(
  settings: TriggerRunOptions,
  context: RunContext,
  git: GitReader,
  render?: RenderRange,
  locate?: LocateCluster,
): Promise<PreparedPlan> {
  const range = await rangeOf(settings, context, git)
  // Where Flux Kustomizations apply the repository, its objects are what they render to.
  const read = render === undefined ? undefined : await render(range, locate)
  const options = planOptionsOf(settings)
  if (read?.clusters !== undefined) {
    const parts = read.clusters.map((c) => ({ name: c.name, rendered: c.rendered, plan: noting(planOf(c.rendered, range, options), c.reading) }))
    const trees = parts.flatMap((p) => (p.rendered === undefined ? [] : [{ cluster: p.name, rendered: p.rendered }]))
    return { range, plan: noting(clusteredPlan(parts), read.reading), headFiles: [], clusters: parts.map((p) => p.name), trees }
  }
  const rendered = read?.rendered
  if (rendered !== undefined && rendered.head.kustomizations.length > 0) {
    const plan = planOf(rendered, range, options)
    const named = read?.cluster === undefined ? plan : inCluster(plan, read.cluster)
    const trees = [{ cluster: read?.cluster, rendered }]
    return { range, plan: noting(named, read?.reading), headFiles: [], rendered, trees, ...(read?.cluster === undefined ? {} : { clusters: [read.cluster] }) }
  }
  const filter = pathFilter(settings.paths)
  const { changes, headFiles } = await git.changeAndHead({ base: range.base, head: range.head, filter, withChanges: !range.fullSync })
  const input = { changes, headFiles, fullSync: range.fullSync, options: planOptionsOf(settings) }
  return { range, plan: noting(planChanges({ ...input, parsed: await parseInParallel(input) }), read?.reading), headFiles }
}

/** A cluster tree's plan: nothing when no Flux Kustomization of it reads this repository. */
function planOf(rendered: RenderedChange | undefined, range: Range, options: PlanOptions): Plan {
  if (rendered === undefined) return { sources: [], releases: [], problems: [] }
  return planRendered({ base: rendered.base, head: rendered.head, fullSync: range.fullSync, options })
}

/** The plan with how the repository was read as its first note. */
function noting(plan: Plan, reading: string | undefined): Plan {
  return reading === undefined ? plan : { ...plan, notes: [reading, ...(plan.notes ?? [])] }
}

/** Step 1: the commits the run compares, from the inputs and the event. */
export function rangeOf(settings: TriggerRunOptions, context: RunContext, git: GitReader): Promise<Range> {
  return resolveRange(
    { event: context.event, eventName: context.eventName, inputs: { base: settings.base, head: settings.head, fullSync: settings.fullSync }, sha: context.sha },
    git,
  )
}

/** A report of the plan alone: nothing read from or written to a cluster; with `predicted`, each release's predicted diff. */
export function planReport(prepared: PreparedPlan, settings: TriggerRunOptions, why: string, predicted?: ReadonlyMap<string, PredictedDiff>): TriggerReport {
  const { range, plan, clusters } = prepared
  const notes = [...range.notes, ...(plan.notes ?? [])]
  const results = withPredictions(withChanges(planned(plan), plan), predicted)
  return {
    range,
    plan,
    planOnly: why,
    dryRun: settings.dryRun,
    notes,
    problems: plan.problems,
    sources: [],
    results,
    ...(clusters === undefined ? {} : { clusters }),
  }
}

export async function runTrigger(settings: TriggerRunOptions, context: RunContext, deps: TriggerDeps): Promise<TriggerReport> {
  // One connection for the run: finding its cluster tree and triggering share it.
  let connected: Promise<ClusterClient> | undefined
  const connect = (): Promise<ClusterClient> => (connected ??= deps.connect())
  const locate = context.refused === undefined ? clusterLocator(connect) : undefined
  return executePlan(await preparePlan(settings, context, deps.git, deps.render, locate), settings, context, { ...deps, connect })
}

/** Steps 3–7 on a plan made here or read back from a fleet plan file (never planned again). */
export async function executePlan(
  prepared: PreparedPlan,
  settings: TriggerRunOptions,
  context: RunContext,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<TriggerReport> {
  const { clusters } = prepared
  if (context.refused !== undefined || clusters === undefined) return executeOn(prepared, settings, context, deps)
  const [cluster, ...others] = clusters
  // A cluster is one tree: a plan of several (read without a cluster to tell which) is never executed.
  if (cluster === undefined || others.length > 0)
    throw new ConfigurationError(`The plan covers ${clusters.length} cluster trees; a trigger run executes one: set the cluster-root input.`)
  const report = await executeOn(prepared, settings, context, deps)
  return { ...report, results: report.results.map((r) => ({ ...r, cluster })), clusters }
}

async function executeOn(prepared: PreparedPlan, settings: TriggerRunOptions, context: RunContext, deps: Omit<TriggerDeps, 'git'>): Promise<TriggerReport> {
  const keys = keysFor(settings.annotationPrefix)
  const { range, rendered } = prepared
  let plan = prepared.plan
  const base = { range, dryRun: settings.dryRun, notes: [...range.notes, ...(plan.notes ?? [])], problems: plan.problems }

  const planOnly = context.refused
  const triggering = plan.sources.some((s) => s.change !== 'deleted') || plan.releases.some((r) => r.spec !== undefined || r.chart !== undefined)
  if (planOnly !== undefined) return planReport(prepared, settings, planOnly, await deps.predict?.(prepared))
  if (!triggering) return { ...base, plan, planOnly: 'no ConfigMap, Secret or chart source that triggers a release changed', sources: [], results: [] }

  const cluster = await deps.connect()
  if (settings.discover) {
    // Releases the rendered repository holds were planned with the key rule; the cluster adds only the others.
    const known = rendered === undefined ? new Set(prepared.knownReleases) : renderedReleaseKeys(rendered.head)
    const live = await clusterReleases(cluster, plan, base.notes, deps.log)
    plan = retarget(
      plan,
      live.filter((r) => !known.has(releaseKey(r))),
    )
  }
  const start = deps.clock.now()
  const deadline = start + settings.timeoutMs

  // Secret digests are recorded keyed with the cluster's key, read (or created) only when a release reads a Secret;
  // read before anything is written, so a missing key fails the run with the cluster untouched.
  const digestKey = await digestKeyFor(cluster, plan, settings, deps.log)
  const baseline = await baselineOf(cluster, plan, settings)
  // Read before any patch: helm-controller may prune it (maxHistory) once the upgrade lands.
  const deployedBefore = await readBefore(cluster, [...baseline.values()], settings.maxConcurrency)
  const sources = await applySources(cluster, plan, manifestsOf(prepared, settings), range.head, settings, deadline, deps)
  const unapplied = new Map(sources.filter((s) => !s.applied).map((s) => [s.id, s.message]))
  if (digestKey !== undefined) plan = await keySecretReads(cluster, plan, digestKey, settings)
  // Releases whose spec or chart alone changed are not patched: helm-controller acts on the new generation or artifact.
  const toPatch = plan.releases.filter((r) => r.sources.length > 0)
  const ready = toPatch.filter((r) => r.spec === undefined && r.chart === undefined && !r.sources.some((s) => unapplied.has(s.id)))
  const observed = await observeReleases(cluster, ready, settings.maxConcurrency)
  const observedDigests = observed.size > 0 && (settings.waitForApply || settings.apply) ? await sourceDigests(cluster, ready, settings, digestKey) : undefined
  // Events are a record, not the trigger: queued, and written once every patch is sent, while helm-controller works.
  const events: ReleaseEvent[] = []
  const scope: TriggerScope = {
    options: { ...triggerOptionsOf(settings, keys, `for commit ${range.head.slice(0, 12)}`, context.runUrl), ...attributionOf(settings, context, range.head) },
    write: {
      cluster,
      requestedAtKey: keys.requestedAt,
      dryRun: settings.dryRun,
      clock: deps.clock,
      log: deps.log,
      tokens: tokenSequence(),
      events: { record: async (event) => void events.push(event) },
    },
    semanticDigest: settings.semanticDigest,
    ...(digestKey === undefined ? {} : { digestKey }),
    timeoutMs: settings.timeoutMs,
    unapplied,
    baseline,
    observed,
    ...(observedDigests === undefined ? {} : { observedDigests }),
    deadline: deps.clock.now() + settings.timeoutMs,
  }
  const chartFetch = chartFetcher(cluster, deadline, deps)
  const outcomes = await mapLimit(toPatch, settings.maxConcurrency, async (release): Promise<TriggerOutcome> => {
    // Spec and sources changed together: patch once the cluster holds both, so no upgrade runs on half the commit.
    const specMissing = release.spec !== undefined && settings.waitForApply ? await waitForSpec(cluster, release, deadline, deps) : undefined
    if (specMissing !== undefined) return { kind: 'settled', result: specMissing }
    // Chart and values changed together: patch once source-controller holds the new chart as well.
    const chart = release.chart === undefined || settings.dryRun ? undefined : await chartFetch.fetch({ ...release, chart: release.chart })
    if (chart?.kind === 'settled') return chart
    const outcome = await triggerRelease(release, scope)
    return chart === undefined || outcome.kind === 'settled' ? outcome : { ...outcome, triggered: { ...outcome.triggered, chartAttempt: chart.attempt } }
  })

  const triggered = outcomes.flatMap((o) => (o.kind === 'triggered' ? [o.triggered] : []))
  const awaiting = await awaitChartFetches(awaitSpecChanges(plan, baseline, settings, deps.clock.now()), chartFetch)
  const settled = [...outcomes.flatMap((o) => (o.kind === 'settled' ? [o.result] : [])), ...awaiting.settled]
  const recorder = eventRecorder(cluster, deps.log)
  const recorded = mapLimit(events, settings.maxConcurrency, (event) => recorder.record(event))
  const watched = [...triggered, ...awaiting.waits]
  const waited =
    settings.wait && !settings.dryRun && deps.outcome !== undefined && watched.length > 0
      ? await deps.outcome.wait(cluster, watched, deps.clock.now() + settings.timeoutMs)
      : triggered.map((t) => requestedResult(t, { reason: Reason.ReconcileRequested, what: 'reconcile' }, settings.dryRun, deps.clock.now()))
  await recorded
  await recordFailures(waited, triggered, context, recorder)

  const changed = withChanges([...settled, ...waited], plan, chartFetch.revisions()).map(withoutSecretDigests)
  const results = (await withDeployed(cluster, changed, deployedBefore, baseline, settings.maxConcurrency)).sort(byReleaseKey)
  return { ...base, plan, planOnly: undefined, sources, results }
}

/** A result names its Secrets, never their digests (results reach outputs, summaries and result files). */
function withoutSecretDigests(result: ReleaseResult): ReleaseResult {
  if (!result.sources.some((s) => isSecretId(s.id))) return result
  return { ...result, sources: result.sources.map((s) => (isSecretId(s.id) ? { id: s.id, ...(s.origin === undefined ? {} : { origin: s.origin }) } : s)) }
}

/** The key of Secret digests when a release of the plan reads a Secret (kube/digest-key.ts); undefined otherwise. */
async function digestKeyFor(cluster: ClusterClient, plan: Plan, settings: TriggerRunOptions, log: Logger): Promise<DigestKey | undefined> {
  if (!plan.releases.some((r) => r.sources.some((s) => isSecretId(s.id)))) return undefined
  const namespace = settings.digestKeyNamespace
  const loaded = await loadDigestKey(cluster, { namespace, create: !settings.dryRun })
  if (loaded.created) log.info(`created the digest key Secret ${namespace}/${DIGEST_KEY_SECRET}: Secret digests are recorded keyed with it`)
  if (loaded.ephemeral)
    log.info(
      `dry run: no digest key Secret ${namespace}/${DIGEST_KEY_SECRET} yet (create it once: deploy/rbac/digest-key-role.yaml gives the command); Secret digests compared with a key of this run only`,
    )
  return loaded.key
}

/**
 * The plan with each Secret read's digest keyed. A Secret's content is the plan's where the plan
 * has it in plain text; an encrypted one (the repository holds ciphertext) and one a plan file
 * carries no digest for are keyed from the live object, which wait-for-apply saw arrive.
 */
async function keySecretReads(cluster: ClusterClient, plan: Plan, key: DigestKey, settings: TriggerRunOptions): Promise<Plan> {
  const planned = new Map(plan.sources.map((s) => [s.id, s]))
  const ids = [...new Set(plan.releases.flatMap((r) => r.sources.filter((s) => isSecretId(s.id)).map((s) => s.id)))]
  const fromLive = ids.filter((id) => {
    const source = planned.get(id)
    return source === undefined || source.encrypted || source.digest === undefined
  })
  const live = new Map(
    await mapLimit(fromLive, settings.maxConcurrency, async (id) => {
      const object = await cluster.getSource(sourceRefOf(id))
      return [id, object === undefined ? undefined : liveDigest(object, settings.semanticDigest)] as const
    }),
  )
  const digestsOf = (id: SourceId): SecretDigests => {
    const fromPlan = planned.get(id)?.digest
    if (!live.has(id)) return { current: fromPlan, legacy: fromPlan }
    return { current: live.get(id), legacy: fromPlan ?? live.get(id) }
  }
  return { ...plan, releases: plan.releases.map((r) => ({ ...r, sources: keyedReads(r.sources, digestsOf, key) })) }
}

/** Each result of a release whose spec or chart source changed says which fields, where, and the chart fetched. */
function withChanges(results: readonly ReleaseResult[], plan: Plan, revisions: ReadonlyMap<string, string> = new Map()): ReleaseResult[] {
  const planned = new Map(plan.releases.map((r) => [clusterKey(r, releaseKey(r)), r]))
  return results.map((r) => {
    const { spec, chart } = planned.get(clusterKey(r, releaseKey(r))) ?? {}
    const revision = chart === undefined ? undefined : revisions.get(chartSourceId(chart))
    return {
      ...r,
      ...(spec === undefined ? {} : { spec: { fields: spec.fields, origin: spec.origin } }),
      ...(chart === undefined
        ? {}
        : { chart: { source: chartSourceId(chart), fields: chart.fields, origin: chart.origin, ...(revision === undefined ? {} : { revision }) } }),
    }
  })
}

/**
 * Releases whose spec alone changed: waited for like triggered ones (their new generation
 * observed, then the usual Ready/history checks), or settled now when there is nothing to wait for.
 */
function awaitSpecChanges(
  plan: Plan,
  baseline: ReadonlyMap<string, HelmRelease>,
  settings: TriggerRunOptions,
  now: number,
): { readonly waits: Triggered[]; readonly settled: ReleaseResult[] } {
  const waits: Triggered[] = []
  const settled: ReleaseResult[] = []
  for (const planned of plan.releases) {
    if (planned.sources.length > 0 || (planned.spec === undefined && planned.chart === undefined)) continue
    const live = baseline.get(releaseKey(planned))
    const settle = (status: Status, reason: Reason, message: string, severity: ReleaseResult['severity']): void =>
      void settled.push({ namespace: planned.namespace, name: planned.name, sources: [], status, reason, message, durationMs: 0, severity })
    const what = planned.spec === undefined ? 'its chart source changed' : 'its spec changed'
    if (!settings.wait || settings.dryRun) {
      const message = `${what}: helm-controller upgrades it on the new ${planned.spec === undefined ? 'artifact' : 'generation'}; outcome not awaited`
      settle(Status.Skipped, planned.spec === undefined ? Reason.ChartChanged : Reason.SpecChanged, message, 'none')
    } else if (live?.suspend === true) {
      settle(Status.Skipped, SkipReason.Suspended, `${what}, but spec.suspend is true: helm-controller will not act on it`, 'none')
    } else if (live === undefined && planned.spec?.change !== 'added') {
      settle(Status.Skipped, SkipReason.NotFound, `HelmRelease ${releaseKey(planned)} does not exist in the cluster`, 'warning')
    } else {
      // A release the commit adds may not be applied yet: waited for from nothing.
      const before = live ?? toHelmRelease({ metadata: { namespace: planned.namespace, name: planned.name } })
      waits.push({ planned, release: before, before, token: undefined, force: false, reset: false, startedAt: now })
    }
  }
  return { waits, settled }
}

/** The waits of releases whose chart source changed, once source-controller has fetched the new chart (settled when it could not). */
async function awaitChartFetches(
  awaiting: { readonly waits: Triggered[]; readonly settled: ReleaseResult[] },
  chartFetch: ChartFetcher,
): Promise<{ readonly waits: Triggered[]; readonly settled: ReleaseResult[] }> {
  const fetched = await Promise.all(
    awaiting.waits.map(async (t) => {
      const chart = t.planned.chart
      return chart === undefined ? { kind: 'waiting' as const, t } : { kind: 'fetched' as const, t, fetch: await chartFetch.fetch({ ...t.planned, chart }) }
    }),
  )
  return {
    waits: fetched.flatMap((f) => (f.kind === 'waiting' ? [f.t] : f.fetch.kind === 'fetched' ? [{ ...f.t, chartAttempt: f.fetch.attempt }] : [])),
    settled: [...awaiting.settled, ...fetched.flatMap((f) => (f.kind === 'fetched' && f.fetch.kind === 'settled' ? [f.fetch.result] : []))],
  }
}

/** Polls the release until the cluster holds its planned spec; a failed result when it never does. */
async function waitForSpec(
  cluster: ClusterClient,
  planned: PlannedRelease,
  deadline: number,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<ReleaseResult | undefined> {
  const spec = planned.spec
  if (spec === undefined) return undefined
  const started = deps.clock.now()
  for (;;) {
    const live = await cluster.getRelease(planned)
    if (live !== undefined && specHolds(live.spec, spec.expect)) return undefined
    if (deps.clock.now() + APPLY_POLL_MS > deadline) break
    await deps.clock.sleep(APPLY_POLL_MS)
  }
  const message = `not patched: its new spec (${spec.fields.join(', ')}, ${spec.origin.file}:${spec.origin.line}) never reached the cluster within the timeout; is kustomize-controller applying it?`
  deps.log.warning(`${releaseKey(planned)}: ${message}`)
  return {
    namespace: planned.namespace,
    name: planned.name,
    sources: planned.sources,
    status: Status.Failed,
    reason: Reason.SpecNotApplied,
    message,
    durationMs: deps.clock.now() - started,
    severity: 'error',
  }
}

/** What `apply: true` applies for a source: the allow-listed rendered object, or document at head; undefined when unreadable. */
type ManifestOf = (source: PlannedSource) => AppliedSource | undefined

function manifestsOf(prepared: PreparedPlan, settings: TriggerRunOptions): ManifestOf {
  const options = { keys: keysFor(settings.annotationPrefix), semanticDigest: settings.semanticDigest, maxAliasCount: 100 }
  const { rendered } = prepared
  if (rendered === undefined) {
    const files = new Map(prepared.headFiles.map((f) => [f.path, f]))
    return (source) => {
      const file = files.get(source.origin.file)
      return file === undefined || file.content.type !== 'file' ? undefined : appliedSource(Buffer.from(file.content.bytes).toString('utf8'), source, options)
    }
  }
  const objects = new Map(
    rendered.head.objects.filter((o) => o.apiVersion === 'v1').map((o) => [`${o.kind}/${o.namespace ?? 'default'}/${o.name}`, o.object] as const),
  )
  return (source) => {
    const object = objects.get(source.id)
    return object === undefined ? undefined : appliedObjectOf(object, source, options)
  }
}

/**
 * The releases as they were before the new config could reach the cluster: the revision an
 * upgrade is measured from. helm-controller may upgrade on its own between the apply and our
 * patch (values changed reset its failure count); that upgrade is still this commit's.
 */
async function baselineOf(cluster: ClusterClient, plan: Plan, settings: TriggerRunOptions): Promise<ReadonlyMap<string, HelmRelease>> {
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
  settings: TriggerRunOptions,
  key: DigestKey | undefined,
): Promise<Map<SourceId, Digest | undefined> | undefined> {
  const ids = [...new Set(releases.flatMap((r) => r.sources.filter((s) => !s.encrypted).map((s) => s.id)))]
  try {
    const read = await mapLimit(ids, settings.maxConcurrency, async (id) => {
      const live = await cluster.getSource(sourceRefOf(id))
      if (live === undefined) return [id, undefined] as const
      return [id, key === undefined ? liveDigest(live, settings.semanticDigest) : recordedDigestOf(live, settings.semanticDigest, key)] as const
    })
    return new Map(read)
  } catch {
    return undefined
  }
}

function planned(plan: Plan): ReleaseResult[] {
  return plan.releases.map((r) => ({
    namespace: r.namespace,
    name: r.name,
    ...(r.cluster === undefined ? {} : { cluster: r.cluster }),
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
  manifests: ManifestOf,
  head: string,
  settings: TriggerRunOptions,
  deadline: number,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<SourceResult[]> {
  const needed = plan.sources.filter((s) => s.change !== 'deleted' && s.targets.length > 0)
  const refused = settings.apply ? await applyManifests(cluster, needed, manifests, settings, deps.log) : new Map<SourceId, string>()
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
 * a backoff made a late apply wait up to 2 s to be seen. Slower after that, to spare the apiserver,
 * and slow from the start while a watch on the source (source-changes.ts) wakes the wait.
 */
const APPLY_POLL_MS = 200
const APPLY_FAST_POLL_MS = 30_000
const APPLY_SLOW_POLL_MS = 1_000

async function waitForSource(
  cluster: ClusterClient,
  source: PlannedSource,
  head: string,
  settings: TriggerRunOptions,
  deadline: number,
  deps: Omit<TriggerDeps, 'git'>,
): Promise<SourceResult> {
  const started = deps.clock.now()
  let last = 'not found in the cluster'
  // The first read's resourceVersion starts a watch on the source; the poll is its fallback.
  let changes: SourceChanges | undefined
  let seen: { readonly live: LiveSource | undefined } | undefined
  try {
    for (;;) {
      const live = seen === undefined ? await cluster.getSource(source) : seen.live
      changes ??= sourceChanges(cluster, source, live?.resourceVersion)
      const state = live === undefined ? { arrived: false, seen: 'not found in the cluster' } : await arrived(cluster, source, live, head, settings)
      if (state.arrived) return { id: source.id, applied: true, message: state.seen, durationMs: deps.clock.now() - started }
      last = state.seen
      const delay = changes.watching || deps.clock.now() - started >= APPLY_FAST_POLL_MS ? APPLY_SLOW_POLL_MS : APPLY_POLL_MS
      if (deps.clock.now() + delay > deadline) break
      seen = await changes.next(delay, (ms) => deps.clock.sleep(ms))
    }
  } finally {
    changes?.stop()
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
  settings: TriggerRunOptions,
): Promise<{ arrived: boolean; seen: string }> {
  // Encrypted (ciphertext in git), or a Secret a plan file carries no digest for: the owning Kustomization's revision tells.
  if (source.encrypted || source.digest === undefined) {
    const name = live.labels['kustomize.toolkit.fluxcd.io/name']
    const namespace = live.labels['kustomize.toolkit.fluxcd.io/namespace']
    if (name === undefined || namespace === undefined) {
      return { arrived: true, seen: 'encrypted; exists (no owning Flux Kustomization label to check its revision)' }
    }
    const revision = (await cluster.getKustomizationRevision(namespace, name)) ?? ''
    return { arrived: revision.includes(head), seen: `Kustomization ${namespace}/${name} at ${revision || 'no revision'}` }
  }
  const digest = liveDigest(live, settings.semanticDigest)
  const arrivedNow = digest === source.digest
  // A Secret's digest, even a prefix, is never shown: it would let a reader of the log test guesses.
  const seen = isSecretId(source.id)
    ? arrivedNow
      ? 'content as planned'
      : 'content not yet as planned'
    : `digest ${shownDigest(source.id, digest) ?? ''}, planned ${shownDigest(source.id, source.digest) ?? ''}`
  return { arrived: arrivedNow, seen }
}

/**
 * apply: true — server-side apply the changed sources from the head commit (no kustomize-controller),
 * exactly the documents the plan digested, reduced to the allow-list of core/applied-source.ts, never
 * forced over another field manager. Returns the sources refused, each with its sentence.
 */
async function applyManifests(
  cluster: ClusterClient,
  sources: readonly PlannedSource[],
  manifests: ManifestOf,
  settings: TriggerRunOptions,
  log: Logger,
): Promise<Map<SourceId, string>> {
  const refused = new Map<SourceId, string>()
  await mapLimit(sources, settings.maxConcurrency, async (source) => {
    if (source.encrypted) {
      log.warning(`${source.id} is SOPS-encrypted: not applied (only kustomize-controller can decrypt it).`)
      return
    }
    const applied = manifests(source)
    if (applied === undefined) throw new ConfigurationError(`${source.id}: its manifest in ${source.origin.file} could not be read back for apply.`)
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

/** A Warning Event on each release whose upgrade failed, so `kubectl describe` shows it too. */
async function recordFailures(results: readonly ReleaseResult[], triggered: readonly Triggered[], context: RunContext, events: EventSink): Promise<void> {
  const byKey = new Map(triggered.map((t) => [releaseKey(t.planned), t.release]))
  const run = context.runUrl === undefined ? '' : ` Run: ${context.runUrl}`
  await Promise.all(
    results
      .filter((r) => FAILED.has(r.status))
      .map(async (r) => {
        const release = byKey.get(releaseKey(r))
        if (release === undefined) return
        await events.record({ release, type: 'Warning', reason: 'UpgradeFailed', message: `${r.status} after the config change: ${r.message}.${run}` })
      }),
  )
}
