// The GitHub Action entry: parse settings, refuse what a pull request may not run, run one mode
// from the table, publish its result; one catch → setFailed.

import * as core from '@actions/core'
import { ConfigurationError, messageOf } from '../lib/errors.ts'
import { createGitReader } from '../git/reader.ts'
import { readEvent } from '../github/event.ts'
import { clusterRefused } from '../github/policy.ts'
import { parseSettings } from '../settings.ts'
import type { RunContext } from '../modes/trigger/pipeline.ts'
import type { Logger } from '../engine/ports.ts'
import { plainText, withoutSecrets } from '../lib/untrusted.ts'
import { createSandbox, type Sandbox } from '../sandbox/sandbox.ts'
import { writeUnreportedResult } from '../modes/fleet/run.ts'
import { MODES } from './modes.ts'
import type { EntryPorts } from './entry-ports.ts'
import { publish, publishError, say } from './publish.ts'

type Env = Readonly<Record<string, string | undefined>>

export async function run(env: Env = process.env): Promise<void> {
  let sandbox: Sandbox | undefined
  try {
    const settings = parseSettings((name) => core.getInput(name))
    const log: Logger = { info: say, warning: (m) => core.warning(plainText(m)) }
    for (const deprecation of settings.deprecations) log.warning(deprecation)
    const eventName = env['GITHUB_EVENT_NAME'] ?? 'push'
    const event = await readEvent(env['GITHUB_EVENT_PATH'])
    // A pull request runs code and inputs of its author: only trigger's plan and discover from git may run.
    const refused = clusterRefused(eventName, event, settings.allowPullRequests)
    const noCluster = settings.mode === 'plan' || settings.mode === 'fleet-summary' || (settings.mode === 'discover' && settings.fromGit)
    if (refused !== undefined && settings.mode !== 'trigger' && !noCluster) {
      throw new ConfigurationError(`mode '${settings.mode}' needs the cluster, refused: ${refused}. Run it on push, schedule or workflow_dispatch.`)
    }
    const context: RunContext = { eventName, event, sha: env['GITHUB_SHA'] ?? 'HEAD', runUrl: runUrl(env), refused }
    sandbox = createSandbox()
    const ports: EntryPorts = {
      sandbox,
      env,
      githubEnv: env,
      mask: (s) => core.setSecret(s),
      log,
      git: () => createGitReader({ cwd: env['GITHUB_WORKSPACE'] ?? process.cwd() }),
      context,
      contextAt: async () => context,
      watchSink: {
        write: (level, line) => (level === 'warning' ? core.warning(plainText(line)) : level === 'error' ? core.error(plainText(line)) : say(line)),
      },
    }
    await publish(await MODES[settings.mode].run(settings, ports), env)
  } catch (error) {
    await unreported(messageOf(error))
    await publishError(messageOf(error), env)
  } finally {
    await sandbox?.close()
  }
}

/**
 * A fleet's cluster job that failed before its part ran (an input it could not read) still leaves
 * its Failed result, so the fleet summary says why. A result already written is kept.
 */
async function unreported(message: string): Promise<void> {
  const file = core.getInput('result-file')
  const cluster = core.getInput('cluster')
  if (file === '' || cluster === '') return
  const secrets = [core.getInput('kubeconfig'), core.getInput('github-token')]
  await writeUnreportedResult(file, cluster, withoutSecrets(message, secrets)).catch((error: unknown) =>
    core.warning(plainText(`Cannot write the result file ${file}: ${messageOf(error)}.`)),
  )
}

function runUrl(env: Env): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: id } = env
  return server && repo && id ? `${server}/${repo}/actions/runs/${id}` : undefined
}
