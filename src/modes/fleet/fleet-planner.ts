// Plan once for the fleet: the commit's range, its files read once, then each cluster's part
// planned over what that cluster applies. Where a cluster's root declares Flux Kustomizations,
// its part is planned on the root rendered as Flux applies it (src/render, from the root), the
// renders sharing one cache so a Kustomization several roots apply is built once; a root without
// Flux Kustomizations is planned file by file over its tree (scope.ts).

import { availableParallelism } from 'node:os'
import type { ClusterSpec } from '../../core/cluster-list.ts'
import { mapLimit } from '../../lib/concurrency.ts'
import { ConfigurationError } from '../../lib/errors.ts'
import type { GitReader } from '../../git/reader.ts'
import type { Range } from '../../git/range.ts'
import type { FileChange, HeadFile, Plan } from '../../core/model.ts'
import { parseInParallel } from '../../git/parse-pool.ts'
import { pathFilter, planChanges, type PlanOptions } from '../../core/plan.ts'
import { planRendered, renderedReleaseKeys } from '../../core/plan-rendered.ts'
import type { RenderedRepository } from '../../core/rendered.ts'
import { RenderCache } from '../../render/render-change.ts'
import type { Settings } from '../../settings.ts'
import { clusterRendererOf, type ClusterRenderer, type RenderingOptions } from '../rendering.ts'
import { planOptionsOf, rangeOf, type RunContext } from '../trigger/pipeline.ts'
import { assignWaves, discoverClusters, fluxKustomizations } from './clusters.ts'
import type { ClusterPlan, FleetPlan } from './fleet-plan.ts'
import { clusterPaths, within } from './scope.ts'

/** One cluster's part of the commit. */
export interface ClusterPlanner {
  plan(cluster: ClusterSpec): Promise<Pick<ClusterPlan, 'paths' | 'plan' | 'rendered' | 'renderedReleases'>>
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

/**
 * Each cluster's root rendered as Flux applies it, at base and head, and planned on the rendered
 * objects: the releases whose read keys changed on that cluster and those whose spec changed,
 * each naming the file and line edited. A root declaring no Flux Kustomization, or applying
 * nothing of this repository, goes to `fallback` (parsed only when a root needs it).
 */
export function renderingPlanner(view: RepositoryView, range: Range, render: ClusterRenderer, fallback: () => Promise<ClusterPlanner>): ClusterPlanner {
  return {
    async plan(cluster) {
      const declares = view.headFiles.some((f) => within(f.path, cluster.root) && fluxKustomizations(f).length > 0)
      const rendered = declares ? await render(range, cluster.root) : undefined
      if (rendered === undefined || rendered.head.kustomizations.length === 0) return (await fallback()).plan(cluster)
      const plan = planRendered({ base: rendered.base, head: rendered.head, fullSync: view.fullSync, options: view.options })
      return {
        paths: clusterPaths(cluster.root, view.headFiles),
        plan: namingCluster(plan, rendered.head, cluster.name),
        rendered: true,
        renderedReleases: [...renderedReleaseKeys(rendered.head)].sort(),
      }
    },
  }
}

/** A Kustomization that did not render is one problem per cluster: the annotation says which cluster. */
function namingCluster(plan: Plan, head: RenderedRepository, cluster: string): Plan {
  const prefixes = head.problems.map((p) => `Flux Kustomization ${p.kustomization} (${p.path}) could not be rendered: `)
  if (prefixes.length === 0) return plan
  return {
    ...plan,
    problems: plan.problems.map((p) => (prefixes.some((prefix) => p.message.startsWith(prefix)) ? { ...p, message: `Cluster ${cluster}: ${p.message}` } : p)),
  }
}

export async function planFleet(settings: Settings, context: RunContext, git: GitReader, rendering: RenderingOptions): Promise<FleetPlan> {
  if (settings.clusters === undefined) throw new ConfigurationError(`Input 'clusters' is empty: list the clusters (name=path, one per line) or say discover.`)
  const range = await rangeOf(settings, context, git)
  const filter = pathFilter(settings.paths)
  const { changes, headFiles } = await git.changeAndHead({ base: range.base, head: range.head, filter, withChanges: !range.fullSync })
  const specs = settings.clusters.kind === 'discover' ? discoverClusters(headFiles) : settings.clusters.clusters
  if (specs.length === 0) {
    throw new ConfigurationError(
      `No cluster found: no clusters/<name> directory holds a Flux Kustomization at ${range.head.slice(0, 12)}; list them in input 'clusters' (name=path, one per line).`,
    )
  }
  const targets = assignWaves(specs, settings.waves)
  const options = planOptionsOf(settings)
  const view = { changes, headFiles, fullSync: range.fullSync, options }
  let scoped: Promise<ClusterPlanner> | undefined
  const cache = new RenderCache()
  try {
    const render = clusterRendererOf(settings, git, { ...rendering, cache })
    const planner = renderingPlanner(view, range, render, () => (scoped ??= scopedPlanner(view)))
    // A root's chain is often one Kustomization deep per level: the roots side by side keep the cores busy.
    const clusters: ClusterPlan[] = await mapLimit(targets, Math.max(1, availableParallelism()), async (target) => ({
      ...target,
      ...(await planner.plan(target)),
    }))
    return { range, options, waves: Math.max(1, settings.waves.length), clusters }
  } finally {
    await cache.close()
  }
}
