// Scenario 3 — config change → new Helm revision, with the real source-controller and
// helm-controller. Time from "ConfigMap updated in the cluster" to "history[0] is a new
// version, deployed", per method:
//   (a) Flux's own watch: `reconcile.fluxcd.io/watch: Enabled` on the ConfigMap;
//   (b) our watch mode: the bundled `dist/cli.js watch --debounce 0`, running throughout,
//       watching only its own namespace; the ConfigMap carries our label and names the release;
//   (c) our action's trigger step: the bundled dist/index.js run as the runner runs it, on a
//       real push; the ConfigMap lands a little after the action starts, as kustomize-
//       controller's apply would;
//   floor: a requestedAt merge patch sent the instant the ConfigMap is updated (the best any
//       trigger can do; helm-controller's own reconcile + upgrade time).
// Each method has a namespace of its own; the changes are interleaved, one at a time.

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runAction } from '../test/support/action.ts'
import { startCluster, type LocalCluster } from '../test/support/cluster.ts'
import { HELM_RELEASE, HELM_REPOSITORY, REQUESTED_AT, helmRelease, helmRepository } from '../test/support/flux.ts'
import { createRepo, type Repo } from '../test/support/repo.ts'
import { contentOfConfigMap, digestOf } from '../src/core/digest.ts'
import { keysFor } from '../src/core/keys.ts'
import { expectStatus, openSession, type ApiSession } from './http2.ts'
import { fig, median, ms, now, poll, quantile, sleep, type Figure, type ScenarioResult } from './lib.ts'
import { startWatchProcess, tokenTime, TRIGGERED, type WatchProcess } from './watch-process.ts'

export interface HelmOptions {
  /** Changes per method. */
  readonly changes: number
  readonly log: (line: string) => void
}

type Method = 'watchLabel' | 'watchMode' | 'action' | 'floor'

const METHOD_TITLES: Readonly<Record<Method, string>> = {
  watchLabel: '(a) Flux watch label (reconcile.fluxcd.io/watch: Enabled)',
  watchMode: '(b) our watch mode (bundled dist/cli.js watch, debounce 0)',
  action: '(c) our action (trigger step, bundled dist/index.js)',
  floor: 'floor: requestedAt patched at the instant of the update',
}

export interface HelmRow {
  readonly method: Method
  readonly title: string
  readonly works: boolean
  readonly samples: readonly Figure[]
  readonly median: Figure
  readonly p95: Figure
  /** action only */
  readonly detail?: ActionDetail
  /** watchMode only */
  readonly watch?: WatchModeDetail
}

export interface WatchModeDetail {
  /** ConfigMap update sent → our requestedAt token (the instant before the patch was sent). */
  readonly updateToPatch: { readonly median: Figure; readonly p95: Figure }
  /** The process's own event-to-patch (source event received → patch answered), from its log. */
  readonly eventToPatch: { readonly median: Figure; readonly p95: Figure }
  /** Resident memory of the watch process at the end. */
  readonly rss: Figure
}

export interface ActionDetail {
  /** ConfigMap update → our requestedAt patch (our wait-for-apply poll lag). */
  readonly applyToPatch: { readonly median: Figure; readonly p95: Figure }
  /** Action process start → exit (it waits for helm-controller's outcome). */
  readonly processWall: { readonly median: Figure; readonly p95: Figure }
  /** How long after the action started the ConfigMap was updated, per change. */
  readonly applyDelays: readonly Figure[]
  readonly peakRss: Figure
}

const APP = 'app'
const VALUES = 'app-values'
const KEYS = keysFor('nebius.ai')
const DEPLOY_TIMEOUT_MS = 90_000
const POLL_MS = 25

export async function helmScenario(options: HelmOptions): Promise<ScenarioResult<HelmRow>> {
  const cluster = await startCluster({ flux: true, log: (line) => options.log(`cluster: ${line}`) })
  try {
    const session = await openSession({ server: cluster.server, token: cluster.adminToken, caData: cluster.caData })
    try {
      return summarize(await measureAll(cluster, session, options), cluster)
    } finally {
      await session.close()
    }
  } finally {
    await cluster.stop()
  }
}

async function measureAll(cluster: LocalCluster, session: ApiSession, options: HelmOptions): Promise<HelmRow[]> {
  const namespaces: Record<Method, string> = {
    watchLabel: 'bench-watch-label',
    watchMode: 'bench-watch-mode',
    action: 'bench-action',
    floor: 'bench-floor',
  }
  for (const method of ['watchLabel', 'watchMode', 'action', 'floor'] as const) {
    await install(cluster, session, namespaces[method], method)
    options.log(`helm: ${namespaces[method]}/${APP} installed (revision 1)`)
  }
  const repo = createRepo('hrt-bench-helm-')
  const rssDir = await mkdtemp(join(tmpdir(), 'hrt-bench-rss-'))
  let watcher: WatchProcess | undefined
  try {
    // Only its own namespace: the other methods' ConfigMaps and releases are none of its business.
    watcher = await startWatchProcess({ kubeconfigPath: cluster.kubeconfigPath, namespaces: [namespaces.watchMode] })
    // The release records the installed values' digest: the initial sync triggers nothing.
    await watcher.line('initial sync done')
    repo.write({ 'apps/values.yaml': valuesManifest(namespaces.action, 0), 'apps/release.yaml': releaseManifest(namespaces.action) })
    const fleet: ActionFleet = { cluster, session, repo, head: repo.commit('fleet'), namespace: namespaces.action, rssDir }
    const samples: Record<Method, number[]> = { watchLabel: [], watchMode: [], action: [], floor: [] }
    const details: ActionSample[] = []
    const watchSamples: WatchModeSample[] = []
    let watchWorks = true
    for (let k = 1; k <= options.changes; k++) {
      if (watchWorks) {
        const sample = await watchLabelChange(session, namespaces.watchLabel, k)
        if (sample === undefined) watchWorks = false
        else samples.watchLabel.push(sample)
      }
      samples.floor.push(await floorChange(session, namespaces.floor, k))
      const watched = await watchModeChange(session, watcher, namespaces.watchMode, k)
      samples.watchMode.push(watched.latencyMs)
      watchSamples.push(watched)
      const action = await actionChange(fleet, k, applyDelay(k, options.changes))
      samples.action.push(action.latencyMs)
      details.push(action)
      options.log(
        `helm: change ${k}/${options.changes}: watch label ${watchWorks ? ms(samples.watchLabel.at(-1) ?? Number.NaN) : 'no upgrade'}, floor ${ms(samples.floor.at(-1) ?? Number.NaN)}, watch mode ${ms(watched.latencyMs)} (update→patch ${ms(watched.updateToPatchMs)}), action ${ms(action.latencyMs)} (apply→patch ${ms(action.applyToPatchMs)})`,
      )
    }
    const watchDetail = watchModeDetail(watchSamples, await watcher.rssKiB())
    return [
      row('watchLabel', watchWorks, samples.watchLabel),
      { ...row('watchMode', true, samples.watchMode), watch: watchDetail },
      row('action', true, samples.action, actionDetail(details)),
      row('floor', true, samples.floor),
    ]
  } finally {
    await watcher?.stop()
    repo.cleanup()
    await rm(rssDir, { recursive: true, force: true })
  }
}

/** Spread over 0.5–3 s: before, during and after the action's first wait-for-apply polls. */
function applyDelay(k: number, changes: number): number {
  return changes <= 1 ? 1_500 : 500 + Math.round((2_500 * (k - 1)) / (changes - 1))
}

function row(method: Method, works: boolean, samples: readonly number[], detail?: ActionDetail): HelmRow {
  return {
    method,
    title: METHOD_TITLES[method],
    works,
    samples: samples.map((s) => fig(s, 'ms')),
    median: fig(median(samples), 'ms'),
    p95: fig(quantile(samples, 0.95), 'ms'),
    ...(detail === undefined ? {} : { detail }),
  }
}

// ---- cluster objects -------------------------------------------------------------------

function crPath(api: { group: string; version: string; plural: string }, namespace: string, name?: string): string {
  return `/apis/${api.group}/${api.version}/namespaces/${namespace}/${api.plural}${name === undefined ? '' : `/${name}`}`
}

function configMapPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${namespace}/configmaps${name === undefined ? '' : `/${name}`}`
}

function valuesData(k: number): Record<string, string> {
  return { 'values.yaml': `greeting: hello-${k}\n` }
}

async function install(cluster: LocalCluster, session: ApiSession, namespace: string, method: Method): Promise<void> {
  await cluster.createNamespace(namespace)
  expectStatus(
    await session.request('POST', crPath(HELM_REPOSITORY, namespace), helmRepository({ namespace, url: cluster.chartRepoUrl, interval: '10m' })),
    [201],
    'HelmRepository',
  )
  const labels =
    method === 'watchLabel' ? { 'reconcile.fluxcd.io/watch': 'Enabled' } : method === 'watchMode' ? { [KEYS.triggerLabel]: KEYS.triggerLabelValue } : {}
  const annotations = method === 'watchMode' ? { [KEYS.targetNames]: APP, [KEYS.targetNamespace]: namespace } : {}
  expectStatus(
    await session.request('POST', configMapPath(namespace), { metadata: { name: VALUES, namespace, labels, annotations }, data: valuesData(0) }),
    [201],
    'ConfigMap',
  )
  // Our watch mode finds the installed values already recorded (as after any earlier trigger).
  const recorded = method === 'watchMode' ? { [KEYS.configDigest]: JSON.stringify({ [`ConfigMap/${namespace}/${VALUES}`]: valuesDigest(0) }) } : undefined
  const release = helmRelease({
    namespace,
    name: APP,
    interval: '1h',
    valuesFrom: [{ kind: 'ConfigMap', name: VALUES }],
    ...(recorded === undefined ? {} : { annotations: recorded }),
  })
  expectStatus(await session.request('POST', crPath(HELM_RELEASE, namespace), release), [201], 'HelmRelease')
  await waitForRevision(session, namespace, 0, 180_000)
}

function valuesDigest(k: number): string {
  return digestOf(contentOfConfigMap({ data: valuesData(k) }), { semantic: true })
}

interface Revision {
  readonly version: number
  readonly status: string
}

async function latestRevision(session: ApiSession, namespace: string): Promise<Revision | undefined> {
  const response = await session.request('GET', crPath(HELM_RELEASE, namespace, APP))
  expectStatus(response, [200], `reading ${namespace}/${APP}`)
  const object: unknown = JSON.parse(response.body)
  const history = (object as { status?: { history?: { version?: unknown; status?: unknown }[] } }).status?.history?.[0]
  return typeof history?.version === 'number' && typeof history.status === 'string' ? { version: history.version, status: history.status } : undefined
}

/** Polls every 25 ms until history[0] is a version above `after`, deployed; returns the time it was seen. */
async function waitForRevision(session: ApiSession, namespace: string, after: number, timeoutMs = DEPLOY_TIMEOUT_MS): Promise<number> {
  return poll(
    async () => {
      const latest = await latestRevision(session, namespace)
      return latest !== undefined && latest.version > after && latest.status === 'deployed' ? now() : undefined
    },
    { intervalMs: POLL_MS, timeoutMs, what: `a new deployed revision of ${namespace}/${APP} (after ${after})` },
  )
}

async function currentVersion(session: ApiSession, namespace: string): Promise<number> {
  return (await latestRevision(session, namespace))?.version ?? 0
}

async function updateConfigMap(session: ApiSession, namespace: string, k: number): Promise<void> {
  const patch = { data: valuesData(k) }
  expectStatus(await session.request('PATCH', configMapPath(namespace, VALUES), patch, 'application/merge-patch+json'), [200], 'updating the ConfigMap')
}

// ---- (a) the watch label ---------------------------------------------------------------

/** undefined when helm-controller did not upgrade on its own within 30 s (the label not honoured). */
async function watchLabelChange(session: ApiSession, namespace: string, k: number): Promise<number | undefined> {
  const before = await currentVersion(session, namespace)
  const t0 = now()
  await updateConfigMap(session, namespace, k)
  try {
    return (await waitForRevision(session, namespace, before, 30_000)) - t0
  } catch {
    return undefined
  }
}

// ---- floor -----------------------------------------------------------------------------

async function floorChange(session: ApiSession, namespace: string, k: number): Promise<number> {
  const before = await currentVersion(session, namespace)
  const t0 = now()
  await updateConfigMap(session, namespace, k)
  const patch = { metadata: { annotations: { [REQUESTED_AT]: new Date().toISOString() } } }
  expectStatus(await session.request('PATCH', crPath(HELM_RELEASE, namespace, APP), patch, 'application/merge-patch+json'), [200], 'requesting a reconcile')
  return (await waitForRevision(session, namespace, before)) - t0
}

// ---- (b) our watch mode -----------------------------------------------------------------

interface WatchModeSample {
  readonly latencyMs: number
  readonly updateToPatchMs: number
  readonly eventToPatchMs: number
}

/** Updates the ConfigMap and times update → deployed revision; the running watch process does the rest. */
async function watchModeChange(session: ApiSession, watcher: WatchProcess, namespace: string, k: number): Promise<WatchModeSample> {
  const before = await currentVersion(session, namespace)
  const mark = watcher.lines.length
  const t0 = now()
  const updatedAt = Date.now()
  await updateConfigMap(session, namespace, k)
  const deployed = await waitForRevision(session, namespace, before)
  const digest = valuesDigest(k).slice('sha256:'.length, 'sha256:'.length + 12)
  // Its log names the sources it triggered for, with a short digest: this change's line.
  const triggered = await watcher.line(TRIGGERED, (l) => String(l['sources']).endsWith(`@${digest}`), { from: mark, timeoutMs: 10_000 })
  return {
    latencyMs: deployed - t0,
    updateToPatchMs: tokenTime(String(triggered['token'])) - updatedAt,
    eventToPatchMs: Number(triggered['latencyMs']),
  }
}

function watchModeDetail(samples: readonly WatchModeSample[], rssKiB: number): WatchModeDetail {
  const summary = (values: readonly number[]) => ({ median: fig(median(values), 'ms'), p95: fig(quantile(values, 0.95), 'ms') })
  return {
    updateToPatch: summary(samples.map((s) => s.updateToPatchMs)),
    eventToPatch: summary(samples.map((s) => s.eventToPatchMs)),
    rss: fig(rssKiB / 1024, 'MiB'),
  }
}

// ---- (c) our action --------------------------------------------------------------------

interface ActionFleet {
  readonly cluster: LocalCluster
  readonly session: ApiSession
  readonly repo: Repo
  head: string
  readonly namespace: string
  readonly rssDir: string
}

interface ActionSample {
  readonly latencyMs: number
  readonly applyToPatchMs: number
  readonly processMs: number
  readonly applyDelayMs: number
  readonly maxRssKiB: number
}

const RSS_PROBE = join(dirname(fileURLToPath(import.meta.url)), 'rss-probe.mjs')

/**
 * Pushes a commit changing the values, starts the action on it, updates the ConfigMap
 * `applyDelayMs` later (kustomize-controller's apply), and times update → deployed revision.
 */
async function actionChange(fleet: ActionFleet, k: number, applyDelayMs: number): Promise<ActionSample> {
  const { session, namespace } = fleet
  const before = await currentVersion(session, namespace)
  const previous = fleet.head
  fleet.repo.write({ 'apps/values.yaml': valuesManifest(namespace, k) })
  fleet.head = fleet.repo.commit(`values ${k}`)
  const rssFile = join(fleet.rssDir, `action-${k}`)
  const kubeconfig = await readFile(fleet.cluster.kubeconfigPath, 'utf8')
  const started = now()
  const action = runAction({
    workspace: fleet.repo.dir,
    eventName: 'push',
    event: { before: previous, after: fleet.head, ref: 'refs/heads/main' },
    sha: fleet.head,
    inputs: { kubeconfig, timeout: '90s' },
    env: { NODE_OPTIONS: `--import=${RSS_PROBE}`, BENCH_RSS_FILE: rssFile },
  })
  const processEnd = action.then(() => now())
  await sleep(applyDelayMs)
  const t0 = now()
  const appliedAt = Date.now()
  await updateConfigMap(session, namespace, k)
  const deployed = await waitForRevision(session, namespace, before)
  const run = await action
  if (run.exitCode !== 0) throw new Error(`the action failed on change ${k}: ${run.stdout.slice(-2000)}${run.stderr.slice(-1000)}`)
  const token = triggeredToken(run.outputs['triggered'])
  return {
    latencyMs: deployed - t0,
    applyToPatchMs: tokenTime(token) - appliedAt,
    processMs: (await processEnd) - started,
    applyDelayMs,
    maxRssKiB: Number((await readFile(rssFile, 'utf8').catch(() => '0')).trim()),
  }
}

function triggeredToken(output: string | undefined): string {
  const triggered: unknown = JSON.parse(output ?? '[]')
  const first: unknown = Array.isArray(triggered) ? triggered[0] : undefined
  const token = typeof first === 'object' && first !== null && 'token' in first ? first.token : undefined
  if (typeof token !== 'string') throw new Error(`the action reported no triggered release: ${output}`)
  return token
}

function actionDetail(samples: readonly ActionSample[]): ActionDetail {
  const summary = (values: readonly number[]) => ({ median: fig(median(values), 'ms'), p95: fig(quantile(values, 0.95), 'ms') })
  return {
    applyToPatch: summary(samples.map((s) => s.applyToPatchMs)),
    processWall: summary(samples.map((s) => s.processMs)),
    applyDelays: samples.map((s) => fig(s.applyDelayMs, 'ms')),
    peakRss: fig(Math.max(0, ...samples.map((s) => s.maxRssKiB)) / 1024, 'MiB'),
  }
}

function valuesManifest(namespace: string, k: number): string {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${VALUES}
  namespace: ${namespace}
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: ${APP}
    nebius.ai/helmreleases-namespace: ${namespace}
data:
  values.yaml: |
    greeting: hello-${k}
`
}

function releaseManifest(namespace: string): string {
  return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ${APP}
  namespace: ${namespace}
spec:
  interval: 1h
  chart:
    spec:
      chart: demo
      version: '*'
      sourceRef:
        kind: HelmRepository
        name: charts
  valuesFrom:
    - kind: ConfigMap
      name: ${VALUES}
`
}

function signed(value: number): string {
  return value < 0 ? `−${ms(-value)}` : `+${ms(value)}`
}

// ---- table -----------------------------------------------------------------------------

function summarize(rows: readonly HelmRow[], cluster: LocalCluster): ScenarioResult<HelmRow> {
  const columns = ['method', 'works here', 'changes', 'median', 'p95', 'over the floor (median)']
  const floor = rows.find((r) => r.method === 'floor')?.median.value ?? Number.NaN
  const table = rows.map((r) => [
    r.title,
    r.works ? 'yes' : 'NO',
    String(r.samples.length),
    ms(r.median.value),
    ms(r.p95.value),
    r.method === 'floor' ? '–' : signed(r.median.value - floor),
  ])
  const action = rows.find((r) => r.method === 'action')
  const watch = rows.find((r) => r.method === 'watchLabel')
  const watchMode = rows.find((r) => r.method === 'watchMode')
  const notes = [
    `helm-controller ${cluster.versions.helmController}, source-controller ${cluster.versions.sourceController}, Kubernetes ${cluster.versions.kubernetes}. Latency = ConfigMap update accepted by the apiserver → history[0] of the HelmRelease is a higher version with status deployed (polled every ${POLL_MS} ms).`,
    watch?.works === false
      ? 'The watch label did NOT trigger an upgrade on this cluster within 30 s.'
      : 'The watch label works here: helm-controller upgraded on the ConfigMap change alone (no requestedAt).',
    ...(watchMode?.watch === undefined
      ? []
      : [
          `(b) our watch mode, over the floor: ${signed(watchMode.median.value - floor)} median. ConfigMap update sent → our requestedAt token (the instant before the patch is sent): ${ms(watchMode.watch.updateToPatch.median.value)} median, ${ms(watchMode.watch.updateToPatch.p95.value)} p95; the process's own event-to-patch (source event received → patch answered): ${ms(watchMode.watch.eventToPatch.median.value)} median, ${ms(watchMode.watch.eventToPatch.p95.value)} p95. It runs throughout, watching only its namespace; RSS ${watchMode.watch.rss.value.toFixed(0)} MiB at the end.`,
        ]),
    ...(action?.detail === undefined
      ? []
      : [
          `(c) our action, over the floor: ${signed(action.median.value - floor)} median. Of it, ConfigMap update → our requestedAt patch (the wait-for-apply poll lag, a poll every 200 ms, or the action still starting when the apply is early): ${ms(action.detail.applyToPatch.median.value)} median, ${ms(action.detail.applyToPatch.p95.value)} p95. The ConfigMap was applied ${action.detail.applyDelays.map((d) => ms(d.value)).join(', ')} after the action started.`,
          `The action process (start → exit, including waiting for helm-controller's outcome): ${ms(action.detail.processWall.median.value)} median; peak RSS ${action.detail.peakRss.value.toFixed(0)} MiB.`,
        ]),
  ]
  return { title: 'Config change → new Helm revision (real helm-controller)', columns, table, rows, targets: [], notes }
}
