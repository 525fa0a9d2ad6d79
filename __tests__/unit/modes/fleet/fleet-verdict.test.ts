// The fleet's one check and one comment: conclusion, title, table and the annotations on the
// changed lines, from the same report as the job summary.

import { describe, expect, it } from 'vitest'
import type { ClusterPlan, FleetPlan } from '../../../../src/modes/fleet/fleet-plan.ts'
import { ClusterState, type ClusterResult } from '../../../../src/modes/fleet/fleet-result.ts'
import { fleetVerdict } from '../../../../src/modes/fleet/fleet-verdict.ts'
import { noWork } from '../../../../src/modes/fleet/rollout.ts'

const DIGEST = `sha256:${'3'.repeat(64)}` as const

function cluster(name: string, changed: boolean): ClusterPlan {
  const source = {
    kind: 'ConfigMap' as const,
    namespace: 'apps',
    name: 'web-values',
    id: 'ConfigMap/apps/web-values' as const,
    change: 'modified' as const,
    digest: DIGEST,
    encrypted: false,
    origin: { file: `apps/${name}/web-values.yaml`, line: 1 },
    targets: [{ namespace: 'apps', name: 'web', reasons: ['annotation' as const] }],
  }
  return {
    name,
    root: `clusters/${name}`,
    secret: 'X',
    wave: 1,
    paths: [],
    plan: {
      sources: changed ? [source] : [],
      releases: changed ? [{ namespace: 'apps', name: 'web', sources: [{ id: source.id, digest: DIGEST, encrypted: false }] }] : [],
      problems: [],
    },
  }
}

const plan = (clusters: ClusterPlan[]): FleetPlan => ({
  range: { base: 'a'.repeat(40), head: 'c'.repeat(40), fullSync: false, notes: [] },
  options: { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, paths: [], crossNamespaceTargets: [] },
  waves: 1,
  clusters,
})

const succeeded = (name: string): ClusterResult => ({
  cluster: name,
  wave: 1,
  state: ClusterState.Succeeded,
  results: [],
  sources: [],
  problems: [],
  durationMs: 1,
})

describe('fleetVerdict', () => {
  it('succeeds when every cluster with work did, and annotates each changed line with its cluster and release', () => {
    const p = plan([cluster('a', true), cluster('b', false)])
    const v = fleetVerdict({ plan: p, clusters: [succeeded('a'), noWork(p.clusters[1] as ClusterPlan)] }, 'https://github.example/run/1')
    expect(v.conclusion).toBe('success')
    expect(v.title).toBe('1 of 2 clusters with work; 1 succeeded, 0 failed')
    expect(v.summary).toContain('[Workflow run](https://github.example/run/1)')
    expect(v.annotations).toEqual([
      { path: 'apps/a/web-values.yaml', startLine: 1, level: 'notice', title: 'ConfigMap/apps/web-values modified', message: 'triggers a: apps/web' },
    ])
    expect(v.comment.startsWith('### ✅ helmrelease-trigger fleet: 1 of 2 clusters with work')).toBe(true)
  })

  it('is neutral when no cluster had work, and a failure when one did not succeed', () => {
    const idle = plan([cluster('a', false)])
    expect(fleetVerdict({ plan: idle, clusters: [noWork(idle.clusters[0] as ClusterPlan)] }, undefined).conclusion).toBe('neutral')
    const busy = plan([cluster('a', true)])
    const failed: ClusterResult = { ...succeeded('a'), state: ClusterState.Failed, message: 'x' }
    expect(fleetVerdict({ plan: busy, clusters: [failed] }, undefined).conclusion).toBe('failure')
  })
})
