// Our watch mode as users run it: the bundled `dist/cli.js watch` in a process of its own,
// with the node flags of the image deploy/watch runs (the Dockerfile's ENTRYPOINT), JSON logs
// on stdout, /metrics on a free loopback port. The scenarios read its log lines
// (each trigger logs the release, its token and the event-to-patch latency) and its RSS.

import { spawn, type ChildProcess } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DIST_DIR } from '../test/support/action.ts'
import { imageEntrypoint } from '../test/support/image.ts'
import { poll, sleep } from './lib.ts'

export interface WatchProcessOptions {
  readonly kubeconfigPath: string
  /** Namespaces to watch; empty: all. */
  readonly namespaces: readonly string[]
}

export interface LogLine {
  readonly level: string
  readonly msg: string
  readonly [field: string]: unknown
}

export interface WatchProcess {
  readonly pid: number
  /** Every JSON line logged so far, in order. */
  readonly lines: readonly LogLine[]
  /** The first line at or after index `from` with this message whose fields match. */
  line(msg: string, match?: (line: LogLine) => boolean, options?: { from?: number; timeoutMs?: number }): Promise<LogLine>
  /** Resident memory now, KiB (/proc/<pid>/status VmRSS, else the process's own gauge). */
  rssKiB(): Promise<number>
  /** One gauge or counter from /metrics (summed over its series). */
  metric(name: string): Promise<number>
  /** SIGTERM (it drains and exits 0); SIGKILL after 10 s. */
  stop(): Promise<void>
}

export const TRIGGERED = 'release triggered'

/** The node flags of the image's ENTRYPOINT (`["node", <flags>…, "/app/cli.mjs"]`). */
export const IMAGE_NODE_FLAGS: readonly string[] = imageEntrypoint()
  .slice(1)
  .filter((w) => w.startsWith('--'))

export async function startWatchProcess(options: WatchProcessOptions): Promise<WatchProcess> {
  const args = [join(DIST_DIR, 'cli.js'), 'watch', '--kubeconfig', options.kubeconfigPath, '--debounce', '0', '--log-format', 'json']
  args.push('--metrics-address', '127.0.0.1:0', ...options.namespaces.flatMap((ns) => ['--namespaces', ns]))
  // BENCH_WATCH_NODE_ARGS: more node flags for our process only, e.g. '--cpu-prof --cpu-prof-dir=DIR' to profile it.
  const nodeArgs = [...IMAGE_NODE_FLAGS, ...(process.env['BENCH_WATCH_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '')]
  const child = spawn(process.execPath, [...nodeArgs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: LogLine[] = []
  const other: string[] = []
  let pending = ''
  const take = (chunk: Buffer): void => {
    pending += chunk.toString('utf8')
    let newline = pending.indexOf('\n')
    while (newline >= 0) {
      const text = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      try {
        lines.push(JSON.parse(text) as LogLine)
      } catch {
        other.push(text)
      }
      newline = pending.indexOf('\n')
    }
  }
  child.stdout.on('data', take)
  child.stderr.on('data', take)
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  let exitCode: number | null | undefined
  void exited.then((code) => (exitCode = code))
  const pid = child.pid
  if (pid === undefined) throw new Error('the watch process did not start')

  const line = async (msg: string, match: (l: LogLine) => boolean = () => true, { from = 0, timeoutMs = 60_000 } = {}): Promise<LogLine> =>
    poll(
      async () => {
        if (exitCode !== undefined) throw new Error(`the watch process exited ${exitCode}: ${tail(lines, other)}`)
        for (let i = from; i < lines.length; i++) {
          const l = lines[i]
          if (l !== undefined && l.msg === msg && match(l)) return l
        }
        return undefined
      },
      { intervalMs: 5, timeoutMs, what: `the watch process to log '${msg}' (${tail(lines, other)})` },
    )
  const url = String((await line('serving /healthz, /readyz and /metrics')).url)
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${url}/metrics`)).text()
    let sum = 0
    for (const l of text.split('\n')) {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(l)
      if (m !== null && m[1] === name) sum += Number(m[3])
    }
    return sum
  }
  return {
    pid,
    lines,
    line,
    metric,
    async rssKiB() {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
      const vmRss = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]
      return vmRss === undefined ? (await metric('process_resident_memory_bytes')) / 1024 : Number(vmRss)
    },
    stop: () => stopChild(child, exited),
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  const timedOut = await Promise.race([exited.then(() => false), sleep(graceMs).then(() => true)])
  if (timedOut) {
    child.kill('SIGKILL')
    await exited
  }
}

function tail(lines: readonly LogLine[], other: readonly string[]): string {
  return [...lines.slice(-5).map((l) => JSON.stringify(l)), ...other.slice(-5)].join(' | ').slice(-2000)
}

/** CPU time (user + system) a process has used so far, seconds; NaN when /proc cannot tell. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  // Fields after the command (which may hold spaces): state is the 3rd, utime the 14th, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const ticks = Number(fields[11]) + Number(fields[12])
  return ticks / CLOCK_TICKS
}

/** sysconf(_SC_CLK_TCK): 100 on every Linux this runs on. */
const CLOCK_TICKS = 100

/** The Date.now() our RFC 3339 token stands for: its first three fractional digits are the milliseconds. */
export function tokenTime(token: string): number {
  return Date.parse(`${token.slice(0, 23)}Z`)
}
