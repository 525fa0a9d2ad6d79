// Trigger mode, steps 1–7 of the contract: range → plan → connect → wait for apply →
// patch → wait for outcome → report. The plan and the per-release decision are pure; this
// file only sequences I/O behind the GitReader and ClusterClient interfaces.

import { randomInt } from 'node:crypto'
import { parseAllDocuments } from 'yaml'
import type { KubernetesObject } from '@kubernetes/client-node'
import { mapLimit } from './concurrency.ts'
import { buildPatch, decide, newToken, SkipReason, type Decision } from './decision.ts'
import { contentOfConfigMap, contentOfSecret, digestOf } from './digest.ts'
import { ConfigurationError, messageOf } from './errors.ts'
import type { GitReader } from './git.ts'
import { keysFor, type Keys } from './keys.ts'
import { ConflictError, ForbiddenError } from './kube/api-error.ts'
import type { ClusterClient, LiveSource } from './kube/cluster.ts'
import { toReleaseManifest, type HelmRelease } from './kube/helmrelease.ts'
import { releaseKey, type Digest, type HeadFile, type Plan, type PlannedRelease, type PlannedSource, type SourceId } from './model.ts'
import { pathFilter, planChanges, retarget } from './plan.ts'
import { resolveRange, type GitHubEventLike, type Range } from './range.ts'
import { FAILED, Status, type ReleaseResult, type SourceResult, type TriggerReport } from './result.ts'
import type { Settings } from './settings.ts'

export interface Clock {
  now(): number
  sleep(ms: number): Promise<void>
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}

/** What the run is about: the event and where it came from. */
export interface RunContext {
  readonly eventName: string
  readonly event: GitHubEventLike
  /** GITHUB_SHA */
  readonly sha: string
  /** Link to the workflow run, named in the Kubernetes Events. */
  readonly runUrl: string | undefined
}

export interface Logger {
  info(message: string): void
  warning(message: string): void
}

/** A release we patched, handed to the outcome waiter. */
export interface Triggered {
  readonly planned: PlannedRelease
  /** The release as the patch response returned it. */
  readonly release: HelmRelease
  /** The release as first observed in this run, before the new config arrived (revision before). */
  readonly before: HelmRelease
  readonly token: string
  readonly force: boolean
  readonly reset: boolean
  readonly startedAt: number
}

/** Step 6: waits for helm-controller to handle each token (see outcome.ts). */
export interface OutcomeWaiter {
  wait(cluster: ClusterClient, triggered: readonly Triggered[], deadline: number): Promise<ReleaseResult[]>
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

/** Steps 1–2: the range and the pure plan. Needs git only; `plan` in the CLI stops here. */
export async function preparePlan(settings: Settings, context: RunContext, git: GitReader): Promise<PreparedPlan> {
  const range = await resolveRange(
    { event: context.event, eventName: context.eventName, inputs: { base: settings.base, head: settings.head, fullSync: settings.fullSync }, sha: context.sha },
    git,
  )
  const filter = pathFilter(settings.paths)
  const [changes, headFiles] = await Promise.all([range.fullSync ? Promise.resolve([]) : git.changedFiles(range.base, range.head, filter), git.headFiles(range.head, filter)])
  const options = { prefix: settings.annotationPrefix, defaultNamespace: settings.defaultNamespace, semanticDigest: settings.semanticDigest, discover: settings.discover, paths: settings.paths }
  return { range, plan: planChanges({ changes, headFiles, fullSync: range.fullSync, options }), headFiles }
}

/** A report of the plan alone: nothing read from or written to a cluster. */
export function planReport(prepared: PreparedPlan, settings: Settings, why: string): TriggerReport {
  const { range, plan } = prepared
  return { range, plan, planOnly: why, dryRun: settings.dryRun, notes: range.notes, problems: plan.problems, sources: [], results: planned(plan) }
}

export async function runTrigger(settings: Settings, context: RunContext, deps: TriggerDeps): Promise<TriggerReport> {
  const keys = keysFor(settings.annotationPrefix)
  const prepared = await preparePlan(settings, context, deps.git)
  const { range, headFiles } = prepared
  let plan = prepared.plan
  const base = { range, dryRun: settings.dryRun, notes: [...range.notes], problems: plan.problems }

  const isPullRequest = context.eventName === 'pull_request' || context.eventName === 'pull_request_target'
  const planOnly = !isPullRequest
    ? undefined
    : context.event.pull_request?.fromFork !== false
      ? `${context.eventName} event from a fork (or of unknown origin): plan only, whatever the inputs; a fork never gets cluster writes`
      : !settings.allowPullRequests
        ? `${context.eventName} event: plan only (set allow-pull-requests: true to trigger from pull requests)`
        : undefined
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
  const outcomes = await mapLimit(plan.releases, settings.maxConcurrency, (release) =>
    triggerRelease(cluster, release, { keys, settings, context, unapplied, deps, sequence, head: range.head, baseline }),
  )

  const triggered = outcomes.flatMap((o) => ('triggered' in o ? [o.triggered] : []))
  const settled = outcomes.flatMap((o) => ('result' in o ? [o.result] : []))
  const waited = settings.wait && !settings.dryRun && deps.outcome !== undefined && triggered.length > 0
    ? await deps.outcome.wait(cluster, triggered, deps.clock.now() + settings.timeoutMs)
    : triggered.map((t) => triggeredResult(t, settings.dryRun, deps.clock.now()))
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
  const releases = await mapLimit(plan.releases, settings.maxConcurrency, async (r) => {
    try {
      return await cluster.getRelease(r)
    } catch {
      return undefined // observed again, with its error reported, when patched
    }
  })
  return new Map(releases.flatMap((r) => (r === undefined ? [] : [[releaseKey(r), r] as const])))
}

function planned(plan: Plan): ReleaseResult[] {
  return plan.releases.map((r) => ({ namespace: r.namespace, name: r.name, sources: r.sources, status: Status.Planned, reason: SkipReason.PlanOnly, message: 'plan only', durationMs: 0, severity: 'none' }))
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

async function applySources(cluster: ClusterClient, plan: Plan, headFiles: readonly HeadFile[], head: string, settings: Settings, deadline: number, deps: TriggerDeps): Promise<SourceResult[]> {
  const needed = plan.sources.filter((s) => s.change !== 'deleted' && s.targets.length > 0)
  if (settings.apply) await applyManifests(cluster, needed, headFiles, settings, deps.log)
  if (!settings.waitForApply && !settings.apply) return []
  return mapLimit(needed, settings.maxConcurrency, (source) => waitForSource(cluster, source, head, settings, deadline, deps))
}

async function waitForSource(cluster: ClusterClient, source: PlannedSource, head: string, settings: Settings, deadline: number, deps: TriggerDeps): Promise<SourceResult> {
  const started = deps.clock.now()
  let delay = 250
  let last = 'not found in the cluster'
  for (;;) {
    const live = await cluster.getSource(source)
    const state = live === undefined ? { arrived: false, seen: 'not found in the cluster' } : await arrived(cluster, source, live, head, settings)
    if (state.arrived) return { id: source.id, applied: true, message: state.seen, durationMs: deps.clock.now() - started }
    last = state.seen
    if (deps.clock.now() + delay > deadline) break
    await deps.clock.sleep(delay)
    delay = Math.min(delay * 2, 2_000)
  }
  const message = `${source.id} never reached the planned content within the timeout (last seen: ${last}); nothing that reads it was triggered. Is kustomize-controller applying ${source.origin.file}? Or set apply: true.`
  deps.log.warning(message)
  return { id: source.id, applied: false, message, durationMs: deps.clock.now() - started }
}

/** The live object holds the commit's content: equal digest, or for SOPS Secrets, its Kustomization applied the head commit. */
async function arrived(cluster: ClusterClient, source: PlannedSource, live: LiveSource, head: string, settings: Settings): Promise<{ arrived: boolean; seen: string }> {
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

export function liveDigest(live: LiveSource, semantic: boolean): Digest {
  const content = live.kind === 'Secret' ? contentOfSecret({ data: live.data }) : contentOfConfigMap({ data: live.data, binaryData: live.binaryData })
  return digestOf(content, { semantic })
}

/** apply: true — server-side apply the changed sources from the head commit (no kustomize-controller). */
async function applyManifests(cluster: ClusterClient, sources: readonly PlannedSource[], headFiles: readonly HeadFile[], settings: Settings, log: Logger): Promise<void> {
  const files = new Map(headFiles.map((f) => [f.path, f]))
  await mapLimit(sources, settings.maxConcurrency, async (source) => {
    if (source.encrypted) {
      log.warning(`${source.id} is SOPS-encrypted: not applied (only kustomize-controller can decrypt it).`)
      return
    }
    const object = manifestObject(files.get(source.origin.file), source)
    if (object === undefined) throw new ConfigurationError(`${source.id}: its manifest in ${source.origin.file} could not be read back for apply.`)
    await cluster.applyObject(object, { dryRun: settings.dryRun })
  })
}

function manifestObject(file: HeadFile | undefined, source: PlannedSource): KubernetesObject | undefined {
  if (file === undefined || file.content.type !== 'file') return undefined
  const docs = parseAllDocuments(Buffer.from(file.content.bytes).toString('utf8'), { logLevel: 'error' })
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    const value: unknown = doc.toJS({ maxAliasCount: 100 })
    if (typeof value !== 'object' || value === null || !('kind' in value) || value.kind !== source.kind) continue
    if (!('metadata' in value) || typeof value.metadata !== 'object' || value.metadata === null) continue
    const metadata: Record<string, unknown> = { ...value.metadata }
    if (metadata['name'] !== source.name) continue
    if (metadata['namespace'] !== undefined && metadata['namespace'] !== source.namespace) continue
    const object: Record<string, unknown> = { ...value }
    return { ...object, apiVersion: 'v1', kind: source.kind, metadata: { name: source.name, namespace: source.namespace, labels: stringMap(metadata['labels']), annotations: stringMap(metadata['annotations']) } }
  }
  return undefined
}

function stringMap(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

// ---- Step 5: patch ------------------------------------------------------------------------

interface PatchScope {
  readonly keys: Keys
  readonly settings: Settings
  readonly context: RunContext
  readonly unapplied: ReadonlyMap<SourceId, string>
  readonly deps: TriggerDeps
  readonly sequence: { n: number }
  readonly head: string
  /** Releases as first observed, before waiting for the sources. */
  readonly baseline: ReadonlyMap<string, HelmRelease>
}

type Outcome = { readonly triggered: Triggered } | { readonly result: ReleaseResult }

const MAX_CONFLICTS = 5

async function triggerRelease(cluster: ClusterClient, planned: PlannedRelease, scope: PatchScope): Promise<Outcome> {
  const { settings, deps } = scope
  const started = deps.clock.now()
  const settle = (status: Status, reason: string, message: string, severity: ReleaseResult['severity'], live?: HelmRelease): Outcome => ({
    result: { namespace: planned.namespace, name: planned.name, sources: planned.sources, status, reason, message, durationMs: deps.clock.now() - started, severity, revisionBefore: live?.status.history[0]?.version },
  })
  const missing = planned.sources.filter((s) => scope.unapplied.has(s.id))
  if (missing.length > 0) {
    return settle(Status.Failed, SkipReason.SourceNotApplied, `not patched: ${missing.map((s) => s.id).join(', ')} never reached the cluster`, 'error')
  }
  try {
    for (let attempt = 1; ; attempt++) {
      const live = await cluster.getRelease(planned)
      const decision = decide({ planned, live, digestKey: scope.keys.configDigest, force: settings.force, reset: settings.reset })
      if (decision.action === 'skip' || live === undefined) return settle(Status.Skipped, skipReason(decision), skipMessage(decision), decision.action === 'skip' && decision.reason === SkipReason.NotFound ? 'warning' : 'none')
      const token = newToken(new Date(deps.clock.now()), scope.sequence.n++)
      const patch = buildPatch(live, planned, decision, token, scope.keys)
      try {
        const release = await cluster.patchRelease(planned, patch, { dryRun: settings.dryRun })
        if (!settings.dryRun) await recordTrigger(cluster, release, planned, decision, scope)
        const before = scope.baseline.get(releaseKey(planned)) ?? live
        return { triggered: { planned, release, before, token, force: decision.force, reset: decision.reset, startedAt: started } }
      } catch (error) {
        // Someone changed the release between our read and our patch: observe again, decide again.
        if (!(error instanceof ConflictError) || attempt >= MAX_CONFLICTS) throw error
      }
    }
  } catch (error) {
    deps.log.warning(`${releaseKey(planned)}: ${messageOf(error)}`)
    return settle(Status.Failed, error instanceof ForbiddenError ? 'Forbidden' : 'PatchFailed', messageOf(error), 'error')
  }
}

function skipReason(decision: Decision): string {
  return decision.action === 'skip' ? decision.reason : SkipReason.NotFound
}

function skipMessage(decision: Decision): string {
  return decision.action === 'skip' ? decision.message : 'release not found'
}

async function recordTrigger(cluster: ClusterClient, release: HelmRelease, planned: PlannedRelease, decision: Decision, scope: PatchScope): Promise<void> {
  const sources = planned.sources.map((s) => `${s.id} ${short(s.digest)}`).join(', ')
  const why = decision.action === 'trigger' ? decision.why : ''
  const run = scope.context.runUrl === undefined ? '' : ` Run: ${scope.context.runUrl}`
  const message = `Reconcile requested for commit ${scope.head.slice(0, 12)}: ${why} (${sources}).${run}`
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
async function recordFailures(cluster: ClusterClient, results: readonly ReleaseResult[], triggered: readonly Triggered[], context: RunContext, deps: TriggerDeps): Promise<void> {
  const byKey = new Map(triggered.map((t) => [releaseKey(t.planned), t.release]))
  await Promise.all(
    results
      .filter((r) => FAILED.has(r.status))
      .map(async (r) => {
        const release = byKey.get(releaseKey(r))
        if (release === undefined) return
        const run = context.runUrl === undefined ? '' : ` Run: ${context.runUrl}`
        try {
          await cluster.recordEvent({ release, type: 'Warning', reason: 'UpgradeFailed', message: `${r.status} after the config change: ${r.message}.${run}` }, { dryRun: false })
        } catch (error) {
          deps.log.warning(`${releaseKey(r)}: could not record the Warning Event: ${messageOf(error)}`)
        }
      }),
  )
}

export function short(digest: string): string {
  return digest.replace(/^sha256:/, '').slice(0, 12)
}
