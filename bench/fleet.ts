// The fleet: one commit over N local apiservers (no Flux controllers), planned once and executed
// per cluster from the plan file, beside N independent jobs that each plan the whole commit
// again (a hand-written job per cluster with its `cluster-root`, as before the fleet mode). Every job
// is a fresh `node cli.js` process (the bundle), run one after another as matrix jobs on their
// own runners would be; `--force` makes every run patch the same releases. Memory is watched:
// no further apiserver starts when free memory drops under 2 GiB. The plan renders each cluster
// root in the bundle's sandboxed renderer; `--plan-only` measures that plan alone, without apiservers.
//
//   node --experimental-strip-types bench/fleet.ts [--clusters 10] [--releases 50] [--changed 10] [--filler 2000] [--plan-only]

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { freemem, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node'
import { startCluster, type LocalCluster } from '../test/support/cluster.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../test/support/fleet-repo.ts'
import { HELM_RELEASE, helmRelease } from '../test/support/flux.ts'
import { createNamespace, multiContextKubeconfigYaml } from '../test/support/kube.ts'
import { createRepo } from '../test/support/repo.ts'
import { formatTable, mapLimit, median, ms, now, runOk } from './lib.ts'

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '10' },
    releases: { type: 'string', default: '50' },
    changed: { type: 'string', default: '10' },
    filler: { type: 'string', default: '2000' },
    'plan-only': { type: 'boolean', default: false },
  },
})
const N = Number(values.clusters)
const RELEASES = Number(values.releases)
const CHANGED = Number(values.changed)
const FILLER = Number(values.filler)
const MIN_FREE = 2 * 1024 ** 3
const log = (line: string) => process.stderr.write(`fleet bench: ${line}\n`)

/** Resident memory of a process, from /proc (kB → bytes). */
function rss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? 0 : Number(m[1]) * 1024
  } catch {
    return 0
  }
}

const clusters: LocalCluster[] = []
const work = await mkdtemp(join(tmpdir(), 'hrt-bench-fleet-'))
const repo = createRepo('hrt-bench-fleet-repo-')
try {
  log(`building the bundle`)
  await runOk('node', ['scripts/bundle.mjs', join(work, 'dist')], { timeoutMs: 120_000 })
  const cli = join(work, 'dist', 'cli.js')
  const names = Array.from({ length: N }, (_, i) => `c${String(i + 1).padStart(2, '0')}`)
  const specs: FleetClusterSpec[] = names.map((name) => ({ name, namespace: 'apps', releases: Array.from({ length: RELEASES }, (_, r) => `r${r}`) }))

  // The repository: the fleet's trees plus unrelated YAML (dashboards, CRDs…) the planner must skip.
  const changed = (release: string) => Number(release.slice(1)) < CHANGED
  const filler = Object.fromEntries(
    Array.from({ length: FILLER }, (_, i) => [
      `platform/dashboards/d${i}.yaml`,
      `kind: ConfigMap\napiVersion: v1\nmetadata: {name: d${i}, namespace: monitoring}\ndata: {json: '{}'}\n`,
    ]),
  )
  repo.write({ ...fleetRepoFiles(specs, () => 'one'), ...filler })
  repo.commit('fleet')
  repo.write(fleetRepoFiles(specs, (_, r) => (changed(r) ? 'two' : 'one')))
  const head = repo.commit('values of every cluster')

  if (values['plan-only']) {
    const planFile = join(work, 'fleet-plan.json')
    const t0 = now()
    await runOk('node', [cli, 'plan', '--clusters', 'discover', '--plan', planFile, '--head', head], { cwd: repo.dir, timeoutMs: 300_000 })
    const planMs = now() - t0
    const plan = JSON.parse(readFileSync(planFile, 'utf8')) as { clusters: { rendered?: boolean; plan: { releases: unknown[] } }[] }
    const rendered = plan.clusters.filter((c) => c.rendered === true).length
    const releases = plan.clusters.reduce((n, c) => n + c.plan.releases.length, 0)
    process.stdout.write(
      `\nFleet plan: ${N} cluster roots (${rendered} rendered), ${RELEASES} releases each (${CHANGED} changed per cluster), ${FILLER} unrelated YAML files; commit ${head.slice(0, 12)}\n` +
        `plan once, all clusters: ${ms(planMs)}; ${releases} releases planned; load average at the end ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}\n`,
    )
    repo.cleanup()
    await rm(work, { recursive: true, force: true })
    process.exit(0)
  }

  for (let i = 0; i < N; i++) {
    if (freemem() < MIN_FREE) {
      log(`free memory ${(freemem() / 1024 ** 3).toFixed(1)} GiB: no more apiservers after ${clusters.length}`)
      break
    }
    const t0 = now()
    clusters.push(await startCluster())
    log(`apiserver ${i + 1}/${N} ready in ${ms(now() - t0)}`)
  }
  const memory = clusters.flatMap((c) => c.processes).reduce((sum, p) => sum + rss(p.pid), 0)
  const kubeconfig = join(work, 'kubeconfig')
  await writeFile(
    kubeconfig,
    multiContextKubeconfigYaml(Object.fromEntries(clusters.map((c, i) => [names[i], { server: c.server, caData: c.caData, token: c.adminToken }]))),
    { mode: 0o600 },
  )

  log(`creating ${RELEASES} releases and their ConfigMaps (head content) on each cluster`)
  await mapLimit(clusters, 2, async (c) => {
    await createNamespace(c.kubeconfig, 'apps')
    const custom = c.kubeconfig.makeApiClient(CustomObjectsApi)
    const core = c.kubeconfig.makeApiClient(CoreV1Api)
    await mapLimit(specs[0]?.releases ?? [], 8, async (r) => {
      await core.createNamespacedConfigMap({
        namespace: 'apps',
        body: { metadata: { name: `${r}-values`, namespace: 'apps' }, data: { 'values.yaml': `level: ${changed(r) ? 'two' : 'one'}\n` } },
      })
      await custom.createNamespacedCustomObject({
        ...HELM_RELEASE,
        namespace: 'apps',
        body: helmRelease({ namespace: 'apps', name: r, valuesFrom: [{ kind: 'ConfigMap', name: `${r}-values` }] }),
      })
    })
  })

  const common = ['--kubeconfig', kubeconfig, '--no-wait', '--force', '--timeout', '60s']
  let triggered = { fromPlan: 0, replanned: 0 }
  const timed = async (args: string[], count?: keyof typeof triggered): Promise<number> => {
    const t0 = now()
    const out = await runOk('node', [cli, ...args, ...(count === undefined ? [] : ['--json'])], { cwd: repo.dir, timeoutMs: 300_000 })
    const elapsed = now() - t0
    if (count !== undefined) triggered = { ...triggered, [count]: triggered[count] + (JSON.parse(out) as { triggered: unknown[] }).triggered.length }
    return elapsed
  }

  const planFile = join(work, 'fleet-plan.json')
  const planMs = await timed(['plan', '--clusters', 'discover', '--plan', planFile, '--head', head])
  const partMs: number[] = []
  for (const name of names.slice(0, clusters.length))
    partMs.push(await timed(['trigger', '--plan', planFile, '--cluster', name, '--context', name, ...common], 'fromPlan'))
  const replanMs: number[] = []
  for (const name of names.slice(0, clusters.length)) {
    replanMs.push(await timed(['trigger', '--head', head, '--cluster-root', `clusters/${name}`, '--context', name, ...common], 'replanned'))
  }
  const fleetTotal = planMs + partMs.reduce((a, b) => a + b, 0)
  const replanTotal = replanMs.reduce((a, b) => a + b, 0)
  const rows = [
    ['plan once (all clusters)', ms(planMs), '–', '–', '–'],
    [
      'trigger from the plan, per cluster',
      ms(median(partMs)),
      `${ms(Math.min(...partMs))} – ${ms(Math.max(...partMs))}`,
      `${ms(fleetTotal)} (plan included)`,
      String(triggered.fromPlan),
    ],
    [
      'independent job re-planning, per cluster',
      ms(median(replanMs)),
      `${ms(Math.min(...replanMs))} – ${ms(Math.max(...replanMs))}`,
      ms(replanTotal),
      String(triggered.replanned),
    ],
  ]
  process.stdout.write(
    `\nFleet: ${clusters.length} apiservers, ${RELEASES} releases each (${CHANGED} changed per cluster), ${FILLER} unrelated YAML files; commit ${head.slice(0, 12)}\n\n` +
      `${formatTable(['job', 'median', 'min – max', 'sum of jobs', 'releases triggered'], rows)}\n\n` +
      `apiservers + etcd resident memory: ${(memory / 1024 ** 3).toFixed(2)} GiB (${(memory / clusters.length / 1024 ** 2).toFixed(0)} MiB per cluster); load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
  )
} finally {
  for (const c of clusters) await c.stop()
  repo.cleanup()
  await rm(work, { recursive: true, force: true })
}
