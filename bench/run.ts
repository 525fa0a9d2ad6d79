// The benchmarks: `npm run bench` (full) or `npm run bench -- --quick` (a subset for a
// minute). Prints a table per scenario and writes bench/results.json; a full run of every
// scenario also writes bench/scaling.svg.
//
//   --quick             the subset
//   --only=plan,fanout  some scenarios only (plan, fanout, helm)

import { execFileSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeChart } from './chart.ts'
import { fanoutScenario, type FanoutRow } from './fanout.ts'
import { helmScenario, type HelmRow } from './helm.ts'
import { fig, formatTable, now, round, yes, type Figure, type ScenarioResult, type Target } from './lib.ts'
import { planScenario, type PlanRow } from './plan.ts'

const BENCH_DIR = dirname(fileURLToPath(import.meta.url))
export const RESULTS_PATH = join(BENCH_DIR, 'results.json')
export const CHART_PATH = join(BENCH_DIR, 'scaling.svg')

const SCENARIOS = ['plan', 'fanout', 'helm'] as const
type ScenarioName = (typeof SCENARIOS)[number]

interface Profile {
  readonly plan: { readonly sizes: readonly number[]; readonly reps: number; readonly breakdown: boolean }
  readonly fanout: {
    readonly sizes: readonly number[]
    readonly concurrencies: readonly number[]
    readonly reps: number
    readonly kubectlSizes: readonly number[]
    readonly experiment: boolean
  }
  readonly helm: { readonly changes: number }
}

const FULL: Profile = {
  plan: { sizes: [100, 1_000, 5_000, 10_000], reps: 3, breakdown: true },
  fanout: { sizes: [10, 100, 1_000, 5_000], concurrencies: [10, 50], reps: 3, kubectlSizes: [10, 100], experiment: true },
  helm: { changes: 15 },
}

// Fan-out stops at 100 releases here: at 1,000 our trigger alone takes ~30 s today (see BENCHMARKS.md).
const QUICK: Profile = {
  plan: { sizes: [100, 1_000], reps: 1, breakdown: false },
  fanout: { sizes: [10, 100], concurrencies: [10], reps: 1, kubectlSizes: [10], experiment: false },
  helm: { changes: 5 },
}

interface Args {
  readonly quick: boolean
  readonly only: readonly ScenarioName[]
}

function parseArgs(argv: readonly string[]): Args {
  let quick = false
  let only: readonly ScenarioName[] = SCENARIOS
  for (const arg of argv) {
    if (arg === '--quick') quick = true
    else if (arg.startsWith('--only=')) only = arg.slice('--only='.length).split(',').map(scenarioName)
    else throw new Error(`unknown argument '${arg}'; use --quick and/or --only=${SCENARIOS.join(',')}`)
  }
  return { quick, only }
}

function scenarioName(value: string): ScenarioName {
  const found = SCENARIOS.find((s) => s === value.trim())
  if (found === undefined) throw new Error(`unknown scenario '${value}'; one of ${SCENARIOS.join(', ')}`)
  return found
}

function log(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`)
}

interface Scenarios {
  plan?: ScenarioResult<PlanRow>
  fanout?: ScenarioResult<FanoutRow>
  helm?: ScenarioResult<HelmRow>
}

async function runScenario(name: ScenarioName, profile: Profile, into: Scenarios): Promise<ScenarioResult> {
  switch (name) {
    case 'plan':
      return (into.plan = await planScenario({ ...profile.plan, log }))
    case 'fanout':
      return (into.fanout = await fanoutScenario({ ...profile.fanout, log }))
    case 'helm':
      return (into.helm = await helmScenario({ ...profile.helm, log }))
  }
}

function version(command: string, args: readonly string[]): string {
  try {
    return (
      execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 })
        .trim()
        .split('\n')[0] ?? ''
    )
  } catch {
    return 'unavailable'
  }
}

/** The commit measured; `-dirty` when src/ or dist/ differ from it (others work in this tree too). */
function revision(): string {
  const head = version('git', ['rev-parse', '--short=12', 'HEAD'])
  const dirty = version('git', ['--no-optional-locks', 'status', '--porcelain', '--', 'src', 'dist'])
  return dirty === '' ? head : `${head}-dirty`
}

export interface Machine {
  readonly cores: number
  readonly cpuModel: string
  readonly memory: Figure
  readonly node: string
  readonly git: string
  readonly kubectl: string
}

function machine(): Machine {
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memory: fig(totalmem() / 1024 ** 3, 'GiB'),
    node: process.version,
    git: version('git', ['--version']),
    kubectl: version('kubectl', ['version', '--client']),
  }
}

export interface LoadAverages {
  readonly before: number
  readonly after: number
}

export interface Results {
  readonly schema: 1
  readonly mode: 'full' | 'quick'
  readonly command: string
  readonly revision: string
  readonly startedAt: string
  readonly duration: Figure
  readonly machine: Machine
  /**
   * 1-minute load averages when each scenario started and ended. Our own previous scenario
   * raises them (apiserver, workers); a plan `before` well above 0 means the machine was busy.
   */
  readonly load: Partial<Record<ScenarioName, LoadAverages>>
  readonly scenarios: Scenarios
  /** Scenarios that failed, with the error. */
  readonly errors: Partial<Record<ScenarioName, string>>
  readonly targets: readonly (Target & { readonly scenario: ScenarioName })[]
}

function printScenario(result: ScenarioResult): void {
  process.stdout.write(`\n## ${result.title}\n\n${formatTable(result.columns, result.table)}\n\n${result.notes.map((n) => `- ${n}`).join('\n')}\n`)
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const profile = args.quick ? QUICK : FULL
  const startedAt = new Date().toISOString()
  const t0 = now()
  const scenarios: Scenarios = {}
  const errors: Partial<Record<ScenarioName, string>> = {}
  const load: Partial<Record<ScenarioName, LoadAverages>> = {}
  for (const name of args.only) {
    log(`scenario ${name} (${args.quick ? 'quick' : 'full'}); load average ${loadavg()[0]?.toFixed(2)}`)
    const before = loadavg()[0] ?? 0
    try {
      printScenario(await runScenario(name, profile, scenarios))
    } catch (error) {
      // One broken scenario must not lose the others' figures.
      errors[name] = error instanceof Error ? (error.stack ?? error.message) : String(error)
      log(`scenario ${name} failed: ${errors[name]}`)
      process.exitCode = 1
    }
    load[name] = { before: round(before, 2), after: round(loadavg()[0] ?? 0, 2) }
  }
  const targets = args.only.flatMap((name) => (scenarios[name]?.targets ?? []).map((t) => ({ ...t, scenario: name })))
  const results: Results = {
    schema: 1,
    mode: args.quick ? 'quick' : 'full',
    revision: revision(),
    command: ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    startedAt,
    duration: fig((now() - t0) / 1000, 's'),
    machine: machine(),
    load,
    scenarios,
    errors,
    targets,
  }
  await writeFile(RESULTS_PATH, `${JSON.stringify(results, null, 2)}\n`)
  // The committed chart is a full run's: a quick or partial run leaves it alone.
  const charted = !args.quick && args.only.length === SCENARIOS.length
  if (charted) await writeChart(results, CHART_PATH)
  process.stdout.write(
    `\n## Targets\n\n${formatTable(
      ['scenario', 'target', 'value', 'threshold', 'met'],
      targets.map((t) => [t.scenario, t.description, `${t.value.value} ${t.value.unit}`, `${t.threshold.value} ${t.threshold.unit}`, yes(t.met)]),
    )}\n`,
  )
  const chart = charted ? ` and ${CHART_PATH}` : ` (${CHART_PATH} is left to full runs; node --experimental-strip-types bench/chart.ts renders results.json)`
  process.stdout.write(`\nWrote ${RESULTS_PATH}${chart} in ${results.duration.value.toFixed(0)} s.\n`)
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exitCode = 1
})
