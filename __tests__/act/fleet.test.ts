// examples/fleet.yml, unmodified, calling .github/workflows/fleet.yml under a real Actions runner
// (act), for a repository with two clusters in two waves (staging, then prod-*) whose releases
// live on the local cluster (one namespace per cluster, each with its own kubeconfig secret): the
// plan job plans once and outputs each wave's matrix; a commit both clusters take rolls out wave
// after wave and the caller's report job reads the fleet output; a commit staging's chart refuses
// fails wave 1, wave 2 never starts, and the summary job still gathers the plan and staging's
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
const kubeconfig = kubeconfigYaml({ server: cluster.server, caData: cluster.caData, token: cluster.adminToken })
let api: GitHubApi
let repo: Repo
let specs: FleetClusterSpec[]
/** The level each cluster's `app` has in the repository (and, once pushed, in the cluster). */
const levels = new Map<string, string>()

/** Commits new levels and applies them to the clusters, as kustomize-controller would; returns before and after. */
async function push(changes: Readonly<Record<string, string>>): Promise<{ before: string; after: string }> {
  const before = repo.git('rev-parse', 'HEAD')
  for (const [name, level] of Object.entries(changes)) levels.set(name, level)
  repo.write(fleetRepoFiles(specs, (name) => levels.get(name) ?? 'one'))
  const after = repo.commit(`levels: ${Object.keys(changes).join(', ')}`)
  for (const spec of specs) await cluster.applyValues(spec.namespace, `level: ${levels.get(spec.name) ?? 'one'}`)
  return { before, after }
}

async function fleet(changes: Readonly<Record<string, string>>): Promise<{ run: ActRun; after: string }> {
  const { before, after } = await push(changes)
  const run = await runAct({
    repo: repo.dir,
    workflow: join(REPO_ROOT, 'examples', 'fleet.yml'),
    event: 'push',
    payload: pushEvent(api, before, after),
    api,
    // `secrets: inherit` hands each cluster job the secret its matrix entry names.
    secrets: { KUBECONFIG_STAGING: kubeconfig, KUBECONFIG_PROD_EU: kubeconfig },
  })
  return { run, after }
}

const requestedAt = async (namespace: string): Promise<string | undefined> =>
  (await cluster.getHelmRelease(namespace, 'app')).metadata.annotations?.['reconcile.fluxcd.io/requestedAt']

beforeAll(async () => {
  api = await startGitHubApi()
  specs = []
  for (const name of ['staging', 'prod-eu']) {
    const namespace = await cluster.createNamespace(`act-${name}`)
    await cluster.applyHelmRepository(namespace)
    await cluster.applyValues(namespace, 'level: one')
    await cluster.applyHelmRelease({ namespace, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
    specs.push({ name, namespace, releases: ['app'] })
  }
  for (const spec of specs) await cluster.waitForHelmReleaseReady(spec.namespace, 'app')
  repo = createActRepo(api)
  repo.write(fleetRepoFiles(specs, () => 'one'))
  repo.commit('two clusters')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

interface FleetOutput {
  readonly head: string
  readonly clusters: readonly {
    cluster: string
    wave: number
    state: string
    message?: string
    releases: readonly { namespace: string; name: string; status: string; reason: string; message?: string }[]
  }[]
}

/** Index of the first and last log entry of a job: when it started and ended. */
function span(run: ActRun, jobId: string): [number, number] {
  const at = run.entries.flatMap((e, i) => (e.jobID === jobId ? [i] : []))
  return [at[0] ?? -1, at[at.length - 1] ?? -1]
}

/** The matrix entries a job ran with (act logs each entry's lines with its matrix). */
function matrixClusters(run: ActRun, jobId: string): unknown[] {
  return [
    ...new Set(run.entries.filter((e) => e.jobID === jobId && e.matrix !== undefined && Object.keys(e.matrix).length > 0).map((e) => e.matrix?.['cluster'])),
  ]
}

describe('examples/fleet.yml under act, two clusters in two waves', () => {
  it('rolls a commit out wave after wave, and the report job reads the fleet output', async () => {
    const { run, after } = await fleet({ staging: 'two', 'prod-eu': 'two' })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)

    // Planned once: each wave's matrix is the plan job's output of that wave.
    const outputs = run.stepOutputs('plan', 'plan')
    expect(JSON.parse(outputs['wave-1'] ?? '')).toEqual({ include: [{ cluster: 'staging', secret: 'KUBECONFIG_STAGING', wave: 1, releases: 1 }] })
    expect(JSON.parse(outputs['wave-2'] ?? '')).toEqual({ include: [{ cluster: 'prod-eu', secret: 'KUBECONFIG_PROD_EU', wave: 2, releases: 1 }] })
    expect(outputs['wave-count']).toBe('2')

    // wave-3 has no output (two waves): GitHub skips it on its `if:`; act evaluates its matrix
    // first, logs "Invalid JSON", and skips it too. act also cannot evaluate
    // `max-parallel: ${{ inputs.max-parallel }}` (it logs a parse error and runs at most 4 at once).
    expect(run.jobIds()).toEqual(['plan', 'wave-1', 'wave-2', 'summary', 'report'])
    for (const job of run.jobIds()) expect(run.jobResults(job), job).toEqual(['success'])
    expect(matrixClusters(run, 'wave-1')).toEqual(['staging'])
    expect(matrixClusters(run, 'wave-2')).toEqual(['prod-eu'])
    expect(span(run, 'wave-1')[1]).toBeLessThan(span(run, 'wave-2')[0])

    const fleetOutput = JSON.parse(run.stepOutputs('summary', 'summary')['fleet'] ?? '{}') as FleetOutput
    expect(fleetOutput.head).toBe(after)
    expect(fleetOutput.clusters.map((c) => [c.cluster, c.wave, c.state, c.releases.map((r) => `${r.namespace}/${r.name}:${r.status}`)])).toEqual([
      ['prod-eu', 2, 'Succeeded', [`${specs[1]?.namespace}/app:Upgraded`]],
      ['staging', 1, 'Succeeded', [`${specs[0]?.namespace}/app:Upgraded`]],
    ])
    // The caller's report job printed needs.fleet.outputs.fleet: the same JSON, through fleet.yml's outputs.
    expect(JSON.parse(run.output('report').trim())).toEqual(fleetOutput)
    expect(run.summaries('summary').join('\n')).toContain('## helmrelease-trigger fleet: 2 of 2 clusters with work; 2 succeeded')
    expect(api.checkRuns.filter((c) => c.head_sha === after)).toEqual([expect.objectContaining({ status: 'completed', conclusion: 'success' })])
  })

  it('stops at a failing wave: staging’s upgrade fails, prod-eu is never started, the summary says both', async () => {
    const prodBefore = await requestedAt(specs[1]?.namespace ?? '')
    const { run, after } = await fleet({ staging: 'three\nfail: rejected by the demo chart', 'prod-eu': 'three' })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode).not.toBe(0)
    expect(run.jobResults('plan'), run.text).toEqual(['success'])
    expect(run.jobResults('wave-1')).toEqual(['failure'])
    expect(run.jobResults('summary')).toEqual(['failure'])
    const errors = workflowCommands(run.output('wave-1')).filter((c) => c.name === 'error')
    expect(errors.map((c) => c.line)).toContain(`::error::1 problem (fail-on: error): ${specs[0]?.namespace}/app: Failed (UpgradeFailed)`)

    const fleetOutput = JSON.parse(run.stepOutputs('summary', 'summary')['fleet'] ?? '{}') as FleetOutput
    expect(fleetOutput.head).toBe(after)
    expect(fleetOutput.clusters.map((c) => [c.cluster, c.state, c.message ?? ''])).toEqual([
      ['prod-eu', 'NotStarted', 'not started: wave 1 failed (staging)'],
      ['staging', 'Failed', expect.any(String)],
    ])
    // staging's result reached the summary job through upload-artifact and download-artifact.
    expect(fleetOutput.clusters[1]?.releases).toEqual([expect.objectContaining({ name: 'app', status: 'Failed', reason: 'UpgradeFailed' })])
    expect(run.summaries('summary').join('\n')).toContain('rejected by the demo chart')
    expect(api.checkRuns.filter((c) => c.head_sha === after)).toEqual([expect.objectContaining({ status: 'completed', conclusion: 'failure' })])
    expect(await requestedAt(specs[1]?.namespace ?? '')).toBe(prodBefore)

    // act difference: when a called workflow fails, act ends the caller's run, so the report job
    // (needs: fleet, if: always()) and wave-2 (skipped on its `if:` on GitHub) leave no result;
    // GitHub's runner runs the report job. Nothing of ours depends on which one happens.
    expect(run.jobIds()).toEqual(['plan', 'wave-1', 'summary'])
  })
})
