// Every command of the CLI but `watch`, loaded by cli.ts once it knows the command is not
// `watch`: the watch process, which runs for days, then never evaluates (nor holds in memory)
// the GitHub client, git, rendering, fleet, drift and discover code. In the bundle this file's
// imports are initialised on the first import() only.

import type { FleetReport } from '../modes/fleet/fleet-summary.ts'
import { fleetFailure, fleetOutput, fleetText } from '../modes/fleet/fleet-summary.ts'
import type { TriggerReport } from '../engine/result.ts'
import { jsonText, logText } from '../lib/untrusted.ts'
import { outputsOf, textReport } from '../modes/trigger/report.ts'

export { connect, connectObjects } from '../kube/connect.ts'
export { driftFailure, runDrift } from '../modes/drift/run.ts'
export { driftOutput, driftText } from '../modes/drift/report.ts'
export { createGitReader } from '../git/reader.ts'
export { createOutcomeWaiter } from '../engine/outcome.ts'
export { discoverFailure, discoverText, runDiscover } from '../modes/discover/run.ts'
export { runRecover } from '../modes/recover/run.ts'
export { failureOf } from '../modes/trigger/report.ts'
export { planReport, preparePlan, runTrigger } from '../modes/trigger/pipeline.ts'
export { renderCommitOf, renderRangeOf, repositoryUrlOf } from '../modes/rendering.ts'
export { githubRunOf } from './github.ts'
export { fleetPlanOutputs, fleetPlanText } from '../modes/fleet/fleet-plan-report.ts'
export { runClusterPart, runFleet, runFleetPlan, runFleetSummary } from '../modes/fleet/run.ts'
export { fleetVerdict } from '../modes/fleet/fleet-verdict.ts'

/** A trigger report as printed: the outputs as JSON, or the text. */
export function reportText(report: TriggerReport, json: boolean): string {
  return json ? `${jsonText(outputsOf(report), 2)}\n` : logText(textReport(report))
}

/** A fleet report as printed, and its failure per fail-on. */
export function fleetReportText(report: FleetReport, json: boolean): { readonly text: string; readonly failure: string | undefined } {
  return { text: json ? `${jsonText(fleetOutput(report), 2)}\n` : logText(fleetText(report)), failure: fleetFailure(report) }
}
