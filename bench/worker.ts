// Runs our code in a process of its own so its peak RSS is ours alone. Started by the
// scenarios with one JSON argument; prints one JSON line with the timings.
//
//   node --experimental-strip-types bench/worker.ts '{"kind":"plan",…}'

import { subscribe } from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { connect } from '../src/kube/connect.ts'
import { runDiscover } from '../src/modes/discover/run.ts'
import { createGitReader } from '../src/git/reader.ts'
import { parseInParallel } from '../src/git/parse-pool.ts'
import { pathFilter, planChanges } from '../src/core/plan.ts'
import { parseSettings, type Settings } from '../src/settings.ts'
import { planOptionsOf, preparePlan, runTrigger, type RunContext } from '../src/modes/trigger/pipeline.ts'
import { systemClock, type Logger } from '../src/engine/ports.ts'

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
}

export interface DiscoverJob {
  readonly kind: 'discover'
  readonly kubeconfigPath: string
  /** Runs one after another in this process (the first labels, later ones find nothing to change). */
  readonly runs: number
}

export type Job = PlanJob | FanoutJob | DiscoverJob

export interface PlanRun {
  readonly wallMs: number
  /** With breakdown: changeAndHead (as preparePlan reads it), then the parse (on threads when large) and planChanges. */
  readonly gitMs?: number
  readonly planMs?: number
  readonly sources: number
  readonly releases: number
  readonly problems: number
}

export interface FanoutRun {
  readonly wallMs: number
  /** From the start to the answer of the last PATCH: every release triggered (Events may still be written). */
  readonly patchedMs: number
  readonly triggered: number
  readonly other: Readonly<Record<string, number>>
  readonly requests: number
  readonly connections: number
  readonly warnings: number
}

export interface DiscoverRun {
  readonly wallMs: number
  readonly releases: number
  readonly labelled: number
  readonly findings: number
  readonly requests: number
  /** By HTTP method, e.g. GET, PATCH. */
  readonly requestsByMethod: Readonly<Record<string, number>>
  readonly connections: number
}

export interface WorkerOutput {
  readonly runs: readonly (PlanRun | FanoutRun | DiscoverRun)[]
  /** Peak resident set size of this process, KiB (getrusage ru_maxrss). */
  readonly maxRssKiB: number
  /** The same before any work: Node plus our modules and client-node, loaded unbundled. */
  readonly loadedRssKiB: number
}

function inputs(values: Readonly<Record<string, string>>): (name: string) => string {
  return (name) => values[name] ?? ''
}

function dispatchContext(head: string): RunContext {
  return { eventName: 'workflow_dispatch', event: {}, sha: head, runUrl: undefined, refused: undefined }
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
  const { changes, headFiles } = await git.changeAndHead({ base: job.base, head: job.head, filter, withChanges: true })
  const t1 = performance.now()
  const options = planOptionsOf(settings)
  // As preparePlan does it: a large commit's files parsed on threads first.
  const input = { changes, headFiles, fullSync: false, options }
  const plan = planChanges({ ...input, parsed: await parseInParallel(input) })
  const t2 = performance.now()
  return { wallMs: t2 - t0, gitMs: t1 - t0, planMs: t2 - t1, sources: plan.sources.length, releases: plan.releases.length, problems: plan.problems.length }
}

interface Traffic {
  requests: number
  connections: number
  byMethod: Record<string, number>
  /** performance.now() of the last PATCH answer. */
  lastPatchAt: number
}

/**
 * Counts the HTTP requests and new connections of both clients: client-node's undici (lists,
 * reads) and the plain node:https client (raw-client.ts: patches and Events).
 */
function countTraffic(): Traffic {
  const counts: Traffic = { requests: 0, connections: 0, byMethod: {}, lastPatchAt: 0 }
  const started = (message: unknown): void => {
    counts.requests++
    const method = methodOf(message)
    counts.byMethod[method] = (counts.byMethod[method] ?? 0) + 1
  }
  const answered = (message: unknown): void => {
    if (methodOf(message) === 'PATCH') counts.lastPatchAt = performance.now()
  }
  subscribe('undici:request:create', started)
  subscribe('undici:request:headers', answered)
  subscribe('undici:client:connected', () => counts.connections++)
  subscribe('http.client.request.start', started)
  subscribe('http.client.response.finish', (message) => {
    answered(message)
    const request = typeof message === 'object' && message !== null && 'request' in message ? message.request : undefined
    if (typeof request === 'object' && request !== null && 'reusedSocket' in request && request.reusedSocket === false) counts.connections++
  })
  return counts
}

function methodOf(message: unknown): string {
  const request = typeof message === 'object' && message !== null && 'request' in message ? message.request : undefined
  const method = typeof request === 'object' && request !== null && 'method' in request ? request.method : undefined
  return typeof method === 'string' ? method : 'unknown'
}

async function fanoutJob(job: FanoutJob): Promise<FanoutRun[]> {
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
    const patchedMs = traffic.lastPatchAt > t0 ? traffic.lastPatchAt - t0 : wallMs
    runs.push({
      wallMs,
      patchedMs,
      triggered,
      other,
      requests: traffic.requests - before.requests,
      connections: traffic.connections - before.connections,
      warnings,
    })
  }
  return runs
}

/** `discover` over every namespace, as the CLI and the action run it. */
async function discoverJob(job: DiscoverJob): Promise<DiscoverRun[]> {
  const traffic = countTraffic()
  const kubeconfig = readFileSync(job.kubeconfigPath, 'utf8')
  const settings = parseSettings(inputs({ mode: 'discover', kubeconfig, timeout: '5m' }))
  const runs: DiscoverRun[] = []
  for (let i = 0; i < job.runs; i++) {
    const before = { ...traffic, byMethod: { ...traffic.byMethod } }
    const t0 = performance.now()
    const report = await runDiscover(settings, '', {
      git: async () => {
        throw new Error('discover in the cluster reads no repository')
      },
      connect: async () => connect(settings, { env: {}, mask: () => {} }),
      log: { info: () => {}, warning: () => {} },
    })
    const wallMs = performance.now() - t0
    const requestsByMethod = Object.fromEntries(Object.entries(traffic.byMethod).map(([m, n]) => [m, n - (before.byMethod[m] ?? 0)]))
    runs.push({
      wallMs,
      releases: report.releases,
      labelled: report.labels.filter((l) => l.status === 'done').length,
      findings: report.findings.length,
      requests: traffic.requests - before.requests,
      requestsByMethod,
      connections: traffic.connections - before.connections,
    })
  }
  return runs
}

async function main(): Promise<void> {
  const loadedRssKiB = process.resourceUsage().maxRSS
  const job = JSON.parse(process.argv[2] ?? '{}') as Job
  const runs = job.kind === 'plan' ? await planJob(job) : job.kind === 'fanout' ? await fanoutJob(job) : await discoverJob(job)
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
