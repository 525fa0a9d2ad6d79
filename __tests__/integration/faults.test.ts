// Faults against a real kube-apiserver of this file's own (restarting it must not disturb the
// shared cluster): 429 + Retry-After, slow, hung and dropped requests through a loopback
// fault proxy, answers lost after the apiserver acted, and the apiserver killed and restarted
// in the middle of a 1,000-release fan-out. After every run the releases themselves are read
// and compared with the report: a release is triggered exactly once or listed as failed.
// The lost answer (the patch lands, its answer is lost, the client's retry gets 409) is run
// for every mode that writes a HelmRelease: trigger, recover, drift-correct, discover, watch.

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
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
import { runDiscover } from '../../src/modes/discover/run.ts'
import { runDrift } from '../../src/modes/drift/run.ts'
import { encodeRelease } from '../../src/core/helm-storage.ts'
import { runRecover } from '../../src/modes/recover/run.ts'
import { connectObjects } from '../../src/kube/connect.ts'
import { startCluster, type LocalCluster } from '../../test/support/cluster.ts'
import { startFaultProxy, type FaultProxy, type ProxiedRequest } from '../../test/support/fault-proxy.ts'
import { HELM_RELEASE, helmRelease } from '../../test/support/flux.ts'
import { kubeconfigYaml, waitFor } from '../../test/support/kube.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { startWatch } from '../../test/support/watch.ts'

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
  /** Runs after the run's n-th patch request returned (`written`) or failed. */
  readonly patched?: (n: number, written: boolean) => void
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
        let written = false
        try {
          const answer = await real.patchRelease(...args)
          written = true
          return answer
        } finally {
          patched(++n, written)
        }
      },
    })
  }
  return runTrigger(
    settings,
    { eventName: 'push', event: { before: s.before, after: s.after }, sha: s.after, runUrl: undefined, refused: undefined },
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
    // Each lost patch and the client's retry of it (which conflicts); a third would be a second write.
    expect(patchesOf(s.ns)).toHaveLength(40)
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
    '%s killed and restarted in the middle of a %i-release fan-out: the run waits it out and triggers each release once',
    async (component, count, downMs) => {
      const s = await setup(`f${component.slice(0, 4)}`, count)
      // `to` is the relaunch, not readiness: the apiserver answers writes before its /readyz says so.
      const outage = { from: 0, to: 0 }
      let restarted: Promise<void> | undefined
      let lastWrite = 0
      const started = Date.now()
      const report = await run(s, {
        viaProxy: true,
        // Room for the outage on a busy machine; no release starts after it.
        inputs: { timeout: '2m' },
        patched: (n, written) => {
          if (written) lastWrite = Date.now()
          if (n !== Math.floor(count / 3)) return
          outage.from = Date.now()
          restarted = (async () => {
            await cluster.stopComponent(component, { kill: true })
            await sleep(downMs)
            outage.to = Date.now()
            await cluster.startComponent(component)
          })()
        },
      })
      await restarted
      const result = await audit(s, report, started)
      console.info(`${component} restart mid fan-out (${count} releases, down ${outage.to - outage.from} ms): ${JSON.stringify(result)}`)
      // The fan-out really ran into the outage (requests sent or still waiting during it) and went on after it.
      const during = (r: ProxiedRequest) => r.at < outage.to - 200 && (r.done ?? Infinity) > outage.from + 200
      expect(proxy.requests.filter((r) => during(r) && r.path.includes(`/namespaces/${s.ns}/`)).length).toBeGreaterThan(0)
      expect(lastWrite).toBeGreaterThan(outage.to)
      // The apiserver answered before the outage, so its calls have the run's timeout of patience.
      expect(result).toEqual({ triggered: count, failed: 0, failedButWritten: 0 })
    },
    300_000,
  )
})

// ---- The lost answer in every mode that writes ------------------------------------------------

const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt'
const FORCE_AT = 'reconcile.fluxcd.io/forceAt'
const LABEL = 'nebius.ai/helmrelease-trigger-operator'

/** Settings whose cluster is the fault proxy (admin token), no outcome wait. */
function viaProxy(inputs: Record<string, string>) {
  const all: Record<string, string> = {
    kubeconfig: kubeconfigYaml({ server: proxy.server, caData: cluster.caData, token: cluster.adminToken }),
    wait: 'false',
    ...inputs,
  }
  return parseSettings((name) => all[name] ?? '')
}

/** The first PATCH of each HelmRelease in `ns` lands, and its answer is lost: the client's retry then conflicts. */
function loseFirstAnswer(ns: string): void {
  proxy.rule = ({ method, path, n }) => (method === 'PATCH' && path.startsWith(`${HR_PATH}${ns}/`) && n === 1 ? { kind: 'lose-answer' } : undefined)
}

async function freshNamespace(prefix: string): Promise<string> {
  const ns = `${prefix}-${Math.random().toString(16).slice(2, 8)}`
  await cluster.createNamespace(ns)
  return ns
}

async function createRelease(ns: string, name: string, extra: Partial<Parameters<typeof helmRelease>[0]> = {}): Promise<void> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  await custom.createNamespacedCustomObject({ ...HELM_RELEASE, namespace: ns, body: helmRelease({ namespace: ns, name, repository: 'absent', ...extra }) })
}

async function patchStatus(ns: string, name: string, status: Record<string, unknown>): Promise<void> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  await custom.patchNamespacedCustomObjectStatus(
    { ...HELM_RELEASE, namespace: ns, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )
}

async function liveMetadata(ns: string, name: string): Promise<{ annotations: Record<string, string>; labels: Record<string, string> }> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  const o = (await custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace: ns, name })) as {
    metadata: { annotations?: Record<string, string>; labels?: Record<string, string> }
  }
  return { annotations: o.metadata.annotations ?? {}, labels: o.metadata.labels ?? {} }
}

async function eventCount(ns: string, name: string, reason: string): Promise<number> {
  const events = await cluster.kubeconfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: ns })
  return events.items.filter((e) => e.reason === reason && e.involvedObject.name === name).length
}

const lostAnswers = (ns: string) => patchesOf(ns).filter((p) => p.fault === 'lose-answer').length
/** The lost patch and the client's retry of it (which conflicts): a third would be a second write. */
const ONE_WRITE = 2
const noop = { info: () => undefined, warning: () => undefined }

describe('a patch whose answer was lost, in every mode that writes: reported once, as written', () => {
  it('recover: the recovery is requested once and reported as requested, not as backing off', async () => {
    const ns = await freshNamespace('lost-recover')
    await createRelease(ns, 'app')
    const now = new Date().toISOString()
    await patchStatus(ns, 'app', {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed: context deadline exceeded', lastTransitionTime: now },
      ],
    })
    loseFirstAnswer(ns)
    const report = await runRecover(viaProxy({ mode: 'recover', namespaces: ns }), {
      connect: async () => connect(viaProxy({}), { env: {}, mask: () => undefined }),
      clock: systemClock,
      log: noop,
    }).finally(() => (proxy.rule = () => undefined))

    const live = await liveMetadata(ns, 'app')
    const summary = report.results.map((r) => `${r.name}:${r.status}:${r.reason}`)
    console.info(`recover, lost answer: ${JSON.stringify(summary)}; recover-attempts ${live.annotations['nebius.ai/recover-attempts']}`)
    expect(lostAnswers(ns)).toBe(1)
    expect(patchesOf(ns)).toHaveLength(ONE_WRITE)
    expect(summary).toEqual(['app:Triggered:RecoveryRequested'])
    expect(live.annotations[REQUESTED_AT]).toBe(report.results[0]?.token)
    expect(live.annotations['nebius.ai/recover-attempts']).toBe('1')
    expect(await eventCount(ns, 'app', 'RecoveryRequested')).toBe(1)
  })

  it('discover: the label change is reported once as done', async () => {
    const ns = await freshNamespace('lost-discover')
    await createRelease(ns, 'app', { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] })
    loseFirstAnswer(ns)
    const report = await runDiscover(viaProxy({ mode: 'discover', namespaces: ns }), '', {
      git: () => Promise.reject(new Error('no git in cluster mode')),
      connect: async () => connect(viaProxy({}), { env: {}, mask: () => undefined }),
      log: noop,
    }).finally(() => (proxy.rule = () => undefined))

    const labels = report.labels.map((l) => `${l.name}:${l.action}:${l.status}`)
    console.info(`discover, lost answer: ${JSON.stringify(labels)}`)
    expect(lostAnswers(ns)).toBe(1)
    expect(patchesOf(ns)).toHaveLength(ONE_WRITE)
    expect(labels).toEqual(['app:add:done'])
    expect((await liveMetadata(ns, 'app')).labels[LABEL]).toBe('true')
  })

  it('drift-correct: one forced upgrade is requested and reported, not a second one', async () => {
    const ns = await freshNamespace('lost-drift')
    await createRelease(ns, 'app')
    const manifest = `---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: ${ns}\ndata:\n  level: "1"\n`
    const stored = { name: 'app', namespace: ns, version: 1, info: { status: 'deployed' }, manifest, chart: { metadata: { name: 'demo', version: '0.1.0' } } }
    const core = cluster.kubeconfig.makeApiClient(CoreV1Api)
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'sh.helm.release.v1.app.v1', namespace: ns, labels: { owner: 'helm', name: 'app', version: '1', status: 'deployed' } },
        type: 'helm.sh/release.v1',
        data: { release: encodeRelease(stored) },
      },
    })
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'app-config', namespace: ns }, data: { level: '2' } } })
    const now = new Date().toISOString()
    const digest = `sha256:${'0'.repeat(64)}`
    await patchStatus(ns, 'app', {
      history: [
        {
          name: 'app',
          namespace: ns,
          version: 1,
          status: 'deployed',
          chartName: 'demo',
          chartVersion: '0.1.0',
          configDigest: digest,
          digest,
          firstDeployed: now,
          lastDeployed: now,
        },
      ],
    })
    loseFirstAnswer(ns)
    const settings = viaProxy({ mode: 'drift', namespaces: ns, 'drift-action': 'correct' })
    const report = await runDrift(settings, {
      objects: async () => connectObjects(settings, { env: {}, mask: () => undefined }),
      connect: async () => connect(settings, { env: {}, mask: () => undefined }),
      clock: systemClock,
      log: noop,
    }).finally(() => (proxy.rule = () => undefined))

    const live = await liveMetadata(ns, 'app')
    const corrections = report.releases.map((r) => `${r.name}:${r.state}:${r.correction?.status}:${r.correction?.reason}`)
    console.info(`drift-correct, lost answer: ${JSON.stringify(corrections)}; PATCH requests ${patchesOf(ns).length}`)
    expect(lostAnswers(ns)).toBe(1)
    expect(patchesOf(ns)).toHaveLength(ONE_WRITE)
    expect(corrections).toEqual(['app:Drifted:Triggered:CorrectionRequested'])
    const token = report.releases[0]?.correction?.token
    expect(live.annotations[REQUESTED_AT]).toBe(token)
    expect(live.annotations[FORCE_AT]).toBe(token)
    expect(await eventCount(ns, 'app', 'DriftCorrectionRequested')).toBe(1)
  })

  it('watch: the release is triggered once, logged and counted once', async () => {
    const ns = await freshNamespace('lost-watch')
    await createRelease(ns, 'app', { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] })
    await cluster.kubeconfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: 'values', namespace: ns, labels: { [LABEL]: 'true' }, annotations: { 'nebius.ai/helmreleases-name': 'app' } },
        data: { 'values.yaml': 'level: 1\n' },
      },
    })
    const kubeconfigPath = join(cluster.dir, `proxy-${ns}.yaml`)
    await writeFile(kubeconfigPath, kubeconfigYaml({ server: proxy.server, caData: cluster.caData, token: cluster.adminToken }))
    loseFirstAnswer(ns)
    const w = startWatch({ kubeconfigPath, inputs: { namespaces: ns } })
    try {
      const line = await w.line('release triggered', { release: `${ns}/app` })
      const live = await waitFor(async () => ((await eventCount(ns, 'app', 'ConfigChanged')) > 0 ? liveMetadata(ns, 'app') : undefined), { timeoutMs: 30_000 })
      const m = await w.metrics()
      const triggered = w.lines.filter((l) => l.msg === 'release triggered').length
      const failed = w.lines.filter((l) => l.msg === 'release trigger failed').map((l) => `${String(l['reason'])}: ${String(l['detail'])}`)
      console.info(`watch, lost answer: ${triggered} triggered line(s), failed ${JSON.stringify(failed)}`)
      expect(lostAnswers(ns)).toBe(1)
      expect(patchesOf(ns)).toHaveLength(ONE_WRITE)
      expect(triggered).toBe(1)
      expect(failed).toEqual([])
      expect(m.value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(1)
      expect(live.annotations[REQUESTED_AT]).toBe(line['token'])
      expect(await eventCount(ns, 'app', 'ConfigChanged')).toBe(1)
    } finally {
      proxy.rule = () => undefined
      await w.stop()
    }
  })
})
