// The fleet plan's ModeResult: a file two clusters share is one annotation and one problem,
// fail-on decides the failure, and the saved plan file is an output.

import { describe, expect, it } from 'vitest'
import type { FileProblem, Plan } from '../../../../src/core/model.ts'
import type { ClusterPlan, FleetPlan } from '../../../../src/modes/fleet/fleet-plan.ts'
import { fleetPlanResult } from '../../../../src/modes/fleet/fleet-plan-report.ts'

const shared: FileProblem = { severity: 'warning', file: 'base/values.yaml', line: 4, message: 'duplicate key' }
const own: FileProblem = { severity: 'error', file: 'clusters/prod/app.yaml', message: 'not YAML' }

function cluster(name: string, problems: readonly FileProblem[]): ClusterPlan {
  const plan: Plan = { sources: [], releases: [], problems }
  return { name, root: `clusters/${name}`, secret: `kubeconfig-${name}`, wave: 1, paths: ['**/*.yaml'], plan }
}

const fleet: FleetPlan = {
  range: { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] },
  options: { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, paths: ['**/*.yaml'], crossNamespaceTargets: [] },
  waves: 1,
  clusters: [cluster('staging', [shared]), cluster('prod', [shared, own])],
}

describe('fleetPlanResult', () => {
  it('annotates a problem two clusters share once, on its file and line', () => {
    const result = fleetPlanResult(fleet, { failOn: 'error', planFile: undefined })
    expect(result.annotations).toEqual([
      { severity: 'warning', title: 'helmrelease-trigger', message: 'duplicate key', file: 'base/values.yaml', line: 4 },
      { severity: 'error', title: 'helmrelease-trigger', message: 'not YAML', file: 'clusters/prod/app.yaml' },
    ])
  })

  it('fails on the distinct problems fail-on counts', () => {
    expect(fleetPlanResult(fleet, { failOn: 'error', planFile: undefined }).failure).toBe('1 manifest problem (fail-on: error); see the annotations.')
    expect(fleetPlanResult(fleet, { failOn: 'warning', planFile: undefined }).failure).toBe('2 manifest problems (fail-on: warning); see the annotations.')
    expect(fleetPlanResult(fleet, { failOn: 'never', planFile: undefined }).failure).toBeUndefined()
  })

  it('names the saved plan file among the outputs, but not in --json', () => {
    const result = fleetPlanResult(fleet, { failOn: 'never', planFile: 'out/plan.json' })
    expect(result.outputs['plan-file']).toBe('out/plan.json')
    expect(result.json).not.toHaveProperty('plan-file')
    expect(result.outputs['wave-count']).toBe('1')
  })
})
