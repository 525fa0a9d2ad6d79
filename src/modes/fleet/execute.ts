// One cluster's part of a fleet plan, executed as trigger mode does from step 3 on: the plan's
// sources, digests and releases as they were planned, never planned again.

import type { ClusterClient } from '../../kube/cluster.ts'
import type { GitReader } from '../../git/reader.ts'
import { pathFilter } from '../../core/plan.ts'
import { ConfigurationError } from '../../lib/errors.ts'
import type { TriggerReport } from '../../engine/result.ts'
import type { Settings } from '../../settings.ts'
import type { Logger } from '../../engine/ports.ts'
import { executePlan, type RunContext, type TriggerDeps } from '../trigger/pipeline.ts'
import { clusterResultOf, type ClusterResult } from './fleet-result.ts'
import type { ClusterPlan, FleetPlan } from './fleet-plan.ts'

export interface ClusterDeps extends Omit<TriggerDeps, 'git' | 'connect'> {
  /** Read only with apply: true, for the sources' manifests at the plan's head. */
  readonly git: () => Promise<GitReader>
  readonly connect: (cluster: ClusterPlan) => Promise<ClusterClient>
}

/** The settings a cluster's part runs with: the plan's own options win, so the digests mean what they meant. */
export function settingsForPart(settings: Settings, plan: FleetPlan, part: ClusterPlan, log: Logger): Settings {
  const o = plan.options
  const differs = settings.annotationPrefix !== o.prefix || settings.semanticDigest !== o.semanticDigest || settings.discover !== o.discover
  if (differs) log.info(`using the plan file's annotation-prefix (${o.prefix}), semantic-digest (${o.semanticDigest}) and discover (${o.discover})`)
  return {
    ...settings,
    annotationPrefix: o.prefix,
    semanticDigest: o.semanticDigest,
    discover: o.discover,
    defaultNamespace: o.defaultNamespace,
    paths: part.paths,
  }
}

export interface ExecutedPart {
  readonly report: TriggerReport
  readonly result: ClusterResult
}

export async function executeClusterPart(
  plan: FleetPlan,
  part: ClusterPlan,
  settings: Settings,
  context: RunContext,
  deps: ClusterDeps,
): Promise<ExecutedPart> {
  const started = deps.clock.now()
  const s = settingsForPart(settings, plan, part, deps.log)
  if (s.apply && part.rendered === true) {
    // The plan file holds digests, not the rendered objects (a Secret's values never go into it).
    throw new ConfigurationError(
      `Cluster ${part.name}'s part was planned on its root rendered by kustomize, and apply: true cannot apply rendered objects from a plan file: let kustomize-controller apply them (the run waits for it), or run trigger with cluster-root ${part.root} on that cluster.`,
    )
  }
  const headFiles = s.apply ? await (await deps.git()).headFiles(plan.range.head, pathFilter(part.paths)) : []
  const prepared = { range: plan.range, plan: part.plan, headFiles, ...(part.renderedReleases === undefined ? {} : { knownReleases: part.renderedReleases }) }
  const report = await executePlan(prepared, s, context, { ...deps, connect: () => deps.connect(part) })
  return { report, result: clusterResultOf(part, report, s.failOn, deps.clock.now() - started) }
}
