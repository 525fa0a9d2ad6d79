// Faults against a real kube-apiserver of this file's own (restarting it must not disturb the
// shared cluster): 429 + Retry-After, slow, hung and dropped requests through a loopback
// fault proxy, answers lost after the apiserver acted, and the apiserver killed and restarted
// in the middle of a 1,000-release fan-out. After every run the releases themselves are read
// and compared with the report: a release is triggered exactly once or listed as failed.

import { join } from 'node:path'
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from '../../src/kube/connect.ts'
import { createGitReader } from '../../src/git/reader.ts'
import { createClusterClient, type ClusterClient } from '../../src/kube/cluster.ts'
import { loadKubeconfig } from '../../src/kube/kubeconfig.ts'
import { Status, type ReleaseResult, type TriggerReport } from '../../src/engine/result.ts'
import { sleep } from '../../src/lib/retry.ts'
import { parseSettings } from '../../src/settings.ts'
import { runTrigger } from '../../src/modes/trigger/pipeline.ts'
import { systemClock } from '../../src/engine/ports.ts'
import { startCluster, type LocalCluster } from '../../test/support/cluster.ts'
import { startFaultProxy, type FaultProxy, type ProxiedRequest } from '../../test/support/fault-proxy.ts'
import { HELM_RELEASE, helmRelease } from '../../test/support/flux.ts'
import { kubeconfigYaml } from '../../test/support/kube.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

let cluster: LocalCluster
let proxy: FaultProxy
const repos: Repo[] = []

beforeAll(async () => {
  cluster = await startCluster()
  proxy = await startFaultProxy({ target: cluster.server, certDir: join(cluster.dir, 'data', 'pki', 'serving') })
})
afterAll(async () => {
  await proxy?.close()
  await cluster?.stop()
  repos.forEach((r) => r.cleanup())
})

const HR_PATH = '/apis/helm.toolkit.fluxcd.io/v2/namespaces/'

interface Setup {
  readonly ns: string
  readonly names: readonly string[]
  readonly repo: Repo
  readonly before: string
  readonly after: string
}

/** `count` releases named by one ConfigMap whose value changes between two real commits; the new value is live. */
async function setup(prefix: string, count: number): Promise<Setup> {
  const ns = `${prefix}-${Math.random().toString(16).slice(2, 8)}`
  await cluster.createNamespace(ns)
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  const names = Array.from({ length: count }, (_, i) => `r${i}`)
  const queue = [...names]
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        await custom.createNamespacedCustomObject({ ...HELM_RELEASE, namespace: ns, body: helmRelease({ namespace: ns, name, repository: 'absent' }) })
      }
    }),
  )
  await cluster.kubeconfig
    .makeApiClient(CoreV1Api)
    .createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings', namespace: ns }, data: { 'values.yaml': 'level: 2\n' } } })
  const manifest = (level: number) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ${ns}
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: "${names.join(', ')}"
    nebius.ai/helmreleases-namespace: ${ns}
data:
  values.yaml: |
    level: ${level}
`
  const repo = createRepo()
  repos.push(repo)
  repo.write({ 'cm.yaml': manifest(1) })
  const before = repo.commit('level 1')
  repo.write({ 'cm.yaml': manifest(2) })
  const after = repo.commit('level 2')
  return { ns, names, repo, before, after }
}

interface RunOptions {
  /** Through the fault proxy with the admin token. */
  readonly viaProxy?: boolean
  /** Small per-request bounds for the client (the defaults are 30 s × 5 attempts). */
  readonly bounds?: { readonly requestTimeoutMs: number; readonly attempts: number }
  readonly inputs?: Record<string, string>
  /** Runs after the run's n-th patch request returned (or failed). */
  readonly patched?: (n: number) => void
}

async function run(s: Setup, options: RunOptions = {}): Promise<TriggerReport> {
  const server = options.viaProxy ? proxy.server : cluster.server
  const kubeconfig = kubeconfigYaml({ server, caData: cluster.caData, token: cluster.adminToken })
  const all: Record<string, string> = { kubeconfig, wait: 'false', timeout: '20s', ...options.inputs }
  const settings = parseSettings((name) => all[name] ?? '')
  const client = (): ClusterClient => {
    if (options.bounds === undefined) return connect(settings, { env: {}, mask: () => undefined })
    const loaded = loadKubeconfig({ kubeconfig, encoding: 'plain', context: undefined, env: {} })
    return createClusterClient(loaded.config, loaded.server, {
      requestTimeoutMs: options.bounds.requestTimeoutMs,
      retry: { attempts: options.bounds.attempts, minDelayMs: 50, maxDelayMs: 5_000, sleep },
    })
  }
  const git = await createGitReader({ cwd: s.repo.dir })
  const log = { info: () => undefined, warning: () => undefined }
  const connectObserved = async (): Promise<ClusterClient> => {
    const real = client()
    if (options.patched === undefined) return real
    let n = 0
    const patched = options.patched
    return Object.assign(Object.create(real) as ClusterClient, {
      patchRelease: async (...args: Parameters<ClusterClient['patchRelease']>) => {
        try {
          return await real.patchRelease(...args)
        } finally {
          patched(++n)
        }
      },
    })
  }
  return runTrigger(
    settings,
    { eventName: 'push', event: { before: s.before, after: s.after }, sha: s.after, runUrl: undefined },
    { git, connect: connectObserved, clock: systemClock, log },
  )
}

interface Audit {
  readonly triggered: number
  readonly failed: number
  /** Reported Failed, yet the release carries a requestedAt written during the run (the answer was lost). */
  readonly failedButWritten: number
}

/**
 * Reads every release back and holds the report to it: one result per release; Triggered ⇒
 * requestedAt is the reported token and config-digest is the new one; nothing else but
 * Failed or TimedOut (listed, with the reason); a release never got two ConfigChanged Events.
 */
async function audit(s: Setup, report: TriggerReport, startedAt: number): Promise<Audit> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api)
  expect(report.results.map((r) => r.name).sort()).toEqual([...s.names].sort())
  const list = (await custom.listNamespacedCustomObject({ ...HELM_RELEASE, namespace: s.ns })) as {
    items: { metadata: { name: string; annotations?: Record<string, string> } }[]
  }
  const live = new Map(list.items.map((i) => [i.metadata.name, i.metadata.annotations ?? {}]))
  const events = await core.listNamespacedEvent({ namespace: s.ns })
  const eventsPer = new Map<string, number>()
  for (const e of events.items)
    if (e.reason === 'ConfigChanged') eventsPer.set(e.involvedObject.name ?? '', (eventsPer.get(e.involvedObject.name ?? '') ?? 0) + 1)
  let failedButWritten = 0
  const unexpected = (r: ReleaseResult) => `${r.name}: ${r.status} ${r.reason} ${r.message}`
  for (const r of report.results) {
    const annotations = live.get(r.name) ?? {}
    expect(eventsPer.get(r.name) ?? 0, r.name).toBeLessThanOrEqual(1)
    if (r.status === Status.Triggered) {
      expect(annotations['reconcile.fluxcd.io/requestedAt'], unexpected(r)).toBe(r.token)
      expect(annotations['nebius.ai/config-digest'], unexpected(r)).toContain(r.sources[0]?.digest ?? 'no digest')
    } else {
      expect([Status.Failed, Status.TimedOut], unexpected(r)).toContain(r.status)
      const written = annotations['reconcile.fluxcd.io/requestedAt']
      if (written !== undefined && Date.parse(written) >= startedAt - 1_000) {
        // Written, but the answer and the read-back were both lost: the report must say so.
        expect(r.message, unexpected(r)).toContain(`Whether the patch (requestedAt ${written}) landed could not be read back`)
        failedButWritten++
      }
    }
  }
  const count = (status: string) => report.results.filter((r) => r.status === status).length
  return { triggered: count(Status.Triggered), failed: count(Status.Failed) + count(Status.TimedOut), failedButWritten }
}

const patchesOf = (ns: string) => proxy.requests.filter((r) => r.method === 'PATCH' && r.path.startsWith(`${HR_PATH}${ns}/helmreleases/`))

describe('faults between the action and a real apiserver', () => {
  it('honours 429 Retry-After: each refused patch is sent again no sooner than asked, and all land once', async () => {
    const s = await setup('f429', 20)
    proxy.rule = ({ method, path, n }) =>
      method === 'PATCH' && path.startsWith(`${HR_PATH}${s.ns}/`) && n === 1 ? { kind: 'status', status: 429, retryAfter: '1' } : undefined
    const started = Date.now()
    const report = await run(s, { viaProxy: true })
    proxy.rule = () => undefined

    const result = await audit(s, report, started)
    expect(result).toEqual({ triggered: 20, failed: 0, failedButWritten: 0 })
    const patches = patchesOf(s.ns)
    for (const name of s.names) {
      const mine = patches.filter((p) => p.path.split('?')[0]?.endsWith(`/${name}`))
      expect(mine.map((p) => p.fault)).toEqual(['status', 'pass'])
      expect((mine[1]?.at ?? 0) - (mine[0]?.at ?? 0), name).toBeGreaterThanOrEqual(950)
    }
  })

  it('fails a release that keeps answering 429 with the status named, and triggers the others', async () => {
    const s = await setup('f429x', 10)
    const refused = new Set(['r3', 'r7'])
    proxy.rule = ({ method, path }) =>
      method === 'PATCH' && [...refused].some((n) => path.split('?')[0] === `${HR_PATH}${s.ns}/helmreleases/${n}`)
        ? { kind: 'status', status: 429, retryAfter: '0' }
        : undefined
    const report = await run(s, { viaProxy: true, bounds: { requestTimeoutMs: 5_000, attempts: 3 } })
    proxy.rule = () => undefined

    expect(await audit(s, report, Date.now())).toMatchObject({ triggered: 8, failed: 2 })
    for (const r of report.results.filter((x) => x.status === Status.Failed)) {
      expect(refused.has(r.name)).toBe(true)
      expect(r.message).toContain(`answered 429 to patch helmreleases.helm.toolkit.fluxcd.io ${r.name} in namespace ${s.ns}`)
    }
  })

  it('bounds slow and hung requests: slow ones succeed, a hang is cut and retried, a server that never answers fails the release clearly', async () => {
    const s = await setup('fhang', 12)
    const never = new Set(['r4', 'r9'])
    proxy.rule = ({ method, path, n }) => {
      if (!path.startsWith(`${HR_PATH}${s.ns}/`) && !path.includes(`/namespaces/${s.ns}/configmaps/`)) return undefined
      const name = path.split('?')[0]?.split('/').pop() ?? ''
      if (method === 'PATCH' && never.has(name)) return { kind: 'hang' }
      if (method === 'PATCH' && n === 1) return { kind: 'hang' }
      return { kind: 'delay', ms: 150 }
    }
    const started = Date.now()
    const report = await run(s, { viaProxy: true, bounds: { requestTimeoutMs: 1_500, attempts: 3 } })
    proxy.rule = () => undefined

    // The run ended (vitest's timeout would say otherwise) with every release accounted for.
    expect(await audit(s, report, started)).toMatchObject({ triggered: 10, failed: 2 })
    for (const r of report.results.filter((x) => x.status === Status.Failed)) {
      expect(never.has(r.name), r.name).toBe(true)
      expect(r.message).toContain(`did not answer in time (patch helmreleases.helm.toolkit.fluxcd.io ${r.name} in namespace ${s.ns})`)
    }
    expect(patchesOf(s.ns).filter((p) => p.fault === 'hang').length).toBe(10 + 2 * 3)
  })

  it('a server that never answers ends the run at the timeout: no release starts after it, each is listed', async () => {
    const s = await setup('fdead', 30)
    proxy.rule = ({ method, path }) => (method === 'PATCH' && path.startsWith(`${HR_PATH}${s.ns}/`) ? { kind: 'hang' } : undefined)
    const started = Date.now()
    const report = await run(s, { viaProxy: true, bounds: { requestTimeoutMs: 1_000, attempts: 2 }, inputs: { timeout: '5s', 'max-concurrency': '2' } })
    proxy.rule = () => undefined

    expect(await audit(s, report, started)).toMatchObject({ triggered: 0, failed: 30, failedButWritten: 0 })
    const notAttempted = report.results.filter((r) => r.status === Status.TimedOut && r.reason === 'NotAttempted')
    expect(notAttempted.length).toBeGreaterThan(0)
    for (const r of notAttempted) expect(r.message).toMatch(/the timeout \(5(\.0)?s\) passed before its turn/)
    for (const r of report.results.filter((x) => x.status === Status.Failed)) expect(r.message).toContain('did not answer in time')
  })

  it('reports a patch whose answer was lost (connection dropped after the apiserver wrote it) as triggered, once', async () => {
    const s = await setup('flost', 20)
    proxy.rule = ({ method, path, n }) => (method === 'PATCH' && path.startsWith(`${HR_PATH}${s.ns}/`) && n === 1 ? { kind: 'lose-answer' } : undefined)
    const started = Date.now()
    const report = await run(s, { viaProxy: true })
    proxy.rule = () => undefined

    expect(await audit(s, report, started)).toEqual({ triggered: 20, failed: 0, failedButWritten: 0 })
    expect(patchesOf(s.ns).filter((p) => p.fault === 'lose-answer')).toHaveLength(20)
  })

  it('drops connections: every dropped request is retried and the run completes', async () => {
    const s = await setup('fdrop', 20)
    proxy.rule = ({ path, n }) => (path.includes(`/namespaces/${s.ns}/`) && n === 1 ? { kind: 'drop' } : undefined)
    const started = Date.now()
    const report = await run(s, { viaProxy: true })
    proxy.rule = () => undefined
    expect(await audit(s, report, started)).toEqual({ triggered: 20, failed: 0, failedButWritten: 0 })
    expect(proxy.requests.filter((p) => p.fault === 'drop' && p.path.includes(`/namespaces/${s.ns}/`)).length).toBeGreaterThan(20)
  })

  it.each([
    ['kube-apiserver', 1_000, 6_000],
    ['etcd', 300, 3_000],
  ] as const)(
    '%s killed and restarted in the middle of a %i-release fan-out: each release triggered once or listed as failed',
    async (component, count, downMs) => {
      const s = await setup(`f${component.slice(0, 4)}`, count)
      const outage = { from: 0, to: 0 }
      let restarted: Promise<void> | undefined
      let lastPatch = 0
      const started = Date.now()
      const report = await run(s, {
        viaProxy: true,
        // Room for the outage on a busy machine; no release starts after it.
        inputs: { timeout: '2m' },
        patched: (n) => {
          lastPatch = Date.now()
          if (n !== Math.floor(count / 3)) return
          outage.from = Date.now()
          restarted = cluster.restart(component, { kill: true, downMs }).then(() => {
            outage.to = Date.now()
          })
        },
      })
      await restarted
      const result = await audit(s, report, started)
      console.info(`${component} restart mid fan-out (${count} releases, down ${outage.to - outage.from} ms): ${JSON.stringify(result)}`)
      // The fan-out really ran into the outage (requests sent or still waiting during it) and went on after it.
      const during = (r: ProxiedRequest) => r.at < outage.to - 200 && (r.done ?? Infinity) > outage.from + 200
      expect(proxy.requests.filter((r) => during(r) && r.path.includes(`/namespaces/${s.ns}/`)).length).toBeGreaterThan(0)
      expect(lastPatch).toBeGreaterThan(outage.to)
      expect(result.triggered + result.failed).toBe(count)
      expect(result.triggered).toBeGreaterThanOrEqual(Math.floor(count / 3))
      for (const r of report.results.filter((x) => x.status === Status.Failed)) expect(r.message).toMatch(/Kubernetes API server/)
    },
    300_000,
  )
})
