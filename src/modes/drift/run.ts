// Mode `drift`: for each selected HelmRelease, decode its latest Helm storage Secret, compare
// every object of the rendered manifest with the live one, and report; `correct` then asks
// helm-controller for a forced upgrade (requestedAt + forceAt), waits for the outcome and
// checks again. Observe (checkRelease) → correct through the write engine (correct.ts) →
// observe again; the verdict (verdict.ts) says whether the run fails.

import { mapLimit } from '../../lib/concurrency.ts'
import { messageOf } from '../../lib/errors.ts'
import { keysFor } from '../../core/keys.ts'
import { ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { HELMRELEASE } from '../../core/helmrelease.ts'
import { hpaTarget, type Json, type ObjectReader } from '../../kube/objects.ts'
import { byReleaseKey, releaseKey } from '../../core/model.ts'
import { Status } from '../../engine/result.ts'
import type { Settings } from '../../settings.ts'
import type { Clock, Logger } from '../../engine/ports.ts'
import type { OutcomeWaiter } from '../../engine/outcome.ts'
import { compareObject, type FieldChange } from './compare.ts'
import { requestCorrections } from './correct.ts'
import { objectKey, ObjectState, ReleaseState, type DriftReport, type ObjectDrift, type ReleaseDrift } from './verdict.ts'
import { fluxIgnoreRules, selects, type FluxIgnore } from './flux-ignore.ts'
import type { IgnoreRule } from '../../core/field-path.ts'
import { renderedObjects, type DesiredObject } from './rendered.ts'
export { driftFailure, objectKey, ObjectState, ReleaseState, type Correction, type DriftReport, type ObjectDrift, type ReleaseDrift } from './verdict.ts'
import { decodeRelease, latestEntry, storageSelector, storageTarget, StorageError, type StorageTarget } from '../../core/helm-storage.ts'
import { compareText } from '../../lib/sort.ts'

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

/** What drift reads from the settings, and nothing else. */
export type DriftOptions = Pick<
  Settings,
  'annotationPrefix' | 'namespaces' | 'selector' | 'driftIgnore' | 'driftAction' | 'maxConcurrency' | 'dryRun' | 'wait' | 'timeoutMs'
>

export async function runDrift(settings: DriftOptions, deps: DriftDeps): Promise<DriftReport> {
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
    releases: [...releases].sort(byReleaseKey),
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
  drifted.sort((a, b) => compareText(objectKey(a), objectKey(b)))
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

// ---- Act: correct -------------------------------------------------------------------------

async function correct(drifted: readonly ReleaseDrift[], settings: DriftOptions, deps: DriftDeps, ctx: CheckContext): Promise<Map<string, ReleaseDrift>> {
  const options = {
    keys: keysFor(settings.annotationPrefix),
    dryRun: settings.dryRun,
    wait: settings.wait,
    timeoutMs: settings.timeoutMs,
    maxConcurrency: settings.maxConcurrency,
  }
  const outcomes = await requestCorrections(drifted, options, deps)
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
