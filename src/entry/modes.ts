// The table of modes the action and the CLI run. Each row wires its mode from the entry's ports
// (what differs between the action and the CLI) and returns the one ModeResult that
// publish.ts publishes and the CLI prints.

import { connect, connectObjects } from '../kube/connect.ts'
import type { ClusterClient } from '../kube/cluster.ts'
import { createOutcomeWaiter } from '../engine/outcome.ts'
import { systemClock } from '../engine/ports.ts'
import { messageOf } from '../lib/errors.ts'
import { withoutSecrets } from '../lib/untrusted.ts'
import type { ModeName } from '../modes/mode.ts'
import type { EntryMode, EntryPorts } from './entry-ports.ts'
import { watch } from './watch-mode.ts'
import { runDiscover } from '../modes/discover/run.ts'
import { discoverResult } from '../modes/discover/report.ts'
import { runDrift } from '../modes/drift/run.ts'
import { driftResult } from '../modes/drift/report.ts'
import { fleetPlanResult } from '../modes/fleet/fleet-plan-report.ts'
import { fleetResult } from '../modes/fleet/fleet-summary.ts'
import { fleetVerdict } from '../modes/fleet/fleet-verdict.ts'
import { runClusterPart, runFleet, runFleetPlan, runFleetSummary } from '../modes/fleet/run.ts'
import { runRecover } from '../modes/recover/run.ts'
import { renderCommitOf, renderRangeOf } from '../modes/rendering.ts'
import { planReport, preparePlan, runTrigger, type RunContext } from '../modes/trigger/pipeline.ts'
import { triggerResult } from '../modes/trigger/report.ts'
import { predictorOf } from '../modes/trigger/predict.ts'
import { PULL_REQUEST_EVENTS } from '../core/pull-request.ts'
import { discoverOptionsOf, triggerRunOptionsOf, type Settings } from '../settings.ts'
import { githubRunOf, type GitHubRun } from './github.ts'

const trigger: EntryMode = {
  name: 'trigger',
  async run(settings, ports) {
    const deps = { clock: systemClock, log: ports.log, outcome: createOutcomeWaiter({ clock: systemClock, log: ports.log }) }
    // One cluster's part of a fleet plan: the fleet summary is its report, not a check per cluster.
    if (settings.planFile !== undefined || settings.cluster !== undefined) {
      // The result file leaves the job, where no mask applies: what the log masks is taken out of it.
      const masked: string[] = [settings.kubeconfig ?? '', settings.githubToken ?? '']
      const mask = (secret: string): void => {
        masked.push(secret)
        ports.mask(secret)
      }
      const { report } = await runClusterPart(settings, ports.context, {
        ...deps,
        git: ports.git,
        connect: clusterIn(settings, { ...ports, mask }),
        redact: (text) => withoutSecrets(text, masked),
      })
      return triggerResult(report, settings.failOn)
    }
    const context = await ports.contextAt(ports.git)
    const github = githubOf(settings, context, ports)
    const found = await github.start()
    const report = await failingCheck(github, async () => {
      const git = await ports.git()
      const run = { ...context, ...found }
      // A plan-only run (a pull request) with the diff on renders every Kustomization: a release's chart source may sit in one the range left untouched.
      const diff = settings.diff && run.refused !== undefined
      const render = renderRangeOf(settings, git, { env: ports.githubEnv, sandbox: ports.sandbox, ...(diff ? { scope: 'all' as const } : {}) })
      const predict = diff ? predictorOf(settings, git, ports.sandbox, PULL_REQUEST_EVENTS.has(run.eventName)) : undefined
      return runTrigger(triggerRunOptionsOf(settings), run, {
        ...deps,
        git,
        render,
        connect: clusterOf(settings, ports),
        ...(predict === undefined ? {} : { predict }),
      })
    })
    await github.finish(report)
    return triggerResult(report, settings.failOn)
  },
}

const plan: EntryMode = {
  name: 'plan',
  async run(settings, ports) {
    const git = await ports.git()
    const context = await ports.contextAt(async () => git)
    if (settings.clusters !== undefined)
      return fleetPlanResult(await runFleetPlan(settings, context, git, { env: ports.githubEnv, sandbox: ports.sandbox }), settings)
    const render = renderRangeOf(settings, git, { env: ports.githubEnv, sandbox: ports.sandbox, ...(settings.diff ? { scope: 'all' as const } : {}) })
    const options = triggerRunOptionsOf(settings)
    const prepared = await preparePlan(options, context, git, render)
    const predicted = settings.diff ? await predictorOf(settings, git, ports.sandbox, PULL_REQUEST_EVENTS.has(context.eventName))(prepared) : undefined
    return triggerResult(planReport(prepared, options, 'plan only', predicted), settings.failOn)
  },
}

/** fleet and fleet-summary: one check and one pull-request comment for the whole fleet, from the same report as the summary. */
function fleetMode(name: 'fleet' | 'fleet-summary'): EntryMode {
  return {
    name,
    async run(settings, ports) {
      const github = githubOf(settings, ports.context, ports)
      await github.start()
      const report = await failingCheck(github, () =>
        name === 'fleet-summary'
          ? runFleetSummary(settings)
          : runFleet(settings, ports.context, {
              git: ports.git,
              connect: clusterIn(settings, ports),
              clock: systemClock,
              log: ports.log,
              outcome: createOutcomeWaiter({ clock: systemClock, log: ports.log }),
              env: ports.githubEnv,
              sandbox: ports.sandbox,
            }),
      )
      await github.finishWith(fleetVerdict(report, ports.context.runUrl))
      return fleetResult(report)
    },
  }
}

const recover: EntryMode = {
  name: 'recover',
  async run(settings, ports) {
    const outcome = createOutcomeWaiter({ clock: systemClock, log: ports.log })
    const report = await runRecover(settings, {
      connect: clusterOf(settings, ports),
      clock: systemClock,
      log: ports.log,
      outcome,
      runUrl: ports.context.runUrl,
    })
    return triggerResult(report, settings.failOn)
  },
}

const discover: EntryMode = {
  name: 'discover',
  async run(settings, ports) {
    const render = async (head: string) => renderCommitOf(settings, await ports.git(), { env: ports.githubEnv, sandbox: ports.sandbox })(head)
    const report = await runDiscover(discoverOptionsOf(settings), ports.context.sha, {
      git: ports.git,
      render,
      connect: clusterOf(settings, ports),
      log: ports.log,
    })
    return discoverResult(report, settings.failOn)
  },
}

const drift: EntryMode = {
  name: 'drift',
  async run(settings, ports) {
    const objects = async () => connectObjects(settings, { env: ports.env, mask: ports.mask })
    const outcome = createOutcomeWaiter({ clock: systemClock, log: ports.log })
    const report = await runDrift(settings, {
      objects,
      connect: clusterOf(settings, ports),
      clock: systemClock,
      log: ports.log,
      outcome,
      runUrl: ports.context.runUrl,
    })
    return driftResult(report)
  },
}

export const MODES: Readonly<Record<ModeName, EntryMode>> = {
  trigger,
  plan,
  fleet: fleetMode('fleet'),
  'fleet-summary': fleetMode('fleet-summary'),
  recover,
  discover,
  drift,
  watch,
}

/** Connects to the settings' cluster. */
function clusterOf(settings: Settings, ports: EntryPorts): () => Promise<ClusterClient> {
  return async () => connect(settings, { env: ports.env, mask: ports.mask })
}

/** Connects to a kubeconfig context of the fleet (undefined: the kubeconfig's current context). */
function clusterIn(settings: Settings, ports: EntryPorts): (context: string | undefined) => Promise<ClusterClient> {
  return async (context) => connect({ ...settings, context }, { env: ports.env, mask: ports.mask })
}

function githubOf(settings: Settings, context: RunContext, ports: EntryPorts): GitHubRun {
  if (settings.githubToken !== undefined) ports.mask(settings.githubToken)
  return githubRunOf(settings, { ...context, env: ports.githubEnv, log: ports.log, sleep: systemClock.sleep, now: systemClock.now })
}

/** A run that ends without a report still finishes its check, saying why. */
async function failingCheck<T>(github: GitHubRun, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    await github.fail(messageOf(error))
    throw error
  }
}
