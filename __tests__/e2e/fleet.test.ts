// The fleet end to end: one generated repository with three cluster trees, planned once; the
// fleet CLI triggers three real local apiservers from that one plan (the shared cluster runs
// the real source-controller and helm-controller, the two others are apiservers alone), each
// only with its own releases; and a failed upgrade in the first wave stops the second.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main, type CliIo } from '../../src/entry/cli.ts'
import { startCluster, type LocalCluster } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../../test/support/fleet-repo.ts'
import { HELM_RELEASE, helmRelease, type FluxObject } from '../../test/support/flux.ts'
import { createNamespace, multiContextKubeconfigYaml } from '../../test/support/kube.ts'
import { kustomizeBinary } from '../../test/support/kustomize.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const shared = useCluster()
const others: LocalCluster[] = []
const dir = mkdtempSync(join(tmpdir(), 'hrt-fleet-'))
let repo: Repo
let kubeconfigPath: string
let kustomize: string
let specs: FleetClusterSpec[]
/** Admin clients per cluster name. */
const clients = new Map<string, KubeConfig>()

const RELEASES = ['web', 'api']
/** The values each cluster/release has in the repository (and, once "applied", in the cluster). */
const levels = new Map<string, string>()
const levelOf = (cluster: string, release: string) => levels.get(`${cluster}/${release}`) ?? 'one'

afterAll(async () => {
  for (const c of others) await c.stop()
  repo?.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

beforeAll(async () => {
  // Two more apiservers, one at a time (two cores).
  for (let i = 0; i < 2; i++) others.push(await startCluster())
  // The plan renders each cluster root with the pinned kustomize.
  kustomize = await kustomizeBinary()
  const stagingNs = await shared.createNamespace('fleet')
  specs = [
    { name: 'staging', namespace: stagingNs, releases: RELEASES },
    { name: 'prod-eu', namespace: 'apps', releases: RELEASES },
    { name: 'prod-us', namespace: 'apps', releases: RELEASES },
  ]
  clients.set('staging', shared.kubeconfig)
  clients.set('prod-eu', (others[0] as LocalCluster).kubeconfig)
  clients.set('prod-us', (others[1] as LocalCluster).kubeconfig)
  kubeconfigPath = join(dir, 'kubeconfig')
  const entry = (c: { server: string; caData: string; adminToken: string }) => ({ server: c.server, caData: c.caData, token: c.adminToken })
  writeFileSync(
    kubeconfigPath,
    multiContextKubeconfigYaml({ staging: entry(shared), 'prod-eu': entry(others[0] as LocalCluster), 'prod-us': entry(others[1] as LocalCluster) }),
    { mode: 0o600 },
  )

  // Each cluster holds the commit's first state: the values ConfigMaps and their releases.
  await shared.applyHelmRepository(stagingNs)
  for (const spec of specs) {
    const kc = clients.get(spec.name) as KubeConfig
    if (spec.name !== 'staging') await createNamespace(kc, spec.namespace)
    for (const r of RELEASES) {
      await applyValues(spec, r)
      await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
        ...HELM_RELEASE,
        namespace: spec.namespace,
        body: helmRelease({ namespace: spec.namespace, name: r, valuesFrom: [{ kind: 'ConfigMap', name: `${r}-values` }] }),
      })
    }
  }
  for (const r of RELEASES) await shared.waitForHelmReleaseReady(stagingNs, r)
  repo = createRepo('hrt-fleet-repo-')
  repo.write(fleetRepoFiles(specs, levelOf))
  repo.commit('three clusters')
}, 600_000)

/** What kustomize-controller would do after the push: the cluster holds the committed values. */
async function applyValues(spec: FleetClusterSpec, release: string): Promise<void> {
  const core = (clients.get(spec.name) as KubeConfig).makeApiClient(CoreV1Api)
  const body = { metadata: { name: `${release}-values`, namespace: spec.namespace }, data: { 'values.yaml': `level: ${levelOf(spec.name, release)}\n` } }
  try {
    await core.replaceNamespacedConfigMap({ name: `${release}-values`, namespace: spec.namespace, body })
  } catch {
    await core.createNamespacedConfigMap({ namespace: spec.namespace, body })
  }
}

/** Commits new values for some cluster/release pairs and applies them to their clusters. */
async function push(changes: Readonly<Record<string, string>>): Promise<string> {
  for (const [key, level] of Object.entries(changes)) levels.set(key, level)
  repo.write(fleetRepoFiles(specs, levelOf))
  const sha = repo.commit(`values: ${Object.keys(changes).join(', ')}`)
  for (const key of Object.keys(changes)) {
    const [name, release] = key.split('/')
    await applyValues(specs.find((s) => s.name === name) as FleetClusterSpec, release ?? '')
  }
  return sha
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const io: CliIo = { out: (t) => (stdout += t), err: (t) => (stderr += t), env: { HOME: dir }, cwd: repo.dir }
  const code = await main(argv, io)
  return { code, stdout, stderr }
}

async function release(cluster: string, name: string): Promise<FluxObject> {
  const spec = specs.find((s) => s.name === cluster) as FleetClusterSpec
  const custom = (clients.get(cluster) as KubeConfig).makeApiClient(CustomObjectsApi)
  return (await custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace: spec.namespace, name })) as FluxObject
}

const requestedAt = (hr: FluxObject) => hr.metadata.annotations?.['reconcile.fluxcd.io/requestedAt']

interface FleetJson {
  clusters: {
    cluster: string
    wave: number
    state: string
    message?: string
    releases: { namespace: string; name: string; status: string; reason: string }[]
  }[]
}

describe('a fleet from one commit', () => {
  it('plans once, names only the clusters whose trees changed, and triggers each cluster with its own releases only', async () => {
    await push({ 'staging/web': 'two', 'prod-eu/web': 'two' })
    const planFile = join(dir, 'plan-1.json')
    const plan = await cli('plan', '--clusters', 'discover', '--plan', planFile, '--kustomize-path', kustomize, '--json')
    expect(plan.code, plan.stderr).toBe(0)
    const outputs = JSON.parse(plan.stdout) as Record<string, string>
    expect(JSON.parse(outputs['matrix'] ?? '')).toEqual({
      include: [
        { cluster: 'prod-eu', secret: 'KUBECONFIG_PROD_EU', wave: 1, releases: 1 },
        { cluster: 'staging', secret: 'KUBECONFIG_STAGING', wave: 1, releases: 1 },
      ],
    })

    const run = await cli('fleet', '--plan', planFile, '--kubeconfig', kubeconfigPath, '--no-wait', '--timeout', '60s', '--json')
    expect(run.code, run.stderr).toBe(0)
    const fleet = JSON.parse(run.stdout) as FleetJson
    expect(fleet.clusters.map((c) => [c.cluster, c.state, c.releases.map((r) => `${r.name}:${r.status}`)])).toEqual([
      ['prod-eu', 'Succeeded', ['web:Triggered']],
      ['prod-us', 'NoWork', []],
      ['staging', 'Succeeded', ['web:Triggered']],
    ])

    // Each cluster got exactly its own part: web where it changed, nothing else anywhere.
    for (const name of ['staging', 'prod-eu']) {
      const web = await release(name, 'web')
      expect(requestedAt(web), name).toBeDefined()
      expect(JSON.parse(web.metadata.annotations?.['nebius.ai/config-digest'] ?? '{}')).toHaveProperty(
        `ConfigMap/${specs.find((s) => s.name === name)?.namespace}/web-values`,
      )
      expect(requestedAt(await release(name, 'api')), `${name}/api`).toBeUndefined()
    }
    for (const r of RELEASES) expect(requestedAt(await release('prod-us', r)), `prod-us/${r}`).toBeUndefined()

    // The cluster with Flux: helm-controller really upgraded the release for that request.
    const token = requestedAt(await release('staging', 'web'))
    await shared.waitFor(
      async () => {
        const web = await release('staging', 'web')
        const status = web.status as { lastHandledReconcileAt?: string; history?: { version?: number; status?: string }[] } | undefined
        return status !== undefined && status.lastHandledReconcileAt === token && status.history?.[0]?.version === 2 && status.history[0]?.status === 'deployed'
      },
      { timeoutMs: 120_000, message: 'staging/web upgraded to revision 2' },
    )
  })

  it("stops the rollout when a release of the first wave fails: the second wave's clusters are not started", async () => {
    const before = requestedAt(await release('prod-eu', 'web'))
    await push({ 'staging/web': 'three\nfail: rejected by the demo chart', 'prod-eu/web': 'three' })
    const planFile = join(dir, 'plan-2.json')
    const plan = await cli('plan', '--clusters', 'discover', '--waves', 'staging', '--waves', 'prod-*', '--plan', planFile, '--kustomize-path', kustomize)
    expect(plan.code, plan.stderr).toBe(0)

    // Only the shared cluster runs helm-controller, and only its wave may start: wait for its outcome.
    const run = await cli('fleet', '--plan', planFile, '--kubeconfig', kubeconfigPath, '--timeout', '120s')
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/staging\s+1\s+[^\n]*\/web\s+❌ Failed \(UpgradeFailed\)[^\n]*rejected by the demo chart/)
    expect(run.stdout).toMatch(/prod-eu\s+2\s+—\s+⏸️ NotStarted\s+—\s+not started: wave 1 failed \(staging\)/)
    expect(run.stdout).toMatch(/prod-us\s+2\s+—\s+➖ NoWork/)
    expect(run.stdout).toContain('fleet: 2 of 3 clusters with work; 0 succeeded, 1 failed, 1 not started')
    expect(run.stderr).toContain('error: 2 clusters did not succeed')
    expect(requestedAt(await release('prod-eu', 'web'))).toBe(before)
  })
})
