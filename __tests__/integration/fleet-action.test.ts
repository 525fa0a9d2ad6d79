// The reusable workflow's three jobs through the bundled action, as the runner runs them,
// against the real apiserver: `plan` writes the plan file and the matrix; the matrix job for one
// cluster (`trigger` with `cluster` and `plan-file`) patches only that cluster's releases with
// the planned digests and writes its result file; `fleet-summary` gathers it into one summary.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runAction } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../../test/support/fleet-repo.ts'
import { kustomizeBinary } from '../../test/support/kustomize.ts'
import { createRepo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const dir = mkdtempSync(join(tmpdir(), 'hrt-fleet-action-'))
const repo = createRepo('hrt-fleet-action-repo-')
afterAll(() => {
  repo.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

describe('the fleet workflow through the bundled action', () => {
  it('plans once, executes one cluster part from the plan file, and gathers one summary', async () => {
    const ns = await cluster.createNamespace('fleet-action')
    // Two clusters in the repository; only `eu` has an apiserver here (the other's job is not run).
    const specs: FleetClusterSpec[] = [
      { name: 'eu', namespace: ns, releases: ['web', 'api'] },
      { name: 'us', namespace: ns, releases: ['web'] },
    ]
    for (const r of ['web', 'api']) await cluster.applyHelmRelease({ namespace: ns, name: r, repository: 'absent' })
    await cluster.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'web-values', namespace: ns }, data: { 'values.yaml': 'level: two\n' } },
    })
    await cluster.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'api-values', namespace: ns }, data: { 'values.yaml': 'level: one\n' } },
    })
    repo.write(fleetRepoFiles(specs, () => 'one'))
    const before = repo.commit('fleet')
    repo.write(fleetRepoFiles(specs, (_, r) => (r === 'web' ? 'two' : 'one')))
    const after = repo.commit('web values on both clusters')
    const push = { workspace: repo.dir, eventName: 'push', event: { before, after }, sha: after }
    const planFile = join(dir, 'plan', 'fleet-plan.json')

    // The plan renders each cluster root with the pinned kustomize.
    const kustomize = await kustomizeBinary()
    const plan = await runAction({
      ...push,
      inputs: { mode: 'plan', clusters: 'eu=clusters/eu\nus=clusters/us', 'plan-file': planFile, 'kustomize-path': kustomize },
    })
    expect(plan.exitCode, plan.stdout + plan.stderr).toBe(0)
    expect(JSON.parse(plan.outputs['wave-1'] ?? '')).toEqual({
      include: [
        { cluster: 'eu', secret: 'KUBECONFIG_EU', wave: 1, releases: 1 },
        { cluster: 'us', secret: 'KUBECONFIG_US', wave: 1, releases: 1 },
      ],
    })
    expect(plan.outputs['plan-file']).toBe(planFile)
    const planned = JSON.parse(readFileSync(planFile, 'utf8')) as { clusters: { name: string; plan: { releases: { sources: { digest: string }[] }[] } }[] }
    const digest = planned.clusters.find((c) => c.name === 'eu')?.plan.releases[0]?.sources[0]?.digest

    // The matrix job of `eu`: no checkout needed, only the plan file and its kubeconfig secret.
    const resultFile = join(dir, 'results', 'result-eu.json')
    const part = await runAction({
      ...push,
      inputs: { mode: 'trigger', cluster: 'eu', 'plan-file': planFile, 'result-file': resultFile, kubeconfig, wait: 'false', timeout: '30s' },
    })
    expect(part.exitCode, part.stdout + part.stderr).toBe(0)
    expect(JSON.parse(part.outputs['triggered'] ?? '[]')).toMatchObject([{ namespace: ns, name: 'web', status: 'Triggered' }])
    const web = await cluster.getHelmRelease(ns, 'web')
    expect(JSON.parse(web.metadata.annotations?.['nebius.ai/config-digest'] ?? '{}')).toEqual({ [`ConfigMap/${ns}/web-values`]: digest })
    expect((await cluster.getHelmRelease(ns, 'api')).metadata.annotations?.['reconcile.fluxcd.io/requestedAt']).toBeUndefined()

    // The summary job: `us` never reported (its job did not run), and says so.
    const summary = await runAction({
      ...push,
      inputs: { mode: 'fleet-summary', 'plan-file': planFile, results: join(dir, 'results'), 'github-report': 'none' },
    })
    expect(summary.exitCode).toBe(1)
    const fleet = JSON.parse(summary.outputs['fleet'] ?? '{}') as {
      clusters: { cluster: string; state: string; releases: { name: string; status: string }[] }[]
    }
    expect(fleet.clusters.map((c) => [c.cluster, c.state, c.releases.map((r) => `${r.name}:${r.status}`)])).toEqual([
      ['eu', 'Succeeded', ['web:Triggered']],
      ['us', 'NoResult', []],
    ])
    expect(summary.summary).toContain('fleet: 2 of 2 clusters with work; 1 succeeded, 0 failed, 1 without result')
  })
})
