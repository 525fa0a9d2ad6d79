// Scenario 3 — config change → new Helm revision, with the real source-controller and
// helm-controller. Time from "ConfigMap updated in the cluster" to "history[0] is a new
// version, deployed", per method:
//   (a) Flux's own watch: `reconcile.fluxcd.io/watch: Enabled` on the ConfigMap;
//   (c) our action's trigger step: the bundled dist/index.js run as the runner runs it, on a
//       real push; the ConfigMap lands a little after the action starts, as kustomize-
//       controller's apply would;
//   floor: a requestedAt merge patch sent the instant the ConfigMap is updated (the best any
//       trigger can do; helm-controller's own reconcile + upgrade time).
// (b), our `watch` mode, does not exist yet.

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runAction } from '../test/support/action.ts'
import { startCluster, type LocalCluster } from '../test/support/cluster.ts'
import { HELM_RELEASE, HELM_REPOSITORY, REQUESTED_AT, helmRelease, helmRepository } from '../test/support/flux.ts'
import { createRepo, type Repo } from '../test/support/repo.ts'
import { expectStatus, openSession, type ApiSession } from './http2.ts'
import { fig, median, ms, now, poll, quantile, sleep, type Figure, type ScenarioResult } from './lib.ts'

export interface HelmOptions {
  /** Changes per method. */
  readonly changes: number
  readonly log: (line: string) => void
}

type Method = 'watchLabel' | 'action' | 'floor'

const METHOD_TITLES: Readonly<Record<Method, string>> = {
  watchLabel: '(a) Flux watch label (reconcile.fluxcd.io/watch: Enabled)',
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
  const namespaces: Record<Method, string> = { watchLabel: 'bench-watch-label', action: 'bench-action', floor: 'bench-floor' }
  for (const method of ['watchLabel', 'action', 'floor'] as const) {
    await install(cluster, session, namespaces[method], method === 'watchLabel')
    options.log(`helm: ${namespaces[method]}/${APP} installed (revision 1)`)
  }
  const repo = createRepo('hrt-bench-helm-')
  const rssDir = await mkdtemp(join(tmpdir(), 'hrt-bench-rss-'))
  try {
    repo.write({ 'apps/values.yaml': valuesManifest(namespaces.action, 0), 'apps/release.yaml': releaseManifest(namespaces.action) })
    const fleet: ActionFleet = { cluster, session, repo, head: repo.commit('fleet'), namespace: namespaces.action, rssDir }
    const samples: Record<Method, number[]> = { watchLabel: [], action: [], floor: [] }
    const details: ActionSample[] = []
    let watchWorks = true
    for (let k = 1; k <= options.changes; k++) {
      if (watchWorks) {
        const sample = await watchLabelChange(session, namespaces.watchLabel, k)
        if (sample === undefined) watchWorks = false
        else samples.watchLabel.push(sample)
      }
      samples.floor.push(await floorChange(session, namespaces.floor, k))
      const action = await actionChange(fleet, k, applyDelay(k, options.changes))
      samples.action.push(action.latencyMs)
      details.push(action)
      options.log(
        `helm: change ${k}/${options.changes}: watch label ${watchWorks ? ms(samples.watchLabel.at(-1) ?? Number.NaN) : 'no upgrade'}, floor ${ms(samples.floor.at(-1) ?? Number.NaN)}, action ${ms(action.latencyMs)} (apply→patch ${ms(action.applyToPatchMs)})`,
      )
    }
    return [row('watchLabel', watchWorks, samples.watchLabel), row('action', true, samples.action, actionDetail(details)), row('floor', true, samples.floor)]
  } finally {
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

async function install(cluster: LocalCluster, session: ApiSession, namespace: string, watchLabel: boolean): Promise<void> {
  await cluster.createNamespace(namespace)
  expectStatus(
    await session.request('POST', crPath(HELM_REPOSITORY, namespace), helmRepository({ namespace, url: cluster.chartRepoUrl, interval: '10m' })),
    [201],
    'HelmRepository',
  )
  const labels = watchLabel ? { 'reconcile.fluxcd.io/watch': 'Enabled' } : {}
  expectStatus(
    await session.request('POST', configMapPath(namespace), { metadata: { name: VALUES, namespace, labels }, data: valuesData(0) }),
    [201],
    'ConfigMap',
  )
  const release = helmRelease({ namespace, name: APP, interval: '1h', valuesFrom: [{ kind: 'ConfigMap', name: VALUES }] })
  expectStatus(await session.request('POST', crPath(HELM_RELEASE, namespace), release), [201], 'HelmRelease')
  await waitForRevision(session, namespace, 0, 180_000)
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

/** Our token is RFC 3339 with nine fractional digits: the first three are the milliseconds. */
function tokenTime(token: string): number {
  return Date.parse(`${token.slice(0, 23)}Z`)
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
  const notes = [
    `helm-controller ${cluster.versions.helmController}, source-controller ${cluster.versions.sourceController}, Kubernetes ${cluster.versions.kubernetes}. Latency = ConfigMap update accepted by the apiserver → history[0] of the HelmRelease is a higher version with status deployed (polled every ${POLL_MS} ms).`,
    watch?.works === false
      ? 'The watch label did NOT trigger an upgrade on this cluster within 30 s.'
      : 'The watch label works here: helm-controller upgraded on the ConfigMap change alone (no requestedAt).',
    '(b) our `watch` mode is not measured: it does not exist yet.',
    ...(action?.detail === undefined
      ? []
      : [
          `Our added overhead over the floor: ${ms(action.median.value - floor)} median. Of it, ConfigMap update → our requestedAt patch (the wait-for-apply poll lag, a poll every 200 ms, or the action still starting when the apply is early): ${ms(action.detail.applyToPatch.median.value)} median, ${ms(action.detail.applyToPatch.p95.value)} p95. The ConfigMap was applied ${action.detail.applyDelays.map((d) => ms(d.value)).join(', ')} after the action started.`,
          `The action process (start → exit, including waiting for helm-controller's outcome): ${ms(action.detail.processWall.median.value)} median; peak RSS ${action.detail.peakRss.value.toFixed(0)} MiB.`,
        ]),
  ]
  return { title: 'Config change → new Helm revision (real helm-controller)', columns, table, rows, targets: [], notes }
}
