// Shared pieces of the benchmarks: the results' shape, statistics, bounded loops, child
// processes and the printed tables. No scenario logic here.

import { spawn } from 'node:child_process'

/** A measured number and its unit; every figure in results.json has this shape. */
export interface Figure {
  readonly value: number
  readonly unit: string
}

export function fig(value: number, unit: string): Figure {
  return { value: round(value), unit }
}

export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}

export interface Target {
  readonly id: string
  readonly description: string
  readonly value: Figure
  readonly threshold: Figure
  readonly met: boolean
}

export function target(id: string, description: string, value: Figure, threshold: Figure, comparison: 'below' | 'atLeast'): Target {
  const met = comparison === 'below' ? value.value < threshold.value : value.value >= threshold.value
  return { id, description, value, threshold, met }
}

/** What a scenario hands back: rows for the table and results.json, targets, notes. */
export interface ScenarioResult<Row = unknown> {
  readonly title: string
  readonly columns: readonly string[]
  readonly table: readonly (readonly string[])[]
  readonly rows: readonly Row[]
  readonly targets: readonly Target[]
  readonly notes: readonly string[]
}

// ---- statistics ------------------------------------------------------------------------

export function median(values: readonly number[]): number {
  return quantile(values, 0.5)
}

/** Linear interpolation between closest ranks (numpy's default). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const position = (sorted.length - 1) * q
  const low = Math.floor(position)
  const high = Math.ceil(position)
  const a = sorted[low] ?? Number.NaN
  const b = sorted[high] ?? Number.NaN
  return a + (b - a) * (position - low)
}

// ---- time ------------------------------------------------------------------------------

export function now(): number {
  return performance.now()
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export interface PollOptions {
  readonly intervalMs: number
  readonly timeoutMs: number
  readonly what: string
}

/** Calls `probe` every intervalMs until it returns a value (not undefined); bounded by timeoutMs. */
export async function poll<T>(probe: () => Promise<T | undefined>, options: PollOptions): Promise<T> {
  const deadline = now() + options.timeoutMs
  const maxAttempts = Math.ceil(options.timeoutMs / Math.max(1, options.intervalMs)) + 1
  for (let attempt = 0; attempt < maxAttempts && now() < deadline; attempt++) {
    const value = await probe()
    if (value !== undefined) return value
    await sleep(options.intervalMs)
  }
  throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}`)
}

/** The engine's own bounded-concurrency map: the baselines run at the concurrency we do. */
export { mapLimit } from '../src/lib/concurrency.ts'

// ---- child processes -------------------------------------------------------------------

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  readonly cwd?: string
  readonly env?: NodeJS.ProcessEnv
  readonly input?: string
  readonly timeoutMs: number
}

/** Runs a command to completion (killed at timeoutMs); never throws for a non-zero exit. */
export function run(command: string, args: readonly string[], options: RunOptions): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.stdout.on('data', (d: Buffer) => stdout.push(d))
    child.stderr.on('data', (d: Buffer) => stderr.push(d))
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') })
    })
    // A child that exits without reading its input reports through its exit code, not EPIPE.
    child.stdin.on('error', () => {})
    child.stdin.end(options.input ?? '')
  })
}

export async function runOk(command: string, args: readonly string[], options: RunOptions): Promise<string> {
  const ran = await run(command, args, options)
  if (ran.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${ran.code}: ${ran.stderr.slice(-2000)}`)
  return ran.stdout
}

// ---- tables ----------------------------------------------------------------------------

export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`
  return [line(columns), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n')
}

export function ms(value: number): string {
  if (!Number.isFinite(value)) return '–'
  return value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${value.toFixed(value < 10 ? 1 : 0)} ms`
}

export function num(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return '–'
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

export function ratio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : '–'
}

export function yes(met: boolean): string {
  return met ? 'met' : 'NOT met'
}
