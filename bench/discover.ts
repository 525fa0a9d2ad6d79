// Scenario 5 — discover over N HelmReleases: every release of the cluster read page by page,
// those that use valuesFrom labelled, the wiring linted. Ours: runDiscover in a fresh process
// (as the CLI and the action run it), once when half the releases need the label and once
// more when nothing needs changing. Floor: a raw paginated LIST of every release on one
// HTTP/2 connection, the least any discovery must read.

import { startCluster } from '../test/support/cluster.ts'
import { HELM_RELEASE, helmRelease } from '../test/support/flux.ts'
import { expectStatus, openSession, type ApiTarget } from './http2.ts'
import { fig, mapLimit, ms, now, num, ratio, type Figure, type ScenarioResult } from './lib.ts'
import { runWorker } from './worker-client.ts'
import type { DiscoverRun } from './worker.ts'

export interface DiscoverOptions {
  /** Releases in the cluster, ascending: the fleet grows from one size to the next. */
  readonly sizes: readonly number[]
  readonly log: (line: string) => void
}

export interface DiscoverPass {
  readonly wall: Figure
  readonly requests: Figure
  readonly requestsByMethod: Readonly<Record<string, number>>
  readonly labelled: number
  readonly findings: number
  readonly peakRss: Figure
  readonly loadedRss: Figure
}

export interface DiscoverRow {
  readonly releases: number
  readonly namespaces: number
  /** Releases that read valuesFrom and were not labelled yet. */
  readonly toLabel: number
  readonly first: DiscoverPass
  readonly rerun: DiscoverPass
  readonly floor: { readonly wall: Figure; readonly pages: number }
  /** rerun.wall / floor.wall */
  readonly ratio: Figure
}

const NAMESPACES = 10
const PREFIX = 'bench-discover'
/** One values ConfigMap per this many releases (half the releases read one). */
const RELEASES_PER_SOURCE = 20

export async function discoverScenario(options: DiscoverOptions): Promise<ScenarioResult<DiscoverRow>> {
  const cluster = await startCluster({ flux: false, log: (line) => options.log(`cluster: ${line}`) })
  try {
    const api: ApiTarget = { server: cluster.server, token: cluster.adminToken, caData: cluster.caData }
    for (let n = 0; n < NAMESPACES; n++) await cluster.createNamespace(namespaceOf(n))
    const rows: DiscoverRow[] = []
    let created = 0
    for (const size of options.sizes) {
      const t0 = now()
      await createFleet(api, created, size)
      options.log(`discover: fleet of ${num(size)} HelmReleases ready in ${ms(now() - t0)}`)
      const toLabel = usesValuesFrom(created, size)
      created = size
      const first = await pass(cluster.kubeconfigPath)
      const rerun = await pass(cluster.kubeconfigPath)
      const floor = await rawList(api)
      rows.push({ releases: size, namespaces: NAMESPACES, toLabel, first, rerun, floor, ratio: fig(rerun.wall.value / floor.wall.value, 'ours/floor') })
      options.log(
        `discover: ${num(size)} releases: first ${ms(first.wall.value)} (${first.labelled} labelled), re-run ${ms(rerun.wall.value)}, raw list ${ms(floor.wall.value)}`,
      )
    }
    return summarize(rows)
  } finally {
    await cluster.stop()
  }
}

async function pass(kubeconfigPath: string): Promise<DiscoverPass> {
  const output = await runWorker({ kind: 'discover', kubeconfigPath, runs: 1 }, 10 * 60_000)
  const run = output.runs.find((r): r is DiscoverRun => 'labelled' in r)
  if (run === undefined) throw new Error('the discover worker reported no run')
  return {
    wall: fig(run.wallMs, 'ms'),
    requests: fig(run.requests, 'requests'),
    requestsByMethod: run.requestsByMethod,
    labelled: run.labelled,
    findings: run.findings,
    peakRss: fig(output.maxRssKiB / 1024, 'MiB'),
    loadedRss: fig(output.loadedRssKiB / 1024, 'MiB'),
  }
}

function namespaceOf(i: number): string {
  return `${PREFIX}-${i % NAMESPACES}`
}

function sourceName(i: number): string {
  return `values-${Math.floor(i / RELEASES_PER_SOURCE)}`
}

function usesValuesFrom(from: number, to: number): number {
  let n = 0
  for (let i = from; i < to; i++) if (i % 2 === 0) n++
  return n
}

/** Releases from..to-1 over the namespaces; the even ones read a shared values ConfigMap (created too). */
async function createFleet(api: ApiTarget, from: number, to: number): Promise<void> {
  const session = await openSession(api)
  try {
    // valuesFrom names a ConfigMap of the release's own namespace.
    const sources = new Map<string, { namespace: string; name: string }>()
    for (let i = from; i < to; i++) {
      if (i % 2 === 0) sources.set(`${namespaceOf(i)}/${sourceName(i)}`, { namespace: namespaceOf(i), name: sourceName(i) })
    }
    await mapLimit([...sources.values()], 50, async ({ namespace, name }) => {
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { 'values.yaml': `source: ${name}\n` } }
      expectStatus(await session.request('POST', `/api/v1/namespaces/${namespace}/configmaps`, body), [201, 409], `creating ConfigMap ${namespace}/${name}`)
    })
    await mapLimit(
      Array.from({ length: to - from }, (_, k) => from + k),
      50,
      async (i) => {
        const namespace = namespaceOf(i)
        const valuesFrom = i % 2 === 0 ? [{ kind: 'ConfigMap' as const, name: sourceName(i) }] : undefined
        const body = helmRelease({ namespace, name: `app-${String(i).padStart(5, '0')}`, ...(valuesFrom === undefined ? {} : { valuesFrom }) })
        expectStatus(
          await session.request('POST', `/apis/${HELM_RELEASE.group}/${HELM_RELEASE.version}/namespaces/${namespace}/helmreleases`, body),
          [201, 409],
          `creating HelmRelease ${i}`,
        )
      },
    )
  } finally {
    await session.close()
  }
}

/** Every HelmRelease of the cluster, 500 a page, as discover reads them: the floor. */
async function rawList(api: ApiTarget): Promise<{ wall: Figure; pages: number }> {
  const t0 = now()
  const session = await openSession(api)
  let pages = 0
  try {
    let next = ''
    do {
      const query = `limit=500${next === '' ? '' : `&continue=${encodeURIComponent(next)}`}`
      const response = await session.request('GET', `/apis/${HELM_RELEASE.group}/${HELM_RELEASE.version}/helmreleases?${query}`)
      expectStatus(response, [200], 'listing HelmReleases')
      pages++
      const list: unknown = JSON.parse(response.body)
      const metadata = typeof list === 'object' && list !== null && 'metadata' in list ? list.metadata : undefined
      const c = typeof metadata === 'object' && metadata !== null && 'continue' in metadata ? metadata.continue : undefined
      next = typeof c === 'string' ? c : ''
    } while (next !== '')
    return { wall: fig(now() - t0, 'ms'), pages }
  } finally {
    await session.close()
  }
}

function requests(p: DiscoverPass): string {
  const parts = Object.entries(p.requestsByMethod)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([method, n]) => `${method} ${num(n)}`)
  return `${num(p.requests.value)} (${parts.join(', ')})`
}

function summarize(rows: readonly DiscoverRow[]): ScenarioResult<DiscoverRow> {
  const columns = [
    'releases',
    'to label',
    'first run',
    'first: requests',
    'first: peak RSS (+ over loaded)',
    're-run',
    're-run: requests',
    're-run: peak RSS',
    'raw list (floor)',
    're-run ÷ floor',
  ]
  const rss = (p: DiscoverPass): string => `${p.peakRss.value.toFixed(0)} MiB (+${(p.peakRss.value - p.loadedRss.value).toFixed(0)})`
  const table = rows.map((r) => [
    num(r.releases),
    num(r.toLabel),
    ms(r.first.wall.value),
    requests(r.first),
    rss(r.first),
    ms(r.rerun.wall.value),
    requests(r.rerun),
    rss(r.rerun),
    `${ms(r.floor.wall.value)} (${r.floor.pages} pages)`,
    ratio(r.ratio.value),
  ])
  const notes = [
    `${NAMESPACES} namespaces; every other release reads a values ConfigMap through valuesFrom (each shared by the releases of its namespace among ${RELEASES_PER_SOURCE} consecutive ones). Ours: runDiscover over all namespaces (the defaults) in a fresh process; the first run labels the releases that need it, the re-run finds nothing to change.`,
    'Requests counted on undici\'s diagnostics channels, by method: LISTs and GETs are reads, PATCHes the labels. Peak RSS "+" is the growth over the process once its modules are loaded.',
    'Floor: one HTTP/2 connection reading every HelmRelease 500 a page, nothing else (no lint, no labels). No target is set for discover; the figures show how it grows.',
  ]
  return { title: 'discover over N HelmReleases', columns, table, rows, targets: [], notes }
}
