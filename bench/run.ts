// The benchmarks: `npm run bench` (full) or `npm run bench -- --quick` (a subset for a
// minute). Prints a table per scenario and writes bench/results.json; a full run of every
// scenario also writes bench/scaling.svg.
//
//   --quick             the subset
//   --only=plan,fanout  some scenarios only (see SCENARIOS)
//   HELMRELEASE_TRIGGER_BENCH_PEER=<binary>  runs that operator beside watch (BENCHMARKS.md)
//
// A new scenario is a module returning a ScenarioResult, one entry in SCENARIOS and its
// sizes in both profiles.

import { execFileSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { writeChart } from './chart.ts'
import { discoverScenario, type DiscoverRow } from './discover.ts'
import { fanoutScenario, type FanoutRow } from './fanout.ts'
import { helmScenario, type HelmRow } from './helm.ts'
import { fig, formatTable, now, round, yes, type Figure, type ScenarioResult, type Target } from './lib.ts'
import { planScenario, type PlanRow } from './plan.ts'
import { parseScenario, type ParseRow } from './parse.ts'
import { renderScenario, type RenderRow } from './render.ts'
import { startScenario, type StartRow } from './start.ts'
import { watchScenario, type WatchRow } from './watch.ts'

const BENCH_DIR = dirname(fileURLToPath(import.meta.url))
export const RESULTS_PATH = join(BENCH_DIR, 'results.json')
export const CHART_PATH = join(BENCH_DIR, 'scaling.svg')

/** The rows each scenario reports, by name. */
interface ScenarioRows {
  plan: PlanRow
  parse: ParseRow
  fanout: FanoutRow
  helm: HelmRow
  watch: WatchRow
  discover: DiscoverRow
  start: StartRow
  render: RenderRow
}
type ScenarioName = keyof ScenarioRows

interface Profile {
  /** What a run without --only runs. */
  readonly scenarios: readonly ScenarioName[]
  readonly plan: { readonly sizes: readonly number[]; readonly reps: number; readonly breakdown: boolean }
  readonly parse: { readonly sizes: readonly number[]; readonly reps: number }
  readonly fanout: {
    readonly sizes: readonly number[]
    readonly concurrencies: readonly number[]
    readonly reps: number
    readonly kubectlSizes: readonly number[]
  }
  readonly helm: { readonly changes: number }
  readonly watch: {
    readonly rates: readonly number[]
    readonly seconds: number
    readonly maxChanges: number
    readonly sources: readonly number[]
    readonly unlabelled: number
    readonly memoryRuns: number
  }
  readonly discover: { readonly sizes: readonly number[] }
  readonly start: { readonly samples: number }
  readonly render: { readonly apps: number; readonly manifestsPerApp: number; readonly reps: number }
}

const FULL: Profile = {
  scenarios: ['plan', 'parse', 'fanout', 'helm', 'watch', 'discover', 'start', 'render'],
  plan: { sizes: [100, 1_000, 5_000, 10_000], reps: 3, breakdown: true },
  parse: { sizes: [1_000, 5_000], reps: 5 },
  fanout: { sizes: [10, 100, 1_000, 5_000], concurrencies: [10, 50], reps: 3, kubectlSizes: [10, 100] },
  helm: { changes: 15 },
  watch: { rates: [1, 10, 100], seconds: 10, maxChanges: 1_000, sources: [1_000, 10_000], unlabelled: 10_000, memoryRuns: 2 },
  discover: { sizes: [1_000, 10_000] },
  start: { samples: 10 },
  render: { apps: 39, manifestsPerApp: 20, reps: 5 },
}

// One process or run per size, and watch and discover only when asked for (--only), to stay
// within two minutes. Plan, parse and fan-out run at the sizes their targets name: a smaller
// stand-in read differently (fan-out at 100 releases is mostly a run's fixed ~0.4 s of git, plan
// and connecting, and read 0.41–0.45× where 1,000 read 0.60–0.73×; the parse at 3,000 files
// read 1.48–1.59× where 15,000 read 1.39–1.48×).
const QUICK: Profile = {
  scenarios: ['plan', 'parse', 'fanout', 'helm', 'start'],
  plan: { sizes: [100, 5_000], reps: 1, breakdown: false },
  parse: { sizes: [5_000], reps: 3 },
  fanout: { sizes: [10, 1_000], concurrencies: [10], reps: 1, kubectlSizes: [10] },
  helm: { changes: 5 },
  watch: { rates: [1, 10, 100], seconds: 3, maxChanges: 300, sources: [1_000], unlabelled: 10_000, memoryRuns: 1 },
  discover: { sizes: [1_000] },
  start: { samples: 3 },
  render: { apps: 39, manifestsPerApp: 20, reps: 1 },
}

type Log = (line: string) => void

/** The operator to run beside watch, built by hand (BENCHMARKS.md says how): HELMRELEASE_TRIGGER_BENCH_PEER=<binary>. */
function peerOf(env: NodeJS.ProcessEnv): { readonly binary: string; readonly name: string } | undefined {
  const binary = env.HELMRELEASE_TRIGGER_BENCH_PEER
  return binary === undefined || binary === '' ? undefined : { binary, name: 'nebius/helmrelease-trigger-operator' }
}

/** Every scenario, in the order a run takes them: how it runs with its part of the profile. */
const SCENARIOS: { readonly [N in ScenarioName]: (profile: Profile, log: Log) => Promise<ScenarioResult<ScenarioRows[N]>> } = {
  plan: (profile, log) => planScenario({ ...profile.plan, log }),
  parse: (profile, log) => parseScenario({ ...profile.parse, log }),
  fanout: (profile, log) => fanoutScenario({ ...profile.fanout, log }),
  helm: (profile, log) => helmScenario({ ...profile.helm, log }),
  watch: (profile, log) => watchScenario({ ...profile.watch, peer: peerOf(process.env), log }),
  discover: (profile, log) => discoverScenario({ ...profile.discover, log }),
  start: (profile, log) => startScenario({ ...profile.start, log }),
  render: (profile, log) => renderScenario({ ...profile.render, log }),
}
const NAMES: readonly ScenarioName[] = ['plan', 'parse', 'fanout', 'helm', 'watch', 'discover', 'start', 'render']

interface Args {
  readonly quick: boolean
  readonly only: readonly ScenarioName[]
}

function parseArgs(argv: readonly string[]): Args {
  let quick = false
  let only: readonly ScenarioName[] | undefined
  for (const arg of argv) {
    if (arg === '--quick') quick = true
    else if (arg.startsWith('--only=')) only = arg.slice('--only='.length).split(',').map(scenarioName)
    else throw new Error(`unknown argument '${arg}'; use --quick and/or --only=${NAMES.join(',')}`)
  }
  return { quick, only: only ?? (quick ? QUICK : FULL).scenarios }
}

function scenarioName(value: string): ScenarioName {
  const found = NAMES.find((s) => s === value.trim())
  if (found === undefined) throw new Error(`unknown scenario '${value}'; one of ${NAMES.join(', ')}`)
  return found
}

function log(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`)
}

type Scenarios = { [N in ScenarioName]?: ScenarioResult<ScenarioRows[N]> }

async function runScenario<N extends ScenarioName>(name: N, profile: Profile, into: Scenarios): Promise<ScenarioResult> {
  const result = await SCENARIOS[name](profile, log)
  // SCENARIOS ties each name to its rows' type; TypeScript cannot follow that through `into[name]`.
  Object.assign(into, { [name]: result })
  return result
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
  const charted = !args.quick && args.only.length === NAMES.length
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
