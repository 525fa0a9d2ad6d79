// Plan once for the fleet: the commit's range, its files read once, then each cluster's part
// planned over what that cluster reads. ClusterPlanner is the seam where a cluster's root
// selects its releases: today the file-by-file planner over the cluster's tree (scope.ts);
// rendering each root as Flux applies it plugs in here.

import type { ClusterSpec } from '../../core/cluster-list.ts'
import { ConfigurationError } from '../../lib/errors.ts'
import type { GitReader } from '../../git/reader.ts'
import type { FileChange, HeadFile, Plan } from '../../core/model.ts'
import { parseInParallel } from '../../git/parse-pool.ts'
import { pathFilter, planChanges, type PlanOptions } from '../../core/plan.ts'
import type { Settings } from '../../settings.ts'
import { planOptionsOf, rangeOf, type RunContext } from '../trigger/pipeline.ts'
import { assignWaves, discoverClusters } from './clusters.ts'
import type { ClusterPlan, FleetPlan } from './fleet-plan.ts'
import { clusterPaths } from './scope.ts'

/**
 * One cluster's part of the commit. Asynchronous so that a planner which renders the cluster's
 * root with kustomize (src/render, cluster-root) can take this place without changing the callers.
 */
export interface ClusterPlanner {
  plan(cluster: ClusterSpec): Promise<{ readonly paths: readonly string[]; readonly plan: Plan }>
}

export interface RepositoryView {
  readonly changes: readonly FileChange[]
  readonly headFiles: readonly HeadFile[]
  readonly fullSync: boolean
  readonly options: PlanOptions
}

/** The file-by-file planner scoped to each cluster's tree; the files are parsed once for all clusters. */
export async function scopedPlanner(view: RepositoryView): Promise<ClusterPlanner> {
  const parsed = await parseInParallel(view)
  return {
    async plan(cluster) {
      const paths = clusterPaths(cluster.root, view.headFiles)
      const plan = planChanges({ ...view, options: { ...view.options, paths }, parsed })
      return { paths, plan }
    },
  }
}

export async function planFleet(settings: Settings, context: RunContext, git: GitReader): Promise<FleetPlan> {
  if (settings.clusters === undefined) throw new ConfigurationError(`Input 'clusters' is empty: list the clusters (name=path, one per line) or say discover.`)
  const range = await rangeOf(settings, context, git)
  const filter = pathFilter(settings.paths)
  const [changes, headFiles] = await Promise.all([
    range.fullSync ? Promise.resolve([]) : git.changedFiles(range.base, range.head, filter),
    git.headFiles(range.head, filter),
  ])
  const specs = settings.clusters.kind === 'discover' ? discoverClusters(headFiles) : settings.clusters.clusters
  if (specs.length === 0) {
    throw new ConfigurationError(
      `No cluster found: no clusters/<name> directory holds a Flux Kustomization at ${range.head.slice(0, 12)}; list them in input 'clusters' (name=path, one per line).`,
    )
  }
  const targets = assignWaves(specs, settings.waves)
  const options = planOptionsOf(settings)
  const planner = await scopedPlanner({ changes, headFiles, fullSync: range.fullSync, options })
  // One after another: a rendering planner runs kustomize per cluster, and the machine may be small.
  const clusters: ClusterPlan[] = []
  for (const target of targets) clusters.push({ ...target, ...(await planner.plan(target)) })
  return { range, options, waves: Math.max(1, settings.waves.length), clusters }
}
