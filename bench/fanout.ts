// Scenario 2 — Fan-out: one changed ConfigMap whose annotation names N HelmReleases, on the
// local apiserver without Flux controllers (nothing competes for it). Ours: runTrigger with
// wait, wait-for-apply and discover off, in a fresh process per run. Baselines: a raw HTTP/2
// merge-patch loop at the same concurrency, and a sequential `kubectl annotate` loop; a
// diagnostic floor for our own request pattern (a patch and an Event per release).

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCluster, type LocalCluster } from '../test/support/cluster.ts'
import { HELM_RELEASE, REQUESTED_AT, helmRelease } from '../test/support/flux.ts'
import { createRepo, type Repo } from '../test/support/repo.ts'
import { expectStatus, openSession, type ApiTarget } from './http2.ts'
import { fig, mapLimit, median, ms, now, num, ratio, run, sleep, target, yes, type Figure, type ScenarioResult, type Target } from './lib.ts'
import { runWorker } from './worker-client.ts'
import type { FanoutRun } from './worker.ts'

export interface FanoutOptions {
  readonly sizes: readonly number[]
  readonly concurrencies: readonly number[]
  /** Runs per (size, concurrency) below 1,000 releases; 1,000 runs at most twice, larger sizes once. */
  readonly reps: number
  /** Sizes the kubectl loop runs at (sequential, so only small ones). */
  readonly kubectlSizes: readonly number[]
  readonly log: (line: string) => void
}

export interface Throughput {
  readonly wall: Figure
  readonly throughput: Figure
  readonly runs: readonly Figure[]
}

export type OursThroughput = Throughput & {
  /** Median time to the answer of the last PATCH: every release triggered, Events still being written. */
  readonly patched: Figure
  readonly peakRss: Figure
  /** RSS once the modules are loaded, before any work (the worker loads them unbundled). */
  readonly loadedRss: Figure
  readonly requestsPerRelease: Figure
  readonly connectionsPerRelease: Figure
}

export interface FanoutRow {
  readonly releases: number
  readonly concurrency: number
  readonly ours: OursThroughput
  readonly baselines: {
    readonly rawHttp2: Throughput
    /** Diagnostic floor for our request pattern: merge PATCH + POST Event per release on one HTTP/2 connection. */
    readonly rawHttp2SameRequests: Throughput
    readonly kubectl?: Throughput
  }
  /** ours releases/s ÷ raw releases/s */
  readonly ratioToRaw: Figure
  /** ours releases/s ÷ kubectl releases/s */
  readonly ratioToKubectl?: Figure
}

const NAMESPACE = 'bench-fanout'
const PREFIX = 'nebius.ai'

export async function fanoutScenario(options: FanoutOptions): Promise<ScenarioResult<FanoutRow>> {
  const largest = Math.max(...options.sizes)
  const cluster = await startCluster({ flux: false, log: (line) => options.log(`cluster: ${line}`) })
  try {
    const api: ApiTarget = { server: cluster.server, token: cluster.adminToken, caData: cluster.caData }
    await cluster.createNamespace(NAMESPACE)
    const t0 = now()
    await createReleases(api, largest)
    options.log(`fanout: created ${num(largest)} HelmReleases in ${ms(now() - t0)}`)
    return summarize(await measureAll(cluster, api, options))
  } finally {
    await cluster.stop()
  }
}

async function measureAll(cluster: LocalCluster, api: ApiTarget, options: FanoutOptions): Promise<FanoutRow[]> {
  const repo = createRepo('hrt-bench-fanout-')
  const cacheDir = await mkdtemp(join(tmpdir(), 'hrt-bench-kubectl-'))
  try {
    const fleet: Fleet = { cluster, api, repo, revision: 0, cacheDir }
    commitValues(fleet, 1) // the first commit: every later one is a change
    const rows: FanoutRow[] = []
    for (const releases of options.sizes) {
      for (const concurrency of options.concurrencies) rows.push(await measure(fleet, releases, concurrency, options))
    }
    return rows
  } finally {
    repo.cleanup()
    await rm(cacheDir, { recursive: true, force: true })
  }
}

interface Fleet {
  readonly cluster: LocalCluster
  readonly api: ApiTarget
  readonly repo: Repo
  revision: number
  readonly cacheDir: string
}

async function measure(fleet: Fleet, releases: number, concurrency: number, options: FanoutOptions): Promise<FanoutRow> {
  const reps = repsFor(releases, options.reps)
  const ours: OursRuns = { runs: [], maxRssKiB: 0, loadedRssKiB: 0 }
  const rawMs: number[] = []
  const sameMs: number[] = []
  for (let i = 0; i < reps; i++) {
    await runOurs(fleet, releases, concurrency, ours)
    await sleep(SETTLE_MS)
    rawMs.push(await rawPatchLoop(fleet.api, releases, concurrency, `raw-${fleet.revision}-${i}`))
    await sleep(SETTLE_MS)
    sameMs.push(await rawSameRequests(fleet.api, releases, concurrency, `same-${fleet.revision}-${i}`))
  }
  const kubectl =
    concurrency === Math.min(...options.concurrencies) && options.kubectlSizes.includes(releases) ? await kubectlLoop(fleet, releases, options.log) : undefined
  const oursRow = oursThroughput(releases, ours)
  const rawMedian = median(rawMs)
  const row: FanoutRow = {
    releases,
    concurrency,
    ours: oursRow,
    baselines: {
      rawHttp2: throughput(releases, rawMedian, rawMs),
      rawHttp2SameRequests: throughput(releases, median(sameMs), sameMs),
      ...(kubectl === undefined ? {} : { kubectl: throughput(releases, kubectl, [kubectl]) }),
    },
    ratioToRaw: fig(rawMedian / oursRow.wall.value, 'ours/raw throughput'),
    ...(kubectl === undefined ? {} : { ratioToKubectl: fig(kubectl / oursRow.wall.value, 'ours/kubectl throughput') }),
  }
  options.log(
    `fanout: ${num(releases)} releases at concurrency ${concurrency}: ours ${ms(oursRow.wall.value)} (all patched at ${ms(oursRow.patched.value)}), raw ${ms(rawMedian)}, raw same requests ${ms(median(sameMs))}${kubectl === undefined ? '' : `, kubectl ${ms(kubectl)}`}`,
  )
  return row
}

function repsFor(releases: number, reps: number): number {
  if (releases > 1_000) return 1
  return releases === 1_000 ? Math.min(reps, 2) : reps
}

/** Lets the apiserver finish what the previous run left (closing connections, its own GC) before the next is timed. */
const SETTLE_MS = 500

interface OursRuns {
  readonly runs: FanoutRun[]
  maxRssKiB: number
  loadedRssKiB: number
}

/** One runTrigger in a fresh process over a new commit (a new digest: every release needs a trigger). */
async function runOurs(fleet: Fleet, releases: number, concurrency: number, into: OursRuns): Promise<void> {
  await sleep(SETTLE_MS)
  const range = { base: headOf(fleet), head: commitValues(fleet, releases) }
  const job = { kind: 'fanout', repo: fleet.repo.dir, kubeconfigPath: fleet.cluster.kubeconfigPath, concurrency, ranges: [range] } as const
  const output = await runWorker(job, 10 * 60_000)
  const runs = output.runs.filter(isFanoutRun)
  for (const r of runs) {
    if (r.triggered !== releases) throw new Error(`ours triggered ${r.triggered} of ${releases} releases (${JSON.stringify(r.other)}, ${r.warnings} warnings)`)
  }
  into.runs.push(...runs)
  into.maxRssKiB = Math.max(into.maxRssKiB, output.maxRssKiB)
  into.loadedRssKiB = Math.max(into.loadedRssKiB, output.loadedRssKiB)
}

function oursThroughput(releases: number, ours: OursRuns): OursThroughput {
  const wall = ours.runs.map((r) => r.wallMs)
  return {
    ...throughput(releases, median(wall), wall),
    patched: fig(median(ours.runs.map((r) => r.patchedMs)), 'ms'),
    peakRss: fig(ours.maxRssKiB / 1024, 'MiB'),
    loadedRss: fig(ours.loadedRssKiB / 1024, 'MiB'),
    requestsPerRelease: fig(median(ours.runs.map((r) => r.requests / releases)), 'requests/release'),
    connectionsPerRelease: fig(median(ours.runs.map((r) => r.connections / releases)), 'connections/release'),
  }
}

function isFanoutRun(r: object): r is FanoutRun {
  return 'triggered' in r
}

function throughput(releases: number, wallMs: number, runs: readonly number[]): Throughput {
  return { wall: fig(wallMs, 'ms'), throughput: fig(releases / (wallMs / 1000), 'releases/s'), runs: runs.map((r) => fig(r, 'ms')) }
}

function releaseName(i: number): string {
  return `app-${String(i).padStart(5, '0')}`
}

function releasesPath(name?: string): string {
  const base = `/apis/${HELM_RELEASE.group}/${HELM_RELEASE.version}/namespaces/${NAMESPACE}/helmreleases`
  return name === undefined ? base : `${base}/${name}`
}

/** N HelmReleases pointing at a HelmRepository that does not exist (no controller runs). */
async function createReleases(api: ApiTarget, count: number): Promise<void> {
  const session = await openSession(api)
  try {
    await mapLimit(
      Array.from({ length: count }, (_, i) => releaseName(i)),
      50,
      async (name) => {
        const body = helmRelease({ namespace: NAMESPACE, name, valuesFrom: [{ kind: 'ConfigMap', name: 'shared-values' }] })
        expectStatus(await session.request('POST', releasesPath(), body), [201, 409], `creating HelmRelease ${name}`)
      },
    )
  } finally {
    await session.close()
  }
}

// ---- the repository: one labelled ConfigMap naming the first N releases ------------------

function valuesManifest(releases: number, revision: number): string {
  const names = Array.from({ length: releases }, (_, i) => releaseName(i)).join(', ')
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared-values
  namespace: ${NAMESPACE}
  labels:
    ${PREFIX}/helmrelease-trigger-operator: "true"
  annotations:
    ${PREFIX}/helmreleases-namespace: ${NAMESPACE}
    ${PREFIX}/helmreleases-name: "${names}"
data:
  values.yaml: |
    revision: ${revision}
`
}

function commitValues(fleet: Fleet, releases: number): string {
  fleet.revision += 1
  fleet.repo.write({ 'apps/shared-values.yaml': valuesManifest(releases, fleet.revision) })
  return fleet.repo.commit(`values revision ${fleet.revision}`)
}

function headOf(fleet: Fleet): string {
  return fleet.repo.git('rev-parse', 'HEAD')
}

// ---- baselines -------------------------------------------------------------------------

/** The floor: one HTTP/2 connection, the same merge patch, `concurrency` streams in flight. */
async function rawPatchLoop(api: ApiTarget, releases: number, concurrency: number, token: string): Promise<number> {
  const names = Array.from({ length: releases }, (_, i) => releaseName(i))
  const t0 = now()
  const session = await openSession(api)
  try {
    await mapLimit(names, concurrency, async (name) => {
      const body = { metadata: { annotations: { [REQUESTED_AT]: `${token}-${name}` } } }
      expectStatus(await session.request('PATCH', releasesPath(name), body, 'application/merge-patch+json'), [200], `patching ${name}`)
    })
    return now() - t0
  } finally {
    await session.close()
  }
}

/**
 * Our request pattern on one HTTP/2 connection: merge-patch each release, POST an Event each.
 * (Ours also lists the namespace once per 500 releases before patching: left out here.)
 */
async function rawSameRequests(api: ApiTarget, releases: number, concurrency: number, token: string): Promise<number> {
  const names = Array.from({ length: releases }, (_, i) => releaseName(i))
  const t0 = now()
  const session = await openSession(api)
  try {
    await mapLimit(names, concurrency, async (name) => {
      const body = { metadata: { annotations: { [REQUESTED_AT]: `${token}-${name}` } } }
      expectStatus(await session.request('PATCH', releasesPath(name), body, 'application/merge-patch+json'), [200], `patching ${name}`)
      expectStatus(await session.request('POST', `/api/v1/namespaces/${NAMESPACE}/events`, eventFor(name, token)), [201], `recording an Event for ${name}`)
    })
    return now() - t0
  } finally {
    await session.close()
  }
}

function eventFor(name: string, token: string): unknown {
  const at = new Date().toISOString()
  return {
    metadata: { name: `${name}.${token}`, namespace: NAMESPACE },
    involvedObject: { apiVersion: `${HELM_RELEASE.group}/${HELM_RELEASE.version}`, kind: HELM_RELEASE.kind, name, namespace: NAMESPACE },
    type: 'Normal',
    reason: 'ConfigChanged',
    message: `bench ${token}`,
    source: { component: 'bench' },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
  }
}

/** What a script does: `kubectl annotate --overwrite`, one release after another; undefined (logged) when kubectl fails. */
async function kubectlLoop(fleet: Fleet, releases: number, log: (line: string) => void): Promise<number | undefined> {
  try {
    return await timeKubectl(fleet, releases)
  } catch (error) {
    log(`fanout: the kubectl baseline failed, left out: ${error instanceof Error ? error.message : String(error)}`)
    return undefined
  }
}

async function timeKubectl(fleet: Fleet, releases: number): Promise<number> {
  const common = ['--kubeconfig', fleet.cluster.kubeconfigPath, '--cache-dir', fleet.cacheDir, '--namespace', NAMESPACE, '--request-timeout', '30s']
  // Discovery fills the cache once, as on any machine that used kubectl before: not timed.
  await kubectlOk([...common, 'get', `helmreleases.helm.toolkit.fluxcd.io/${releaseName(0)}`, '--output', 'name'])
  const t0 = now()
  for (let i = 0; i < releases; i++) {
    await kubectlOk([
      ...common,
      'annotate',
      '--overwrite',
      `helmreleases.helm.toolkit.fluxcd.io/${releaseName(i)}`,
      `${REQUESTED_AT}=kubectl-${fleet.revision}-${i}`,
    ])
  }
  return now() - t0
}

async function kubectlOk(args: readonly string[]): Promise<void> {
  const ran = await run('kubectl', args, { timeoutMs: 60_000 })
  if (ran.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${ran.code}: ${ran.stderr.slice(-1000)}`)
}

// ---- table and targets -----------------------------------------------------------------

function summarize(rows: readonly FanoutRow[]): ScenarioResult<FanoutRow> {
  const columns = [
    'releases',
    'conc.',
    'ours',
    'all patched at',
    'ours rel/s',
    'req / conn per release',
    'ours peak RSS (+ over loaded)',
    'raw HTTP/2',
    'raw rel/s',
    'ours ÷ raw',
    'kubectl loop',
    'kubectl rel/s',
    'ours ÷ kubectl',
    'raw, PATCH + Event',
  ]
  const table = rows.map((r) => [
    num(r.releases),
    String(r.concurrency),
    ms(r.ours.wall.value),
    ms(r.ours.patched.value),
    num(r.ours.throughput.value),
    `${r.ours.requestsPerRelease.value.toFixed(2)} / ${r.ours.connectionsPerRelease.value.toFixed(2)}`,
    `${r.ours.peakRss.value.toFixed(0)} MiB (+${(r.ours.peakRss.value - r.ours.loadedRss.value).toFixed(0)})`,
    ms(r.baselines.rawHttp2.wall.value),
    num(r.baselines.rawHttp2.throughput.value),
    ratio(r.ratioToRaw.value),
    r.baselines.kubectl === undefined ? '–' : ms(r.baselines.kubectl.wall.value),
    r.baselines.kubectl === undefined ? '–' : num(r.baselines.kubectl.throughput.value, 1),
    r.ratioToKubectl === undefined ? '–' : ratio(r.ratioToKubectl.value),
    `${ms(r.baselines.rawHttp2SameRequests.wall.value)} (${num(r.baselines.rawHttp2SameRequests.throughput.value)}/s)`,
  ])
  const targets: Target[] = []
  const at1000 = rows.find((r) => r.releases === 1_000 && r.concurrency === 10)
  if (at1000 !== undefined) {
    targets.push(target('fanout-1000-under-5s', 'Trigger 1,000 releases under 5 s (max-concurrency 10)', at1000.ours.wall, fig(5_000, 'ms'), 'below'))
    targets.push(
      target(
        'fanout-1000-70pct-of-raw',
        "At least 70% of the raw HTTP/2 loop's throughput at 1,000 releases (concurrency 10)",
        at1000.ratioToRaw,
        fig(0.7, 'ours/raw throughput'),
        'atLeast',
      ),
    )
  }
  const largest = rows.filter((r) => r.concurrency === 10).at(-1)
  if (at1000 === undefined && largest !== undefined) {
    const description = `At least 70% of the raw HTTP/2 loop's throughput at ${num(largest.releases)} releases (concurrency 10; a stand-in: the targets are at 1,000 releases)`
    targets.push(target(`fanout-${largest.releases}-70pct-of-raw`, description, largest.ratioToRaw, fig(0.7, 'ours/raw throughput'), 'atLeast'))
  }
  const notes = [
    'Ours: one fresh process per run (as the action is), timed around runTrigger (git read, plan, connect, one LIST per 500 releases of the namespace, a merge PATCH per release, then an Event per release). "All patched at" is when the last PATCH was answered: every release is triggered by then. Requests and new connections counted on undici\'s diagnostics channels. Peak RSS "+" is the growth over the process once its modules are loaded.',
    'Raw: one HTTP/2 session (a single TLS connection), the same merge patch of requestedAt, the same number in flight; timed including the connection.',
    'Raw, PATCH + Event: a diagnostic floor for our request pattern (merge PATCH + POST Event per release) on one HTTP/2 connection.',
    'kubectl: sequential `kubectl annotate --overwrite` with a warm discovery cache; run at the listed sizes only, nothing extrapolated.',
    ...targets.map((t) => `${t.description}: ${yes(t.met)} (${t.value.value} ${t.value.unit}, threshold ${t.threshold.value} ${t.threshold.unit})`),
  ]
  return { title: 'Fan-out: one changed ConfigMap naming N HelmReleases (apiserver without controllers)', columns, table, rows, targets, notes }
}
