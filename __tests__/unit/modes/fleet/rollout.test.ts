// The rollout over the fleet, on a fake cluster runner: waves in order, a failed wave stops the
// later ones (the summary names them), at most maxParallel clusters at once; and the gathering
// of matrix jobs' result files into the same view.

import { describe, expect, it } from 'vitest'
import type { ClusterPlan, FleetPlan } from '../../../../src/modes/fleet/fleet-plan.ts'
import { ClusterState, readResultFile, writeResultFile, type ClusterResult } from '../../../../src/modes/fleet/fleet-result.ts'
import { fleetFailure, fleetHeadline, fleetSummaryMarkdown, fleetText } from '../../../../src/modes/fleet/fleet-summary.ts'
import { gatherResults, runRollout } from '../../../../src/modes/fleet/rollout.ts'
import { controllerReason, Status } from '../../../../src/engine/result.ts'

const DIGEST = `sha256:${'1'.repeat(64)}` as const

function cluster(name: string, wave: number, releases: readonly string[]): ClusterPlan {
  return {
    name,
    root: `clusters/${name}`,
    secret: `KUBECONFIG_${name.toUpperCase().replace(/-/g, '_')}`,
    wave,
    paths: [`clusters/${name}/**`],
    plan: {
      sources: [],
      releases: releases.map((r) => ({ namespace: 'apps', name: r, sources: [{ id: 'ConfigMap/apps/values' as const, digest: DIGEST, encrypted: false }] })),
      problems: [],
    },
  }
}

const PLAN: FleetPlan = {
  range: { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] },
  options: { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, paths: ['**/*.yaml'], crossNamespaceTargets: [] },
  waves: 2,
  clusters: [cluster('staging', 1, ['web']), cluster('qa', 1, []), cluster('prod-eu', 2, ['web', 'api']), cluster('prod-us', 2, ['web'])],
}

function ran(c: ClusterPlan, status: Status): ClusterResult {
  const failed = status === Status.Failed
  return {
    cluster: c.name,
    wave: c.wave,
    state: failed ? ClusterState.Failed : ClusterState.Succeeded,
    ...(failed ? { message: 'apps/web: Failed (UpgradeFailed)' } : {}),
    results: c.plan.releases.map((r) => ({
      namespace: r.namespace,
      name: r.name,
      sources: r.sources,
      status,
      reason: controllerReason(failed ? 'UpgradeFailed' : 'UpgradeSucceeded'),
      message: failed ? 'Helm upgrade failed' : 'upgraded to revision 2',
      durationMs: 1500,
      severity: failed ? 'error' : 'none',
    })),
    sources: [],
    problems: [],
    durationMs: 2000,
  }
}

const options = { maxParallel: 4, now: () => 0 }

describe('runRollout', () => {
  it('runs every cluster with work, wave after wave, and never the ones without', async () => {
    const order: string[] = []
    const results = await runRollout(
      PLAN,
      async (c) => {
        order.push(c.name)
        return ran(c, Status.Upgraded)
      },
      options,
    )
    expect(order.slice(0, 1)).toEqual(['staging'])
    expect([...order.slice(1)].sort()).toEqual(['prod-eu', 'prod-us'])
    expect(results.map((r) => [r.cluster, r.state])).toEqual([
      ['staging', 'Succeeded'],
      ['qa', 'NoWork'],
      ['prod-eu', 'Succeeded'],
      ['prod-us', 'Succeeded'],
    ])
    expect(fleetFailure({ plan: PLAN, clusters: results })).toBeUndefined()
  })

  it('stops after a wave with a failed release: the later waves are not started, and the summary says which', async () => {
    const started: string[] = []
    const results = await runRollout(
      PLAN,
      async (c) => {
        started.push(c.name)
        return ran(c, c.name === 'staging' ? Status.Failed : Status.Upgraded)
      },
      options,
    )
    expect(started).toEqual(['staging'])
    const report = { plan: PLAN, clusters: results }
    expect(results.filter((r) => r.state === ClusterState.NotStarted).map((r) => [r.cluster, r.message])).toEqual([
      ['prod-eu', 'not started: wave 1 failed (staging)'],
      ['prod-us', 'not started: wave 1 failed (staging)'],
    ])
    expect(fleetHeadline(report)).toBe('fleet: 3 of 4 clusters with work; 0 succeeded, 1 failed, 2 not started')
    expect(fleetFailure(report)).toContain('3 clusters did not succeed: staging (Failed: apps/web: Failed (UpgradeFailed))')
    const text = fleetText(report)
    expect(text).toMatch(/staging\s+1\s+apps\/web\s+❌ Failed \(UpgradeFailed\)\s+1\.5s\s+Helm upgrade failed/)
    expect(text).toMatch(/prod-eu\s+2\s+—\s+⏸️ NotStarted\s+—\s+not started: wave 1 failed \(staging\)/)
    expect(fleetSummaryMarkdown(report)).toContain('| `qa` | 1 | — | ➖ NoWork | — | the commit changes nothing this cluster triggers on |')
  })

  it('turns a cluster whose run throws into a Failed result with the error, not a crash', async () => {
    const results = await runRollout(
      PLAN,
      async (c) => {
        if (c.name === 'prod-us') throw new Error('no context prod-us in the kubeconfig')
        return ran(c, Status.Upgraded)
      },
      options,
    )
    expect(results.find((r) => r.cluster === 'prod-us')).toMatchObject({ state: 'Failed', message: 'no context prod-us in the kubeconfig' })
  })

  it('keeps at most maxParallel clusters running', async () => {
    const many: FleetPlan = { ...PLAN, waves: 1, clusters: Array.from({ length: 7 }, (_, i) => cluster(`c${i}`, 1, ['web'])) }
    let running = 0
    let most = 0
    const gates: (() => void)[] = []
    const rollout = runRollout(
      many,
      async (c) => {
        running++
        most = Math.max(most, running)
        await new Promise<void>((resolve) => gates.push(resolve))
        running--
        return ran(c, Status.Upgraded)
      },
      { ...options, maxParallel: 3 },
    )
    // Release the clusters one by one as they wait: never more than three are waiting at once.
    for (let released = 0; released < 7; released++) {
      while (gates.length === 0) await new Promise((resolve) => setImmediate(resolve))
      expect(running).toBeLessThanOrEqual(3)
      gates.shift()?.()
    }
    expect((await rollout).every((r) => r.state === ClusterState.Succeeded)).toBe(true)
    expect(most).toBe(3)
  })
})

describe('gatherResults (the summary job of the workflow)', () => {
  it('reads each cluster from its result file; a wave after a failure is not started; a missing file is NoResult', () => {
    const files = [ran(PLAN.clusters[0] as ClusterPlan, Status.Failed)].map((r) => readResultFile(writeResultFile(r), `result-${r.cluster}.json`))
    const gathered = gatherResults(PLAN, files)
    expect(gathered.map((r) => [r.cluster, r.state])).toEqual([
      ['staging', 'Failed'],
      ['qa', 'NoWork'],
      ['prod-eu', 'NotStarted'],
      ['prod-us', 'NotStarted'],
    ])
    const noFiles = gatherResults(PLAN, [])
    expect(noFiles.find((r) => r.cluster === 'staging')).toMatchObject({ state: 'NoResult' })
    expect(noFiles.find((r) => r.cluster === 'prod-eu')).toMatchObject({ state: 'NotStarted', message: 'not started: wave 1 failed (staging)' })
  })

  it('refuses a result file from something else in one sentence', () => {
    expect(() => readResultFile('{"kind":"other"}', 'results/x.json')).toThrow(
      'results/x.json is not a helmrelease-trigger cluster result (kind and version must be helmrelease-trigger/cluster-result 1); was it written by the same release?',
    )
  })
})
