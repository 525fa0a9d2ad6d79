// Mode `drift`: for each selected HelmRelease, decode its latest Helm storage Secret, compare
// every object of the rendered manifest with the live one, and report; `correct` then asks
// helm-controller for a forced upgrade (requestedAt + forceAt), waits for the outcome and
// checks again. Observe (checkRelease) → decide (driftFailure, toCorrect) → act (correct).

import { randomInt } from 'node:crypto'
import { mapLimit } from '../../lib/concurrency.ts'
import { newToken } from '../../engine/tokens.ts'
import { messageOf } from '../../lib/errors.ts'
import { keysFor, type Keys } from '../../core/keys.ts'
import { ConflictError, ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { HELMRELEASE, type HelmRelease } from '../../core/helmrelease.ts'
import { hpaTarget, type Json, type ObjectReader } from '../../kube/objects.ts'
import { releaseKey, type ReleaseRef } from '../../core/model.ts'
import { FAILED, Status, type ReleaseResult } from '../../engine/result.ts'
import type { DriftAction, Settings } from '../../settings.ts'
import type { Clock, Logger } from '../../engine/ports.ts'
import type { OutcomeWaiter, Triggered } from '../../engine/outcome.ts'
import { compareObject, type FieldChange } from './compare.ts'
import { fluxIgnoreRules, selects, type FluxIgnore } from './flux-ignore.ts'
import type { IgnoreRule } from '../../core/field-path.ts'
import { renderedObjects, type DesiredObject } from './rendered.ts'
import { decodeRelease, latestEntry, storageSelector, storageTarget, StorageError, type StorageTarget } from './storage.ts'

export const ObjectState = { InSync: 'in-sync', Changed: 'changed', Missing: 'missing', Error: 'error' } as const
export type ObjectState = (typeof ObjectState)[keyof typeof ObjectState]

export const ReleaseState = { InSync: 'InSync', Drifted: 'Drifted', Skipped: 'Skipped', Error: 'Error' } as const
export type ReleaseState = (typeof ReleaseState)[keyof typeof ReleaseState]

/** One object of the manifest that is not in sync (objects in sync are only counted). */
export interface ObjectDrift {
  readonly apiVersion: string
  readonly kind: string
  /** undefined for cluster-scoped kinds. */
  readonly namespace: string | undefined
  readonly name: string
  readonly state: ObjectState
  readonly changes: readonly FieldChange[]
  /** Why it could not be compared (state error). */
  readonly message?: string
  /** The chart template it came from. */
  readonly source?: string
}

/** What `correct` did for a drifted release. */
export interface Correction {
  readonly status: Status
  readonly reason: string
  readonly message: string
  readonly token?: string
  readonly revisionAfter?: number
}

export interface ReleaseDrift extends ReleaseRef {
  /** The Helm release name and where its storage is. */
  readonly releaseName: string
  readonly storageNamespace: string
  readonly revision?: number
  readonly chart?: string
  readonly state: ReleaseState
  /** Short constant: InSync, Drifted, NotDeployed, NotInstalled, RemoteCluster, StorageUnreadable, NoStorage, Forbidden, ReadFailed. */
  readonly reason: string
  readonly message: string
  /** Objects in the manifest. */
  readonly objects: number
  readonly inSync: number
  /** Objects skipped by helm.toolkit.fluxcd.io/driftDetection: disabled. */
  readonly ignored: number
  readonly drifted: readonly ObjectDrift[]
  /** After `correct`: what helm-controller did; `state` is then the re-check's. */
  readonly correction?: Correction
  readonly durationMs: number
}

export interface DriftReport {
  readonly action: DriftAction
  readonly scope: string
  readonly dryRun: boolean
  readonly releases: readonly ReleaseDrift[]
  readonly notes: readonly string[]
}

export interface DriftDeps {
  readonly objects: () => Promise<ObjectReader>
  /** For `correct`: patches, Events and the outcome watch. */
  readonly connect: () => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  readonly outcome?: OutcomeWaiter
  readonly runUrl?: string
}

/** helm-controller's per-object opt-out, honoured here too. */
const DRIFT_DISABLED_KEY = `${HELMRELEASE.group}/driftDetection`
// Cheap text tests before parsing (block or flow YAML); a false positive only costs a parse or a list.
const HPA_DOCUMENT = /["']?kind["']?\s*:\s*["']?HorizontalPodAutoscaler\b/
const SCALABLE_DOCUMENT = /["']?kind["']?\s*:\s*["']?(?:Deployment|StatefulSet|ReplicaSet)\b/
/** Releases checked at once: each holds its manifest in memory while its objects are read. */
const RELEASES_AT_ONCE = 4

export async function runDrift(settings: Settings, deps: DriftDeps): Promise<DriftReport> {
  const reader = await deps.objects()
  const scoped = settings.namespaces.length > 0 ? settings.namespaces : [undefined]
  const selector = settings.selector
  const raw = (await mapLimit(scoped, settings.maxConcurrency, (ns) => reader.listHelmReleases(ns, selector))).flat()
  const gate = limiter(settings.maxConcurrency)
  const context: CheckContext = { reader, gate, ignore: settings.driftIgnore, clock: deps.clock, log: deps.log }
  const checked = await mapLimit(raw, Math.min(RELEASES_AT_ONCE, settings.maxConcurrency), (r) => checkRelease(r, context))
  const notes: string[] = []
  const scope = `${settings.namespaces.length > 0 ? `namespaces ${settings.namespaces.join(', ')}` : 'all namespaces'}${selector === undefined ? '' : `, selector ${selector}`}`
  let releases = checked
  if (settings.driftAction === 'correct') {
    const drifted = checked.filter((r) => r.state === ReleaseState.Drifted)
    if (drifted.length > 0) {
      const corrected = await correct(drifted, settings, deps, context)
      releases = checked.map((r) => corrected.get(releaseKey(r)) ?? r)
    }
  }
  notes.push(`Drift: ${raw.length} HelmRelease${raw.length === 1 ? '' : 's'} in ${scope}; drift-action ${settings.driftAction}.`)
  return {
    action: settings.driftAction,
    scope,
    dryRun: settings.dryRun,
    releases: [...releases].sort((a, b) => releaseKey(a).localeCompare(releaseKey(b))),
    notes,
  }
}

// ---- Observe ------------------------------------------------------------------------------

interface CheckContext {
  readonly reader: ObjectReader
  readonly gate: Limiter
  readonly ignore: readonly IgnoreRule[]
  readonly clock: Clock
  readonly log: Logger
}

/** One release, from its storage Secret to the comparison of every object. Never throws. */
export async function checkRelease(object: Json, ctx: CheckContext): Promise<ReleaseDrift> {
  const started = ctx.clock.now()
  const target = storageTarget(object)
  const base = {
    namespace: target.namespace,
    name: target.name,
    releaseName: target.releaseName,
    storageNamespace: target.storageNamespace,
    objects: 0,
    inSync: 0,
    ignored: 0,
    drifted: [],
  }
  const settle = (state: ReleaseState, reason: string, message: string, extra: Partial<ReleaseDrift> = {}): ReleaseDrift => ({
    ...base,
    state,
    reason,
    message,
    ...extra,
    durationMs: ctx.clock.now() - started,
  })
  if (target.remote)
    return settle(ReleaseState.Skipped, 'RemoteCluster', 'installs into another cluster (spec.kubeConfig): its Helm storage and objects are not in this one')
  try {
    const entries = await ctx.gate(() => ctx.reader.listSecretMetadata(target.storageNamespace, storageSelector(target.releaseName)))
    const latest = latestEntry(target.releaseName, entries)
    if (latest === undefined) {
      if (target.recordedVersion === undefined)
        return settle(ReleaseState.Skipped, 'NotInstalled', 'not installed yet: helm-controller has recorded no Helm release')
      return settle(
        ReleaseState.Error,
        'NoStorage',
        `no Helm storage Secret for release ${target.releaseName} in namespace ${target.storageNamespace}, although status.history records revision ${target.recordedVersion}`,
      )
    }
    const secretName = `${target.storageNamespace}/${latest.name}`
    const secret = await ctx.gate(() => ctx.reader.getSecret(target.storageNamespace, latest.name))
    if (secret === undefined) return settle(ReleaseState.Error, 'NoStorage', `Helm storage Secret ${secretName} disappeared while it was read; run again`)
    const stored = decodeRelease(secretName, secret.type, secret.data)
    const revision = { revision: stored.version, ...(stored.chart === '' ? {} : { chart: stored.chart }) }
    if (stored.status !== 'deployed') {
      return settle(
        ReleaseState.Skipped,
        'NotDeployed',
        `latest Helm release (revision ${stored.version}) is ${stored.status}, not deployed: not compared`,
        revision,
      )
    }
    return {
      ...(await compareRelease(stored.manifest, stored.namespace || target.releaseNamespace, target, fluxIgnoreRules(object), ctx)),
      ...revision,
      durationMs: ctx.clock.now() - started,
    }
  } catch (error) {
    const reason = error instanceof StorageError ? 'StorageUnreadable' : error instanceof ForbiddenError ? 'Forbidden' : 'ReadFailed'
    return settle(ReleaseState.Error, reason, messageOf(error))
  }
}

async function compareRelease(
  manifest: string,
  releaseNamespace: string,
  target: StorageTarget,
  fluxIgnores: readonly FluxIgnore[],
  ctx: CheckContext,
): Promise<Omit<ReleaseDrift, 'durationMs'>> {
  const drifted: ObjectDrift[] = []
  // A first, cheap pass parses only the HPAs: their targets' replicas are not drift.
  const scaled = new Set<string>()
  for (const entry of renderedObjects(manifest, (text) => HPA_DOCUMENT.test(text)))
    if ('object' in entry && entry.object.kind === 'HorizontalPodAutoscaler') for (const t of hpaTarget(entry.object.object)) scaled.add(t)
  if (SCALABLE_DOCUMENT.test(manifest)) {
    try {
      for (const t of await ctx.gate(() => ctx.reader.listHpaTargets(releaseNamespace))) scaled.add(t)
    } catch (error) {
      ctx.log.warning(
        `${releaseKey(target)}: could not list HorizontalPodAutoscalers in ${releaseNamespace} (${messageOf(error)}); replicas of scaled objects may show as drift`,
      )
    }
  }
  // Then each document is parsed only when a GET slot is free, and dropped once compared:
  // a release of thousands of objects holds about max-concurrency of them at a time.
  let objects = 0
  let inSync = 0
  let ignored = 0
  const inFlight = new Set<Promise<void>>()
  for (const entry of renderedObjects(manifest)) {
    if (!('object' in entry)) {
      const where = entry.problem.source === undefined ? `document ${entry.problem.index}` : `document ${entry.problem.index} (${entry.problem.source})`
      drifted.push({
        apiVersion: '',
        kind: '',
        namespace: undefined,
        name: where,
        state: ObjectState.Error,
        changes: [],
        message: `the stored manifest's ${where} ${entry.problem.message}`,
      })
      continue
    }
    objects++
    const done = await ctx.gate.acquire()
    const check: Promise<void> = checkObject(entry.object, releaseNamespace, scaled, fluxIgnores, ctx)
      .then((result) => {
        if (result === 'in-sync') inSync++
        else if (result === 'ignored') ignored++
        else drifted.push(result)
      })
      .finally(() => {
        done()
        inFlight.delete(check)
      })
    inFlight.add(check)
  }
  await Promise.all(inFlight)
  drifted.sort((a, b) => objectKey(a).localeCompare(objectKey(b)))
  const changed = drifted.filter((o) => o.state !== ObjectState.Error)
  const errors = drifted.length - changed.length
  const state = changed.length > 0 ? ReleaseState.Drifted : errors > 0 ? ReleaseState.Error : ReleaseState.InSync
  const counts = [
    `${objects} object${objects === 1 ? '' : 's'}`,
    changed.length > 0 ? `${changed.length} drifted` : '',
    errors > 0 ? `${errors} not compared` : '',
    ignored > 0 ? `${ignored} excluded by ${DRIFT_DISABLED_KEY}` : '',
  ]
  const message = counts.filter((c) => c !== '').join(', ')
  const reason = state === ReleaseState.Drifted ? 'Drifted' : state === ReleaseState.Error ? 'ReadFailed' : 'InSync'
  return {
    namespace: target.namespace,
    name: target.name,
    releaseName: target.releaseName,
    storageNamespace: target.storageNamespace,
    state,
    reason,
    message,
    objects,
    inSync,
    ignored,
    drifted,
  }
}

/** GET and compare one object; the live object is dropped once compared. */
async function checkObject(
  d: DesiredObject,
  releaseNamespace: string,
  scaled: ReadonlySet<string>,
  fluxIgnores: readonly FluxIgnore[],
  ctx: CheckContext,
): Promise<ObjectDrift | 'in-sync' | 'ignored'> {
  let namespace = d.namespace
  const describe = (state: ObjectState, changes: readonly FieldChange[], message?: string): ObjectDrift => ({
    apiVersion: d.apiVersion,
    kind: d.kind,
    namespace,
    name: d.name,
    state,
    changes,
    ...(message === undefined ? {} : { message }),
    ...(d.source === undefined ? {} : { source: d.source }),
  })
  try {
    const info = await ctx.reader.resource(d.apiVersion, d.kind)
    if (info === undefined) return describe(ObjectState.Error, [], `the cluster does not serve ${d.kind} in ${d.apiVersion} (is its CRD installed?)`)
    namespace = info.namespaced ? (d.namespace ?? releaseNamespace) : undefined
    const live = await ctx.reader.get({ apiVersion: d.apiVersion, kind: d.kind, name: d.name, namespace })
    if (live === undefined) return describe(ObjectState.Missing, [])
    if (driftDisabled(live)) return 'ignored'
    // The release's own spec.driftDetection.ignore rules count as much as drift-ignore.
    const own = fluxIgnores.filter((f) => selects(f.target, { ...d, namespace })).map((f) => f.rule)
    const changes = compareObject(d.object, live, { ignore: [...ctx.ignore, ...own], scaledByHpa: scaled.has(`${d.kind}/${d.name}`) })
    return changes.length === 0 ? 'in-sync' : describe(ObjectState.Changed, changes)
  } catch (error) {
    return describe(ObjectState.Error, [], messageOf(error))
  }
}

function driftDisabled(live: Json): boolean {
  const m = live['metadata']
  if (typeof m !== 'object' || m === null) return false
  const meta = m as Json
  const has = (field: string): boolean => {
    const map = meta[field]
    return typeof map === 'object' && map !== null && (map as Json)[DRIFT_DISABLED_KEY] === 'disabled'
  }
  return has('annotations') || has('labels')
}

export function objectKey(o: Pick<ObjectDrift, 'kind' | 'namespace' | 'name'>): string {
  if (o.kind === '') return o.name
  return o.namespace === undefined ? `${o.kind}/${o.name}` : `${o.kind}/${o.namespace}/${o.name}`
}

// ---- Decide -------------------------------------------------------------------------------

/** Why the run fails under its drift-action, or undefined when it passes. */
export function driftFailure(report: DriftReport): string | undefined {
  if (report.action === 'report') return undefined
  const problems = report.releases.flatMap((r): string[] => {
    const key = releaseKey(r)
    if (r.correction !== undefined && FAILED.has(r.correction.status)) return [`${key}: correction ${r.correction.status} (${r.correction.reason})`]
    if (r.correction?.status === Status.Skipped) return [`${key}: drifted, not corrected (${r.correction.reason})`]
    if (r.state === ReleaseState.Drifted)
      return [
        `${key}: ${r.drifted
          .filter((o) => o.state !== ObjectState.Error)
          .map(firstChange)
          .join(', ')}${r.correction === undefined ? '' : ' still drifted after correction'}`,
      ]
    if (r.state === ReleaseState.Error) return [`${key}: ${r.message}`]
    return []
  })
  if (problems.length === 0) return undefined
  const more = problems.length > 5 ? ` and ${problems.length - 5} more` : ''
  return `${problems.length} release${problems.length === 1 ? '' : 's'} not in sync (drift-action: ${report.action}): ${problems.slice(0, 5).join('; ')}${more}`
}

function firstChange(o: ObjectDrift): string {
  if (o.state === ObjectState.Missing) return `${objectKey(o)} missing`
  const [first] = o.changes
  return `${objectKey(o)} ${first?.path ?? ''}${o.changes.length > 1 ? ` (+${o.changes.length - 1})` : ''}`
}

// ---- Act: correct -------------------------------------------------------------------------

const MAX_CONFLICTS = 5

async function correct(drifted: readonly ReleaseDrift[], settings: Settings, deps: DriftDeps, ctx: CheckContext): Promise<Map<string, ReleaseDrift>> {
  const keys = keysFor(settings.annotationPrefix)
  const cluster = await deps.connect()
  const sequence = { n: randomInt(1000) * 1000 }
  const requested = await mapLimit(drifted, settings.maxConcurrency, (r) => requestCorrection(cluster, r, keys, settings, deps, sequence))
  const triggered = requested.flatMap((x) => ('triggered' in x ? [x.triggered] : []))
  const outcomes = new Map<string, Correction>()
  for (const x of requested) if ('correction' in x) outcomes.set(x.key, x.correction)
  const waitable = settings.wait && !settings.dryRun && deps.outcome !== undefined
  const waited: ReleaseResult[] = waitable && triggered.length > 0 ? await deps.outcome.wait(cluster, triggered, deps.clock.now() + settings.timeoutMs) : []
  for (const t of triggered) {
    const r = waited.find((w) => releaseKey(w) === releaseKey(t.planned))
    outcomes.set(
      releaseKey(t.planned),
      r === undefined
        ? {
            status: settings.dryRun ? Status.DryRun : Status.Triggered,
            reason: settings.dryRun ? 'DryRun' : 'CorrectionRequested',
            message: settings.dryRun ? 'server-side dry run of the patch succeeded; nothing written' : 'forced upgrade requested; outcome not awaited',
            token: t.token,
          }
        : {
            status: r.status,
            reason: r.reason,
            message: r.message,
            token: t.token,
            ...(r.revisionAfter === undefined ? {} : { revisionAfter: r.revisionAfter }),
          },
    )
  }
  // Observe again rather than assume: only a re-check says the cluster is back in sync.
  const result = new Map<string, ReleaseDrift>()
  await mapLimit(drifted, Math.min(RELEASES_AT_ONCE, settings.maxConcurrency), async (before) => {
    const key = releaseKey(before)
    const correction = outcomes.get(key)
    const recheck = correction !== undefined && (correction.status === Status.Upgraded || correction.status === Status.Unchanged)
    let after = before
    if (recheck) {
      try {
        const live = await ctx.reader.get({
          apiVersion: `${HELMRELEASE.group}/${HELMRELEASE.version}`,
          kind: HELMRELEASE.kind,
          namespace: before.namespace,
          name: before.name,
        })
        if (live !== undefined) after = await checkRelease(live, ctx)
      } catch (error) {
        deps.log.warning(`${key}: re-check after the correction failed: ${messageOf(error)}`)
      }
    }
    result.set(key, correction === undefined ? after : { ...after, correction })
  })
  return result
}

type Requested = { readonly key: string; readonly triggered: Triggered } | { readonly key: string; readonly correction: Correction }

async function requestCorrection(
  cluster: ClusterClient,
  drift: ReleaseDrift,
  keys: Keys,
  settings: Settings,
  deps: DriftDeps,
  sequence: { n: number },
): Promise<Requested> {
  const key = releaseKey(drift)
  const started = deps.clock.now()
  const failed = (reason: string, message: string): Requested => ({ key, correction: { status: Status.Failed, reason, message } })
  try {
    for (let attempt = 1; ; attempt++) {
      const live: HelmRelease | undefined = await cluster.getRelease(drift)
      if (live === undefined) return failed('NotFound', 'the HelmRelease disappeared before it could be corrected')
      if (live.suspend) return { key, correction: { status: Status.Skipped, reason: 'Suspended', message: 'spec.suspend is true; not corrected' } }
      const token = newToken(new Date(deps.clock.now()), sequence.n++)
      // forceAt must equal requestedAt: helm-controller then upgrades even an in-sync release.
      const patch = { annotations: { [keys.requestedAt]: token, [keys.forceAt]: token }, labels: {}, resourceVersion: live.resourceVersion }
      try {
        const release = await cluster.patchRelease(drift, patch, { dryRun: settings.dryRun })
        if (!settings.dryRun) await recordCorrection(cluster, release, drift, deps)
        return {
          key,
          triggered: {
            planned: { namespace: drift.namespace, name: drift.name, sources: [] },
            release,
            before: live,
            token,
            force: true,
            reset: false,
            startedAt: started,
          },
        }
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= MAX_CONFLICTS) throw error
      }
    }
  } catch (error) {
    deps.log.warning(`${key}: ${messageOf(error)}`)
    return failed(error instanceof ForbiddenError ? 'Forbidden' : 'PatchFailed', messageOf(error))
  }
}

async function recordCorrection(cluster: ClusterClient, release: HelmRelease, drift: ReleaseDrift, deps: DriftDeps): Promise<void> {
  const objects = drift.drifted.filter((o) => o.state !== ObjectState.Error).map(objectKey)
  const run = deps.runUrl === undefined ? '' : ` Run: ${deps.runUrl}`
  const message = `Drift from Helm revision ${drift.revision ?? '?'} in ${objects.length} object${objects.length === 1 ? '' : 's'} (${objects.slice(0, 5).join(', ')}${objects.length > 5 ? ', …' : ''}); forced upgrade requested.${run}`
  try {
    await cluster.recordEvent({ release, type: 'Normal', reason: 'DriftCorrectionRequested', message }, { dryRun: false })
  } catch (error) {
    deps.log.warning(`${releaseKey(drift)}: could not record the Event: ${messageOf(error)}`)
  }
}

// ---- Concurrency --------------------------------------------------------------------------

interface Limiter {
  <T>(fn: () => Promise<T>): Promise<T>
  /** Waits for a slot; call the returned function to free it. */
  acquire(): Promise<() => void>
}

/** At most `n` API calls in flight across all releases being checked. */
function limiter(n: number): Limiter {
  let active = 0
  const waiting: (() => void)[] = []
  const acquire = async (): Promise<() => void> => {
    if (active < n) active++
    else await new Promise<void>((resolve) => waiting.push(resolve))
    let freed = false
    return () => {
      if (freed) return
      freed = true
      // Hand the slot straight to the next waiter, so no newcomer slips in between.
      const next = waiting.shift()
      if (next === undefined) active--
      else next()
    }
  }
  const run = async <T>(fn: () => Promise<T>): Promise<T> => {
    const done = await acquire()
    try {
      return await fn()
    } finally {
      done()
    }
  }
  return Object.assign(run, { acquire })
}
