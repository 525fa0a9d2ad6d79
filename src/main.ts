// The GitHub Action entry: parse settings, run one mode, report, one catch → setFailed.

import * as core from '@actions/core'
import { connect } from './connect.ts'
import { ConfigurationError, messageOf } from './errors.ts'
import { createGitReader } from './git.ts'
import { createOutcomeWaiter } from './outcome.ts'
import { readEvent } from './range.ts'
import { failureOf, headline, outputsOf, summaryMarkdown } from './report.ts'
import { parseSettings } from './settings.ts'
import { runTrigger, systemClock, type Logger } from './trigger.ts'

export async function run(env: Readonly<Record<string, string | undefined>> = process.env): Promise<void> {
  try {
    const settings = parseSettings((name) => core.getInput(name))
    if (settings.mode !== 'trigger') {
      throw new ConfigurationError(`mode '${settings.mode}' is not available in this version of helmrelease-trigger; use mode: trigger.`)
    }
    const log: Logger = { info: (m) => core.info(m), warning: (m) => core.warning(m) }
    const git = await createGitReader({ cwd: env['GITHUB_WORKSPACE'] ?? process.cwd() })
    const context = {
      eventName: env['GITHUB_EVENT_NAME'] ?? 'push',
      event: await readEvent(env['GITHUB_EVENT_PATH']),
      sha: env['GITHUB_SHA'] ?? 'HEAD',
      runUrl: runUrl(env),
    }
    const report = await runTrigger(settings, context, {
      git,
      connect: async () => connect(settings, { env, mask: (s) => core.setSecret(s) }),
      clock: systemClock,
      log,
      outcome: createOutcomeWaiter({ clock: systemClock, log }),
    })

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
  } catch (error) {
    core.setFailed(messageOf(error))
  }
}

function runUrl(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: id } = env
  return server && repo && id ? `${server}/${repo}/actions/runs/${id}` : undefined
}

