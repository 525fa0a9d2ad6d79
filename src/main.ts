// The GitHub Action entry: parse settings, run one mode, report, one catch → setFailed.

import * as core from '@actions/core'
import { connect } from './connect.ts'
import { discoverFailure, discoverHeadline, discoverSummary, findingText, runDiscover, type DiscoverReport } from './discover.ts'
import { ConfigurationError, messageOf } from './errors.ts'
import { createGitReader } from './git.ts'
import { createOutcomeWaiter } from './outcome.ts'
import { readEvent } from './range.ts'
import { runRecover } from './recover.ts'
import { cell, failureOf, headline, outputsOf, summaryMarkdown } from './report.ts'
import type { TriggerReport } from './result.ts'
import { parseSettings, type Settings } from './settings.ts'
import { runTrigger, systemClock, type Logger } from './trigger.ts'

type Env = Readonly<Record<string, string | undefined>>

export async function run(env: Env = process.env): Promise<void> {
  try {
    const settings = parseSettings((name) => core.getInput(name))
    const log: Logger = { info: (m) => core.info(m), warning: (m) => core.warning(m) }
    const cluster = async () => connect(settings, { env, mask: (s) => core.setSecret(s) })
    const git = () => createGitReader({ cwd: env['GITHUB_WORKSPACE'] ?? process.cwd() })
    const outcome = createOutcomeWaiter({ clock: systemClock, log })
    switch (settings.mode) {
      case 'trigger': {
        const context = { eventName: env['GITHUB_EVENT_NAME'] ?? 'push', event: await readEvent(env['GITHUB_EVENT_PATH']), sha: env['GITHUB_SHA'] ?? 'HEAD', runUrl: runUrl(env) }
        return await publish(await runTrigger(settings, context, { git: await git(), connect: cluster, clock: systemClock, log, outcome }), settings, env)
      }
      case 'recover':
        return await publish(await runRecover(settings, { connect: cluster, clock: systemClock, log, outcome, runUrl: runUrl(env) }), settings, env)
      case 'discover':
        return await publishDiscover(await runDiscover(settings, env['GITHUB_SHA'] ?? 'HEAD', { git, connect: cluster, log }), settings, env)
      case 'watch':
      case 'drift':
        throw new ConfigurationError(`mode '${settings.mode}' is not available in this version of helmrelease-trigger; use trigger, discover or recover.`)
    }
  } catch (error) {
    const message = messageOf(error)
    core.setFailed(message)
    // A run that never got to a report still tells the job page why (no cluster, bad input).
    if (env['GITHUB_STEP_SUMMARY']) await core.summary.addRaw(`## helmrelease-trigger: failed\n\n${cell(message)}\n`).write().catch(() => undefined)
  }
}

async function publish(report: TriggerReport, settings: Settings, env: Env): Promise<void> {
  for (const p of report.problems) {
    const properties = { file: p.file, ...(p.line === undefined ? {} : { startLine: p.line }), title: 'helmrelease-trigger' }
    if (p.severity === 'error') core.error(p.message, properties)
    else if (p.severity === 'warning') core.warning(p.message, properties)
    else core.notice(p.message, properties)
  }
  const outputs = outputsOf(report)
  core.setOutput('triggered', JSON.stringify(outputs.triggered))
  core.setOutput('skipped', JSON.stringify(outputs.skipped))
  core.setOutput('failed', JSON.stringify(outputs.failed))
  core.setOutput('plan', JSON.stringify(outputs.plan))
  if (env['GITHUB_STEP_SUMMARY']) await core.summary.addRaw(summaryMarkdown(report)).write()
  core.info(`helmrelease-trigger: ${headline(report)}`)
  for (const r of report.results) core.info(`  ${r.namespace}/${r.name}: ${r.status} (${r.reason}) ${r.message}`)
  const failure = failureOf(report, settings.failOn)
  if (failure !== undefined) core.setFailed(failure)
}

async function publishDiscover(report: DiscoverReport, settings: Settings, env: Env): Promise<void> {
  for (const f of report.findings) {
    // Findings from git point at the line to fix; cluster findings name the object instead.
    const properties = { title: `helmrelease-trigger ${f.code}`, ...(f.file === undefined ? {} : { file: f.file }), ...(f.line === undefined ? {} : { startLine: f.line }) }
    if (f.severity === 'error') core.error(f.message, properties)
    else if (f.severity === 'warning') core.warning(f.message, properties)
    else core.notice(f.message, properties)
  }
  core.setOutput('findings', JSON.stringify(report.findings))
  if (env['GITHUB_STEP_SUMMARY']) await core.summary.addRaw(discoverSummary(report)).write()
  core.info(`helmrelease-trigger discover: ${discoverHeadline(report)}`)
  for (const l of report.labels) core.info(`  ${l.namespace}/${l.name}: label ${l.action} ${l.status}: ${l.message}`)
  for (const f of report.findings) core.info(`  ${f.severity}: ${findingText(f)}`)
  const failure = discoverFailure(report, settings.failOn)
  if (failure !== undefined) core.setFailed(failure)
}

function runUrl(env: Env): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: id } = env
  return server && repo && id ? `${server}/${repo}/actions/runs/${id}` : undefined
}
