// Runs our code in a process of its own so its peak RSS is ours alone. Started by the
// scenarios with one JSON argument; prints one JSON line with the timings.
//
//   node --experimental-strip-types bench/worker.ts '{"kind":"plan",…}'

import { subscribe } from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { KubeConfig } from '@kubernetes/client-node'
import { connect } from '../src/connect.ts'
import { createGitReader } from '../src/git.ts'
import { pathFilter, planChanges } from '../src/plan.ts'
import { parseSettings, type Settings } from '../src/settings.ts'
import { preparePlan, runTrigger, systemClock, type Logger, type RunContext } from '../src/trigger.ts'

export interface PlanJob {
  readonly kind: 'plan'
  readonly repo: string
  readonly base: string
  readonly head: string
  /** Time the git read and the pure plan apart (instead of preparePlan as a whole). */
  readonly breakdown: boolean
}

export interface FanoutJob {
  readonly kind: 'fanout'
  readonly repo: string
  readonly kubeconfigPath: string
  readonly concurrency: number
  /** Consecutive commits: run i triggers ranges[i].base..ranges[i].head. */
  readonly ranges: readonly { readonly base: string; readonly head: string }[]
  /**
   * Experiment, not the shipped code: make client-node reuse its first undici dispatcher
   * (so its connections) instead of creating one per request, to measure what fixing
   * connection reuse in src/kube/cluster.ts would give.
   */
  readonly shareDispatcher: boolean
}

export type Job = PlanJob | FanoutJob

export interface PlanRun {
  readonly wallMs: number
  /** With breakdown: changedFiles + headFiles (in parallel, as preparePlan runs them), then planChanges. */
  readonly gitMs?: number
  readonly planMs?: number
  readonly sources: number
  readonly releases: number
  readonly problems: number
}

export interface FanoutRun {
  readonly wallMs: number
  readonly triggered: number
  readonly other: Readonly<Record<string, number>>
  readonly requests: number
  readonly connections: number
  readonly warnings: number
}

export interface WorkerOutput {
  readonly runs: readonly (PlanRun | FanoutRun)[]
  /** Peak resident set size of this process, KiB (getrusage ru_maxrss). */
  readonly maxRssKiB: number
  /** The same before any work: Node plus our modules and client-node, loaded unbundled. */
  readonly loadedRssKiB: number
}

function inputs(values: Readonly<Record<string, string>>): (name: string) => string {
  return (name) => values[name] ?? ''
}

function dispatchContext(head: string): RunContext {
  return { eventName: 'workflow_dispatch', event: {}, sha: head, runUrl: undefined }
}

/**
 * One preparePlan per process: the digest memo is process-wide, so a second run in the same
 * process would find every value already parsed, which the action (a fresh process) never does.
 */
async function planJob(job: PlanJob): Promise<PlanRun[]> {
  const settings = parseSettings(inputs({ base: job.base, head: job.head }))
  if (job.breakdown) return [await planBreakdown(job, settings)]
  const t0 = performance.now()
  const git = await createGitReader({ cwd: job.repo })
  const prepared = await preparePlan(settings, dispatchContext(job.head), git)
  const wallMs = performance.now() - t0
  const counts = { sources: prepared.plan.sources.length, releases: prepared.plan.releases.length, problems: prepared.plan.problems.length }
  return [{ wallMs, ...counts }]
}

async function planBreakdown(job: PlanJob, settings: Settings): Promise<PlanRun> {
  const git = await createGitReader({ cwd: job.repo })
  const filter = pathFilter(settings.paths)
  const t0 = performance.now()
  const [changes, headFiles] = await Promise.all([git.changedFiles(job.base, job.head, filter), git.headFiles(job.head, filter)])
  const t1 = performance.now()
  const options = {
    prefix: settings.annotationPrefix,
    defaultNamespace: settings.defaultNamespace,
    semanticDigest: settings.semanticDigest,
    discover: settings.discover,
    paths: settings.paths,
  }
  const plan = planChanges({ changes, headFiles, fullSync: false, options })
  const t2 = performance.now()
  return { wallMs: t2 - t0, gitMs: t1 - t0, planMs: t2 - t1, sources: plan.sources.length, releases: plan.releases.length, problems: plan.problems.length }
}

/** Counts the HTTP requests and new connections client-node's undici makes. */
function countTraffic(): { requests: number; connections: number } {
  const counts = { requests: 0, connections: 0 }
  subscribe('undici:request:create', () => counts.requests++)
  subscribe('undici:client:connected', () => counts.connections++)
  return counts
}

type DispatcherFactory = (this: KubeConfig, ...args: unknown[]) => unknown

/** client-node 2.0.1 builds a new undici Agent (a new TLS connection) in every request's auth step; keep the first. */
function shareDispatchers(): void {
  const prototype = KubeConfig.prototype as unknown as { createDispatcher: DispatcherFactory }
  const original = prototype.createDispatcher
  const shared = new WeakMap<KubeConfig, unknown>()
  prototype.createDispatcher = function (this: KubeConfig, ...args: unknown[]): unknown {
    if (!shared.has(this)) shared.set(this, original.apply(this, args))
    return shared.get(this)
  }
}

async function fanoutJob(job: FanoutJob): Promise<FanoutRun[]> {
  if (job.shareDispatcher) shareDispatchers()
  const traffic = countTraffic()
  const kubeconfig = readFileSync(job.kubeconfigPath, 'utf8')
  const runs: FanoutRun[] = []
  for (const range of job.ranges) {
    const settings = parseSettings(
      inputs({
        kubeconfig,
        base: range.base,
        head: range.head,
        wait: 'false',
        'wait-for-apply': 'false',
        discover: 'false',
        'max-concurrency': String(job.concurrency),
        timeout: '5m',
      }),
    )
    let warnings = 0
    const log: Logger = { info: () => {}, warning: () => warnings++ }
    const before = { ...traffic }
    const t0 = performance.now()
    const git = await createGitReader({ cwd: job.repo })
    const report = await runTrigger(settings, dispatchContext(range.head), {
      git,
      connect: async () => connect(settings, { env: {}, mask: () => {} }),
      clock: systemClock,
      log,
    })
    const wallMs = performance.now() - t0
    const byStatus: Record<string, number> = {}
    for (const r of report.results) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1
    const { Triggered: triggered = 0, ...other } = byStatus
    runs.push({ wallMs, triggered, other, requests: traffic.requests - before.requests, connections: traffic.connections - before.connections, warnings })
  }
  return runs
}

async function main(): Promise<void> {
  const loadedRssKiB = process.resourceUsage().maxRSS
  const job = JSON.parse(process.argv[2] ?? '{}') as Job
  const runs = job.kind === 'plan' ? await planJob(job) : await fanoutJob(job)
  const output: WorkerOutput = { runs, maxRssKiB: process.resourceUsage().maxRSS, loadedRssKiB }
  process.stdout.write(`${JSON.stringify(output)}\n`)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  },
)
