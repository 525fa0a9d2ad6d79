// The GitHub Action entry: parse settings, run one mode, report, one catch → setFailed.

import * as core from '@actions/core'
import { connect, connectObjects } from '../kube/connect.ts'
import { driftFailure, runDrift, type DriftReport } from '../modes/drift/run.ts'
import { driftHeadline, driftOutput, driftSummary } from '../modes/drift/report.ts'
import { discoverFailure, discoverHeadline, discoverSummary, findingText, runDiscover, type DiscoverReport } from '../modes/discover/run.ts'
import { ConfigurationError, messageOf } from '../lib/errors.ts'
import { createGitReader } from '../git/reader.ts'
import { createOutcomeWaiter } from '../engine/outcome.ts'
import { clusterRefused, readEvent } from '../git/range.ts'
import { runRecover } from '../modes/recover/run.ts'
import { formatDuration } from '../lib/duration.ts'
import { runWatchProcess } from '../modes/watch/process.ts'
import type { LogSink } from '../modes/watch/log.ts'
import { failureOf, headline, outputsOf, summaryMarkdown } from '../modes/trigger/report.ts'
import { cell } from '../lib/text.ts'
import type { TriggerReport } from '../engine/result.ts'
import { parseSettings, type Settings } from '../settings.ts'
import { planReport, preparePlan, runTrigger } from '../modes/trigger/pipeline.ts'
import { systemClock, type Logger } from '../engine/ports.ts'
import { logLine, plainText } from '../lib/untrusted.ts'
import { githubRunOf } from './github.ts'
import type { FleetPlan } from '../modes/fleet/fleet-plan.ts'
import { fleetPlanHeadline, fleetPlanMarkdown, fleetPlanOutputs } from '../modes/fleet/fleet-plan-report.ts'
import { fleetFailure, fleetHeadline, fleetOutput, fleetSummaryMarkdown, type FleetReport } from '../modes/fleet/fleet-summary.ts'
import { runClusterPart, runFleet, runFleetPlan, runFleetSummary } from '../modes/fleet/run.ts'
import { fleetVerdict } from '../modes/fleet/fleet-verdict.ts'
import { renderCommitOf, renderRangeOf, repositoryUrlOf } from '../modes/rendering.ts'

type Env = Readonly<Record<string, string | undefined>>

export async function run(env: Env = process.env): Promise<void> {
  try {
    const settings = parseSettings((name) => core.getInput(name))
    const log: Logger = { info: say, warning: (m) => core.warning(plainText(m)) }
    const cluster = async () => connect(settings, { env, mask: (s) => core.setSecret(s) })
    const git = () => createGitReader({ cwd: env['GITHUB_WORKSPACE'] ?? process.cwd() })
    const outcome = createOutcomeWaiter({ clock: systemClock, log })
    const eventName = env['GITHUB_EVENT_NAME'] ?? 'push'
    const event = await readEvent(env['GITHUB_EVENT_PATH'])
    // A pull request runs code and inputs of its author: only trigger's plan and discover from git may run.
    const refused = clusterRefused(eventName, event, settings.allowPullRequests)
    const noCluster = settings.mode === 'plan' || settings.mode === 'fleet-summary' || (settings.mode === 'discover' && settings.fromGit)
    if (refused !== undefined && settings.mode !== 'trigger' && !noCluster) {
      throw new ConfigurationError(`mode '${settings.mode}' needs the cluster, refused: ${refused}. Run it on push, schedule or workflow_dispatch.`)
    }
    switch (settings.mode) {
      case 'trigger': {
        const context = { eventName, event, sha: env['GITHUB_SHA'] ?? 'HEAD', runUrl: runUrl(env) }
        // One cluster's part of a fleet plan: the fleet summary is its report, not a check per cluster.
        if (settings.planFile !== undefined || settings.cluster !== undefined) {
          const { report } = await runClusterPart(settings, context, { git, connect: async () => cluster(), clock: systemClock, log, outcome })
          return await publish(report, settings, env)
        }
        if (settings.githubToken !== undefined) core.setSecret(settings.githubToken)
        const github = githubRunOf(settings, { ...context, env, log, sleep: systemClock.sleep, now: systemClock.now })
        const found = await github.start()
        let report: TriggerReport
        try {
          const reader = await git()
          const render = renderRangeOf(settings, reader, { repositoryUrl: repositoryUrlOf(env), fetchRemote: refused === undefined })
          report = await runTrigger(settings, { ...context, ...found }, { git: reader, render, connect: cluster, clock: systemClock, log, outcome })
        } catch (error) {
          await github.fail(messageOf(error))
          throw error
        }
        await publish(report, settings, env)
        return await github.finish(report)
      }
      case 'plan': {
        const context = { eventName, event, sha: env['GITHUB_SHA'] ?? 'HEAD', runUrl: runUrl(env) }
        if (settings.clusters === undefined) {
          const reader = await git()
          const render = renderRangeOf(settings, reader, { repositoryUrl: repositoryUrlOf(env), fetchRemote: false })
          return await publish(planReport(await preparePlan(settings, context, reader, render), settings, 'plan only'), settings, env)
        }
        return await publishFleetPlan(await runFleetPlan(settings, context, await git(), { repositoryUrl: repositoryUrlOf(env) }), settings, env)
      }
      case 'fleet':
      case 'fleet-summary': {
        // One check and one pull-request comment for the whole fleet, from the same report as the summary.
        const context = { eventName, event, sha: env['GITHUB_SHA'] ?? 'HEAD', runUrl: runUrl(env) }
        if (settings.githubToken !== undefined) core.setSecret(settings.githubToken)
        const github = githubRunOf(settings, { ...context, env, log, sleep: systemClock.sleep, now: systemClock.now })
        await github.start()
        let report: FleetReport
        try {
          if (settings.mode === 'fleet-summary') report = await runFleetSummary(settings)
          else {
            const connectTo = async (name: string | undefined) => connect({ ...settings, context: name }, { env, mask: (s) => core.setSecret(s) })
            report = await runFleet(settings, context, { git, connect: connectTo, clock: systemClock, log, outcome, repositoryUrl: repositoryUrlOf(env) })
          }
        } catch (error) {
          await github.fail(messageOf(error))
          throw error
        }
        await publishFleet(report, env)
        return await github.finishWith(fleetVerdict(report, context.runUrl))
      }
      case 'recover':
        return await publish(await runRecover(settings, { connect: cluster, clock: systemClock, log, outcome, runUrl: runUrl(env) }), settings, env)
      case 'discover': {
        const render = async (head: string) => renderCommitOf(settings, await git(), { repositoryUrl: repositoryUrlOf(env), fetchRemote: false })(head)
        return await publishDiscover(await runDiscover(settings, env['GITHUB_SHA'] ?? 'HEAD', { git, render, connect: cluster, log }), settings, env)
      }
      case 'drift': {
        const objects = async () => connectObjects(settings, { env, mask: (s) => core.setSecret(s) })
        return await publishDrift(await runDrift(settings, { objects, connect: cluster, clock: systemClock, log, outcome, runUrl: runUrl(env) }), env)
      }
      case 'watch': {
        const sink: LogSink = {
          write: (level, line) => (level === 'warning' ? core.warning(plainText(line)) : level === 'error' ? core.error(plainText(line)) : say(line)),
        }
        const report = await runWatchProcess(settings, { env, mask: (s) => core.setSecret(s), sink })
        const line = `watch stopped (${report.stoppedBy}) after ${formatDuration(report.durationMs)}: ${report.triggered} triggered, ${report.skipped} skipped, ${report.failed} failed, ${report.deletions} sources deleted, ${report.restarts} watch restarts`
        say(`helmrelease-trigger: ${line}`)
        if (env['GITHUB_STEP_SUMMARY']) await writeSummary(`## helmrelease-trigger: ${line}\n`)
        return
      }
    }
  } catch (error) {
    const message = messageOf(error)
    core.setFailed(plainText(message))
    // A run that never got to a report still tells the job page why (no cluster, bad input).
    if (env['GITHUB_STEP_SUMMARY'])
      await core.summary
        .addRaw(`## helmrelease-trigger: failed\n\n${cell(message)}\n`)
        .write()
        .catch(() => undefined)
  }
}

async function publish(report: TriggerReport, settings: Settings, env: Env): Promise<void> {
  for (const p of report.problems.slice(0, MAX_ANNOTATIONS)) {
    const properties = { file: p.file, ...(p.line === undefined ? {} : { startLine: p.line }), title: 'helmrelease-trigger' }
    annotate(p.severity, p.message, properties)
  }
  moreAnnotations(report.problems.length)
  const outputs = outputsOf(report)
  core.setOutput('triggered', JSON.stringify(outputs.triggered))
  core.setOutput('skipped', JSON.stringify(outputs.skipped))
  core.setOutput('failed', JSON.stringify(outputs.failed))
  core.setOutput('plan', JSON.stringify(outputs.plan))
  if (env['GITHUB_STEP_SUMMARY']) await writeSummary(summaryMarkdown(report))
  say(`helmrelease-trigger: ${headline(report)}`)
  // Why nothing was written (a fork, a pull request), when the headline counts planned releases instead.
  if (report.planOnly !== undefined && report.results.length > 0) say(report.planOnly)
  for (const r of report.results) say(`  ${r.namespace}/${r.name}: ${r.status} (${r.reason}) ${r.message}`)
  const failure = failureOf(report, settings.failOn)
  if (failure !== undefined) core.setFailed(plainText(failure))
}

async function publishDiscover(report: DiscoverReport, settings: Settings, env: Env): Promise<void> {
  for (const f of report.findings.slice(0, MAX_ANNOTATIONS)) {
    // Findings from git point at the line to fix; cluster findings name the object instead.
    const properties = {
      title: `helmrelease-trigger ${f.code}`,
      ...(f.file === undefined ? {} : { file: f.file }),
      ...(f.line === undefined ? {} : { startLine: f.line }),
    }
    annotate(f.severity, f.message, properties)
  }
  moreAnnotations(report.findings.length)
  core.setOutput('findings', JSON.stringify(report.findings))
  if (env['GITHUB_STEP_SUMMARY']) await writeSummary(discoverSummary(report))
  say(`helmrelease-trigger discover: ${discoverHeadline(report)}`)
  for (const l of report.labels) say(`  ${l.namespace}/${l.name}: label ${l.action} ${l.status}: ${l.message}`)
  for (const f of report.findings) say(`  ${f.severity}: ${findingText(f)}`)
  const failure = discoverFailure(report, settings.failOn)
  if (failure !== undefined) core.setFailed(plainText(failure))
}

async function publishDrift(report: DriftReport, env: Env): Promise<void> {
  for (const r of report.releases) {
    // An annotation per release that is not in sync: the job page lists them without opening the summary.
    if (r.state === 'Drifted') annotate('warning', `${r.namespace}/${r.name}: ${r.message}`, { title: 'helmrelease-trigger drift' })
    else if (r.state === 'Error') annotate('error', `${r.namespace}/${r.name}: ${r.message}`, { title: 'helmrelease-trigger drift' })
  }
  core.setOutput('drift', JSON.stringify(driftOutput(report)))
  if (env['GITHUB_STEP_SUMMARY']) await writeSummary(driftSummary(report))
  say(`helmrelease-trigger ${driftHeadline(report)}`)
  for (const r of report.releases) say(`  ${r.namespace}/${r.name}: ${r.state} (${r.reason}) ${r.message}`)
  const failure = driftFailure(report)
  if (failure !== undefined) core.setFailed(plainText(failure))
}

/** The only way a line reaches the log: untrusted text in it can start no workflow command. */
function say(line: string): void {
  core.info(logLine(line))
}

/** Annotations per step: GitHub shows only the first few anyway; the rest are in the summary and outputs. */
const MAX_ANNOTATIONS = 50
/** GitHub refuses a step summary over 1 MiB; stay under it with room for the closing line. */
const MAX_SUMMARY_BYTES = 1024 * 1024 - 4096

function moreAnnotations(total: number): void {
  if (total > MAX_ANNOTATIONS)
    core.notice(`…and ${total - MAX_ANNOTATIONS} more problems: see the job summary and the outputs.`, { title: 'helmrelease-trigger' })
}

/** The job summary, cut at a line when it would pass GitHub's 1 MiB limit, saying how much was left out. */
async function writeSummary(markdown: string): Promise<void> {
  let text = markdown
  if (Buffer.byteLength(text) > MAX_SUMMARY_BYTES) {
    const lines = markdown.split('\n')
    let bytes = 0
    let kept = 0
    while (kept < lines.length && bytes + Buffer.byteLength(lines[kept] ?? '') + 1 <= MAX_SUMMARY_BYTES) bytes += Buffer.byteLength(lines[kept++] ?? '') + 1
    text = `${lines.slice(0, kept).join('\n')}\n\n…and ${lines.length - kept} more lines (the summary is capped at 1 MiB; the outputs have the rest).\n`
  }
  await core.summary.addRaw(text).write()
}

/** An annotation; the toolkit escapes line breaks, we escape controls and cap the length. */
function annotate(severity: 'error' | 'warning' | 'notice', message: string, properties: core.AnnotationProperties): void {
  const text = plainText(message)
  if (severity === 'error') core.error(text, properties)
  else if (severity === 'warning') core.warning(text, properties)
  else core.notice(text, properties)
}

async function publishFleetPlan(plan: FleetPlan, settings: Settings, env: Env): Promise<void> {
  // A file shared by several clusters' trees is one annotation, not one per cluster.
  const seen = new Set<string>()
  for (const p of plan.clusters.flatMap((c) => c.plan.problems)) {
    const key = `${p.file}:${p.line ?? ''}:${p.message}`
    if (seen.has(key)) continue
    seen.add(key)
    const properties = { file: p.file, ...(p.line === undefined ? {} : { startLine: p.line }), title: 'helmrelease-trigger' }
    if (p.severity === 'error') core.error(p.message, properties)
    else if (p.severity === 'warning') core.warning(p.message, properties)
    else core.notice(p.message, properties)
  }
  for (const [name, value] of Object.entries(fleetPlanOutputs(plan))) core.setOutput(name, value)
  if (settings.planFile !== undefined) core.setOutput('plan-file', settings.planFile)
  if (env['GITHUB_STEP_SUMMARY']) await writeSummary(fleetPlanMarkdown(plan))
  core.info(`helmrelease-trigger ${fleetPlanHeadline(plan)}`)
  const failing = plan.clusters
    .flatMap((c) => c.plan.problems)
    .filter((p) => p.severity === 'error' || (settings.failOn === 'warning' && p.severity === 'warning'))
  const errors = [...new Set(failing.map((p) => `${p.file}:${p.line ?? ''}:${p.message}`))]
  if (settings.failOn !== 'never' && errors.length > 0)
    core.setFailed(`${errors.length} manifest problem${errors.length === 1 ? '' : 's'} (fail-on: ${settings.failOn}); see the annotations.`)
}

async function publishFleet(report: FleetReport, env: Env): Promise<void> {
  core.setOutput('fleet', JSON.stringify(fleetOutput(report)))
  if (env['GITHUB_STEP_SUMMARY']) await writeSummary(fleetSummaryMarkdown(report))
  core.info(`helmrelease-trigger ${fleetHeadline(report)}`)
  for (const c of report.clusters) {
    core.info(`  ${c.cluster} (wave ${c.wave}): ${c.state}${c.message === undefined ? '' : ` ${c.message}`}`)
    for (const r of c.results) core.info(`    ${r.namespace}/${r.name}: ${r.status} (${r.reason}) ${r.message}`)
  }
  const failure = fleetFailure(report)
  if (failure !== undefined) core.setFailed(failure)
}

function runUrl(env: Env): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: id } = env
  return server && repo && id ? `${server}/${repo}/actions/runs/${id}` : undefined
}
