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
import { clusterErrorOf, readResultFile, writeResultFile, type ClusterResult } from './fleet-result.ts'
import type { FleetReport } from './fleet-summary.ts'
import { gatherResults, runRollout } from './rollout.ts'

export interface FleetDeps {
  readonly git: () => Promise<GitReader>
  /** Connects to one cluster; `context` undefined: the kubeconfig's current context. */
  readonly connect: (context: string | undefined) => Promise<ClusterClient>
  readonly clock: Clock
  readonly log: Logger
  readonly outcome?: OutcomeWaiter
  /** Takes out of a text the secrets the log masks, before it leaves the job in a result file. */
  readonly redact?: (text: string) => string
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

/**
 * `trigger --cluster NAME --plan FILE`: that cluster's part only, with the plan's digests. With a
 * result file, whatever fails writes a Failed result naming the error before it is thrown: the
 * fleet summary says why the cluster failed, not that its job ended without a word.
 */
export async function runClusterPart(settings: Settings, context: RunContext, deps: FleetDeps): Promise<ExecutedPart> {
  const { planFile, cluster, resultFile } = settings
  if (planFile === undefined || cluster === undefined) {
    throw new ConfigurationError(`A cluster's part needs both the plan file and the cluster: give plan-file and cluster (--plan FILE --cluster NAME).`)
  }
  const started = deps.clock.now()
  // Until the plan is read the wave is unknown; the summary takes it from the plan anyway.
  let wave = 0
  let executed: ExecutedPart
  try {
    const plan = await loadPlan(planFile)
    const part = clusterPart(plan, cluster)
    wave = part.wave
    executed = await executeClusterPart(plan, part, settings, context, { ...deps, connect: () => deps.connect(settings.context) })
  } catch (error) {
    if (resultFile !== undefined) {
      const failed = clusterErrorOf({ name: cluster, wave }, (deps.redact ?? String)(messageOf(error)), deps.clock.now() - started)
      await writeText(resultFile, writeResultFile(failed), 'result file').catch((e: unknown) => deps.log.warning(messageOf(e)))
    }
    throw error
  }
  if (resultFile !== undefined) await writeText(resultFile, writeResultFile(executed.result), 'result file')
  return executed
}

/**
 * The Failed result of a cluster job that ended before its part ran (an input it could not read):
 * written only where no result is yet, so a part's own result is never replaced.
 */
export async function writeUnreportedResult(file: string, cluster: string, message: string): Promise<void> {
  const text = writeResultFile(clusterErrorOf({ name: cluster, wave: 0 }, message, 0))
  try {
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, text, { flag: 'wx' })
  } catch (error) {
    if (!(typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST')) throw error
  }
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
