// A fleet's cluster job that fails still leaves its result, through the bundled action as the
// runner runs it: a kubeconfig that cannot be read, an input that cannot be parsed. The fleet
// summary then says Failed with the reason, not that the job ended without reporting.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { secretName } from '../../src/core/cluster-list.ts'
import { writePlanFile, type ClusterPlan, type FleetPlan } from '../../src/modes/fleet/fleet-plan.ts'
import { readResultFile } from '../../src/modes/fleet/fleet-result.ts'
import { runAction } from '../../test/support/action.ts'

const dir = mkdtempSync(join(tmpdir(), 'hrt-fleet-result-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const digest = `sha256:${'2'.repeat(64)}` as const

/** A cluster whose part changes ConfigMap apps/values, read by release apps/web. */
function cluster(name: string): ClusterPlan {
  const source = {
    ...({ kind: 'ConfigMap', namespace: 'apps', name: 'values', id: 'ConfigMap/apps/values', encrypted: false } as const),
    ...({
      origin: { file: 'apps/values.yaml', line: 1 },
      change: 'modified',
      digest,
      targets: [{ namespace: 'apps', name: 'web', reasons: ['valuesFrom'] }],
    } as const),
  }
  const releases = [{ namespace: 'apps', name: 'web', sources: [{ id: source.id, digest, encrypted: false }] }]
  return { name, root: `clusters/${name}`, secret: secretName(name), wave: 1, paths: [], plan: { sources: [source], releases, problems: [] } }
}

const PLAN: FleetPlan = {
  range: { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] },
  options: { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, paths: ['**/*.yaml'], crossNamespaceTargets: [] },
  waves: 1,
  clusters: [cluster('staging'), cluster('prod-eu'), cluster('prod-us')],
}

describe('a cluster job that fails', () => {
  it('writes a Failed result with the reason, and the fleet summary shows it', async () => {
    const planFile = join(dir, 'plan', 'fleet-plan.json')
    const results = join(dir, 'results')
    mkdirSync(join(dir, 'plan'))
    writeFileSync(planFile, writePlanFile(PLAN))
    const push = { workspace: dir, eventName: 'push', event: {}, sha: 'b'.repeat(40) }
    const part = (name: string, inputs: Record<string, string>) =>
      runAction({ ...push, inputs: { mode: 'trigger', cluster: name, 'plan-file': planFile, 'result-file': join(results, `result-${name}.json`), ...inputs } })

    // A kubeconfig that is no kubeconfig: the part fails connecting.
    const token = 'sekrit-token-4242'
    const staging = await part('staging', { kubeconfig: `apiVersion: v1\nkind: Config\nusers: [{name: x, user: {token: ${token}}}\n` })
    expect(staging.exitCode, staging.stdout + staging.stderr).toBe(1)
    // An input that cannot be parsed: the run fails before the part starts.
    const prodEu = await part('prod-eu', { kubeconfig: 'x', timeout: 'soon' })
    expect(prodEu.exitCode).toBe(1)

    const written = (name: string) => readResultFile(readFileSync(join(results, `result-${name}.json`), 'utf8'), name)
    expect(written('staging')).toMatchObject({ cluster: 'staging', state: 'Failed', message: expect.stringContaining('kubeconfig') })
    expect(written('prod-eu')).toMatchObject({ cluster: 'prod-eu', state: 'Failed', message: expect.stringContaining('timeout') })
    for (const name of ['staging', 'prod-eu']) expect(readFileSync(join(results, `result-${name}.json`), 'utf8')).not.toContain(token)

    // prod-us's job never ran: the one cluster without a result.
    const summary = await runAction({ ...push, inputs: { mode: 'fleet-summary', 'plan-file': planFile, results, 'github-report': 'none' } })
    expect(summary.exitCode).toBe(1)
    const fleet = JSON.parse(summary.outputs['fleet'] ?? '{}') as { clusters: { cluster: string; wave: number; state: string; message?: string }[] }
    expect(fleet.clusters.map((c) => [c.cluster, c.wave, c.state])).toEqual([
      ['staging', 1, 'Failed'],
      ['prod-eu', 1, 'Failed'],
      ['prod-us', 1, 'NoResult'],
    ])
    expect(fleet.clusters[0]?.message).toBe(written('staging').message)
    expect(summary.summary).toContain('fleet: 3 of 3 clusters with work; 0 succeeded, 2 failed, 1 without result')
    expect(summary.summary).toMatch(/\| `staging` \| 1 \| — \| ❌ Failed \| [^|]+ \| [^|]*kubeconfig/)
  })
})
