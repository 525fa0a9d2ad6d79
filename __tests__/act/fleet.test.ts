// examples/fleet.yml, unmodified, calling .github/workflows/fleet.yml under a real Actions runner
// (act) for a repository with two clusters in two waves (staging, then prod-*): the plan job plans
// once and outputs each wave's matrix; staging's kubeconfig is refused by the real apiserver, so
// wave 1 fails and wave 2 never starts; the summary job still gathers the plan and staging's
// result (through the artifact steps) into one fleet summary and one check run.

import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActRepo, pushEvent, runAct, type ActRun } from '../../test/support/act.ts'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../../test/support/fleet-repo.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { kubeconfigYaml } from '../../test/support/kube.ts'
import type { Repo } from '../../test/support/repo.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

const cluster = useCluster()
let api: GitHubApi
let repo: Repo
let base: string
let head: string
let run: ActRun

const CLUSTERS: FleetClusterSpec[] = [
  { name: 'staging', namespace: 'apps', releases: ['web'] },
  { name: 'prod-eu', namespace: 'apps', releases: ['web'] },
]

beforeAll(async () => {
  api = await startGitHubApi()
  repo = createActRepo(api)
  repo.write(fleetRepoFiles(CLUSTERS, () => 'one'))
  base = repo.commit('two clusters')
  repo.write(fleetRepoFiles(CLUSTERS, () => 'two'))
  head = repo.commit('level two everywhere')
  run = await runAct({
    repo: repo.dir,
    workflow: join(REPO_ROOT, 'examples', 'fleet.yml'),
    event: 'push',
    payload: pushEvent(api, base, head),
    api,
    secrets: {
      // The real apiserver, with a token it does not know: staging's trigger fails on it.
      KUBECONFIG_STAGING: kubeconfigYaml({ server: cluster.server, caData: cluster.caData, token: 'not-a-token' }),
      KUBECONFIG_PROD_EU: kubeconfigYaml({ server: cluster.server, caData: cluster.caData, token: cluster.adminToken }),
    },
  })
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

interface FleetOutput {
  readonly head: string
  readonly clusters: readonly { cluster: string; wave: number; state: string; message: string }[]
}

describe('examples/fleet.yml under act', () => {
  it('plans once: the plan job outputs each wave’s matrix and uploads the plan file', () => {
    expect(run.jobResults('plan'), run.text).toEqual(['success'])
    expect(run.misreadCommands()).toEqual([])
    const outputs = run.stepOutputs('plan', 'plan')
    expect(JSON.parse(outputs['wave-1'] ?? '')).toEqual({ include: [{ cluster: 'staging', secret: 'KUBECONFIG_STAGING', wave: 1, releases: 1 }] })
    expect(JSON.parse(outputs['wave-2'] ?? '')).toEqual({ include: [{ cluster: 'prod-eu', secret: 'KUBECONFIG_PROD_EU', wave: 2, releases: 1 }] })
    expect(outputs['wave-count']).toBe('2')
    expect(JSON.parse(outputs['cluster-releases'] ?? '')).toEqual({ staging: ['apps/web'], 'prod-eu': ['apps/web'] })
  })

  it('runs wave 1 (staging) with its own secret, fails it on the refused kubeconfig, and never starts wave 2', () => {
    expect(run.exitCode).not.toBe(0)
    // wave-3 has no output (two waves): GitHub skips it on its `if:`; act evaluates its matrix
    // first, logs "Invalid JSON", and skips it too. act also cannot evaluate
    // `max-parallel: ${{ inputs.max-parallel }}` (it logs a parse error and runs at most 4 at once).
    expect(run.jobIds()).toEqual(['plan', 'wave-1', 'summary'])
    expect(run.jobResults('wave-1')).toEqual(['failure'])
    const staging = run.entries.filter((e) => e.jobID === 'wave-1' && e.matrix !== undefined && Object.keys(e.matrix).length > 0)
    expect(new Set(staging.map((e) => e.matrix?.['cluster']))).toEqual(new Set(['staging']))
    const errors = workflowCommands(run.output('wave-1')).filter((c) => c.name === 'error')
    expect(errors.map((c) => c.line)).toEqual([expect.stringMatching(/^::error::The Kubernetes API server https:\/\/127\.0\.0\.1:\d+ rejected the credentials \(401 Unauthorized\)/)])
    // The token was masked for the runner before anything could print it.
    expect(workflowCommands(run.output('wave-1')).find((c) => c.name === 'add-mask')?.line).toBe('::add-mask::not-a-token')
  })

  it('gathers the fleet in the summary job: staging without a result, prod-eu not started, one check run', () => {
    expect(run.jobResults('summary')).toEqual(['failure'])
    const fleet = JSON.parse(run.stepOutputs('summary', 'summary')['fleet'] ?? '{}') as FleetOutput
    expect(fleet.head).toBe(head)
    expect(fleet.clusters.map(({ cluster, wave, state }) => ({ cluster, wave, state }))).toEqual([
      { cluster: 'prod-eu', wave: 2, state: 'NotStarted' },
      { cluster: 'staging', wave: 1, state: 'NoResult' },
    ])
    expect(fleet.clusters[0]?.message).toBe('not started: wave 1 failed (staging)')
    const [summary] = run.summaries('summary')
    expect(summary).toContain('## helmrelease-trigger fleet: 2 of 2 clusters with work; 0 succeeded, 0 failed, 1 not started, 1 without result')
    expect(summary).toContain(`planned once for 2 clusters in 2 waves`)
    expect(api.checkRuns).toEqual([expect.objectContaining({ head_sha: head, name: 'helmrelease-trigger', status: 'completed', conclusion: 'failure' })])
  })

  it('stops the caller: the report job after the fleet does not run under act', () => {
    // act difference: when a called workflow fails, act ends the caller's run, so the example's
    // `report` job (needs: fleet, if: always()) never starts; GitHub's runner starts it and it
    // prints needs.fleet.outputs.fleet. Nothing of ours depends on which one happens.
    expect(run.jobIds()).not.toContain('report')
    expect(run.stderr + run.text).toContain("Job '${{ matrix.cluster }}' failed")
  })
})
