// Fleet mode's wiring: plan once and save the plan; execute one cluster's part of a saved plan;
// roll the whole fleet out over kubeconfig contexts; gather the matrix jobs' results. The
// decisions live in fleet-plan.ts, rollout.ts and fleet-result.ts; this file reads and writes.

import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ConfigurationError, messageOf } from '../../lib/errors.ts'
import type { GitReader } from '../../git/reader.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import type { Settings } from '../../settings.ts'
import type { OutcomeWaiter } from '../../engine/outcome.ts'
import type { Clock, Logger } from '../../engine/ports.ts'
import type { RunContext } from '../trigger/pipeline.ts'
import { executeClusterPart, type ExecutedPart } from './execute.ts'
import { clusterPart, readPlanFile, writePlanFile, type ClusterPlan, type FleetPlan } from './fleet-plan.ts'
import { planFleet } from './fleet-planner.ts'
import type { RenderingOptions } from '../rendering.ts'
import { readResultFile, writeResultFile, type ClusterResult } from './fleet-result.ts'
import type { FleetReport } from './fleet-summary.ts'
import { gatherResults, runRollout } from './rollout.ts'

export interface FleetDeps {
  readonly git: () => Promise<GitReader>
  /** Connects to one cluster; `context` undefined: the kubeconfig's current context. */
  readonly connect: (context: string | undefined) => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  readonly outcome?: OutcomeWaiter
}

/** Plans the fleet and, with plan-file, saves it. */
export async function runFleetPlan(settings: Settings, context: RunContext, git: GitReader, rendering: RenderingOptions): Promise<FleetPlan> {
  const plan = await planFleet(settings, context, git, rendering)
  if (settings.planFile !== undefined) await writeText(settings.planFile, writePlanFile(plan), 'plan file')
  return plan
}

export async function loadPlan(file: string): Promise<FleetPlan> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new ConfigurationError(`Cannot read the plan file ${file}: ${messageOf(error)}; download the plan job's artifact first, or plan with --plan ${file}.`)
  }
  return readPlanFile(text, file)
}

/** `trigger --cluster NAME --plan FILE`: that cluster's part only, with the plan's digests. */
export async function runClusterPart(settings: Settings, context: RunContext, deps: FleetDeps): Promise<ExecutedPart> {
  if (settings.planFile === undefined || settings.cluster === undefined) {
    throw new ConfigurationError(`A cluster's part needs both the plan file and the cluster: give plan-file and cluster (--plan FILE --cluster NAME).`)
  }
  const plan = await loadPlan(settings.planFile)
  const part = clusterPart(plan, settings.cluster)
  const executed = await executeClusterPart(plan, part, settings, context, { ...deps, connect: () => deps.connect(settings.context) })
  if (settings.resultFile !== undefined) await writeText(settings.resultFile, writeResultFile(executed.result), 'result file')
  return executed
}

/** `fleet`: plan once (or read the plan file), then every cluster with work over its kubeconfig context, wave by wave. */
export async function runFleet(settings: Settings, context: RunContext, deps: FleetDeps & RenderingOptions): Promise<FleetReport> {
  const plan =
    settings.planFile !== undefined && settings.clusters === undefined
      ? await loadPlan(settings.planFile)
      : await runFleetPlan(settings, context, await deps.git(), { env: deps.env, sandbox: deps.sandbox })
  const contextOf = (cluster: ClusterPlan) => settings.clusterContexts.get(cluster.name) ?? cluster.name
  const clusters = await runRollout(
    plan,
    async (cluster) =>
      (
        await executeClusterPart(plan, cluster, settings, context, {
          ...deps,
          log: prefixed(deps.log, cluster.name),
          connect: () => deps.connect(contextOf(cluster)),
        })
      ).result,
    { maxParallel: settings.maxParallel, now: () => deps.clock.now(), onEvent: (line) => deps.log.info(line) },
  )
  return { plan, clusters }
}

/** `fleet-summary`: the plan and every result file in the results directory, as one fleet. */
export async function runFleetSummary(settings: Settings): Promise<FleetReport> {
  if (settings.planFile === undefined || settings.resultsDir === undefined) {
    throw new ConfigurationError(`fleet-summary needs the plan file and the directory of the clusters' results: give plan-file and results.`)
  }
  const plan = await loadPlan(settings.planFile)
  const files = await readdir(settings.resultsDir, { recursive: true }).catch(() => [] as string[])
  const found: ClusterResult[] = []
  for (const file of files.filter((f) => f.endsWith('.json')).sort()) {
    const path = join(settings.resultsDir, file)
    found.push(readResultFile(await readFile(path, 'utf8'), path))
  }
  return { plan, clusters: gatherResults(plan, found) }
}

function prefixed(log: Logger, cluster: string): Logger {
  return { info: (m) => log.info(`${cluster}: ${m}`), warning: (m) => log.warning(`${cluster}: ${m}`) }
}

async function writeText(file: string, text: string, what: string): Promise<void> {
  try {
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, text)
  } catch (error) {
    throw new ConfigurationError(`Cannot write the ${what} ${file}: ${messageOf(error)}.`)
  }
}
