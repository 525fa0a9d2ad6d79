// The fleet's rollout from one plan: wave after wave, at most `maxParallel` clusters at once;
// a wave starts only when every cluster of the waves before it succeeded. Clusters already
// running finish (as a matrix with fail-fast off does); the later waves are not started.

import { mapLimit } from '../../lib/concurrency.ts'
import { messageOf } from '../../lib/errors.ts'
import { ClusterState, clusterErrorOf, type ClusterResult } from './fleet-result.ts'
import { hasWork, type ClusterPlan, type FleetPlan } from './fleet-plan.ts'

/** Runs one cluster's part of the plan; errors thrown become a Failed result. */
export type ClusterRunner = (cluster: ClusterPlan) => Promise<ClusterResult>

export interface RolloutOptions {
  readonly maxParallel: number
  readonly now: () => number
  /** Told when a cluster starts and ends (CLI progress). */
  readonly onEvent?: (line: string) => void
}

/** Every cluster of the plan, in plan order, with what became of it. */
export async function runRollout(plan: FleetPlan, run: ClusterRunner, options: RolloutOptions): Promise<ClusterResult[]> {
  const done = new Map<string, ClusterResult>()
  let stoppedBy: string | undefined
  for (let wave = 1; wave <= plan.waves; wave++) {
    const inWave = plan.clusters.filter((c) => c.wave === wave && hasWork(c))
    if (stoppedBy !== undefined) {
      for (const c of inWave) done.set(c.name, notStarted(c, stoppedBy))
      continue
    }
    const results = await mapLimit(inWave, options.maxParallel, async (cluster) => {
      const started = options.now()
      options.onEvent?.(`${cluster.name}: started (wave ${wave}, ${cluster.plan.releases.length} release${cluster.plan.releases.length === 1 ? '' : 's'})`)
      let result: ClusterResult
      try {
        result = await run(cluster)
      } catch (error) {
        result = clusterErrorOf(cluster, messageOf(error), options.now() - started)
      }
      options.onEvent?.(`${cluster.name}: ${result.state}${result.message === undefined ? '' : `: ${result.message}`}`)
      return result
    })
    for (const r of results) done.set(r.cluster, r)
    const failed = results.filter((r) => r.state !== ClusterState.Succeeded).map((r) => r.cluster)
    if (failed.length > 0) stoppedBy = `wave ${wave} failed (${failed.join(', ')})`
  }
  return plan.clusters.map((c) => done.get(c.name) ?? noWork(c))
}

export function notStarted(cluster: ClusterPlan, why: string): ClusterResult {
  return {
    cluster: cluster.name,
    wave: cluster.wave,
    state: ClusterState.NotStarted,
    message: `not started: ${why}`,
    results: [],
    sources: [],
    problems: [],
    durationMs: 0,
  }
}

export function noWork(cluster: ClusterPlan): ClusterResult {
  return { cluster: cluster.name, wave: cluster.wave, state: ClusterState.NoWork, results: [], sources: [], problems: cluster.plan.problems, durationMs: 0 }
}

/**
 * The rollout as the matrix jobs left it: each cluster with work has its result file, or was
 * not started because a wave before it failed, or its job ended without writing one.
 */
export function gatherResults(plan: FleetPlan, found: readonly ClusterResult[]): ClusterResult[] {
  const byName = new Map(found.map((r) => [r.cluster, r]))
  const failedWaves = new Map<number, string[]>()
  for (const c of plan.clusters) {
    const r = byName.get(c.name)
    if (hasWork(c) && r?.state !== ClusterState.Succeeded) failedWaves.set(c.wave, [...(failedWaves.get(c.wave) ?? []), c.name])
  }
  return plan.clusters.map((c) => {
    if (!hasWork(c)) return noWork(c)
    const r = byName.get(c.name)
    // The plan's wave: a job that failed before reading the plan could not know it.
    if (r !== undefined) return { ...r, wave: c.wave }
    const earlier = [...failedWaves].filter(([wave]) => wave < c.wave).sort(([a], [b]) => a - b)[0]
    if (earlier !== undefined) return notStarted(c, `wave ${earlier[0]} failed (${earlier[1].join(', ')})`)
    return { ...notStarted(c, ''), state: ClusterState.NoResult, message: 'no result: its job ended before reporting (see its log)' }
  })
}
