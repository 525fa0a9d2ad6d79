// Runs the watch mode in the test process against a real apiserver, the way the CLI does
// (settings parsed from inputs, JSON logs), and reads its /metrics and /readyz over HTTP.

import { readFileSync } from 'node:fs'
import { parseSettings } from '../../src/settings.ts'
import { connectWatch } from '../../src/kube/connect.ts'
import type { ElectionTiming } from '../../src/modes/watch/leader.ts'
import { createEventLog } from '../../src/modes/watch/log.ts'
import { runWatch, type WatchReport } from '../../src/modes/watch/run.ts'
import { waitFor } from './kube.ts'

export interface LogLine {
  readonly level: string
  readonly msg: string
  readonly [field: string]: unknown
}

export interface WatchHandle {
  readonly lines: LogLine[]
  /** Resolves with the /metrics base URL once the server listens. */
  url(): Promise<string>
  /** Waits for a log line matching `msg` (and fields), returns it. */
  line(msg: string, fields?: Readonly<Record<string, unknown>>, timeoutMs?: number): Promise<LogLine>
  synced(): Promise<void>
  metrics(): Promise<Metrics>
  readyz(): Promise<{ status: number; body: string }>
  /** SIGTERM equivalent: drains and resolves with the report. */
  stop(): Promise<WatchReport>
  readonly done: Promise<WatchReport>
}

export interface WatchStart {
  readonly kubeconfigPath: string
  /** Action input name → value; mode, kubeconfig, log-format and metrics-address are set. */
  readonly inputs?: Readonly<Record<string, string>>
  readonly identity?: string
  readonly election?: ElectionTiming
  readonly backoff?: { readonly minMs: number; readonly maxMs: number }
}

export function startWatch(options: WatchStart): WatchHandle {
  const inputs: Record<string, string> = {
    mode: 'watch',
    kubeconfig: readFileSync(options.kubeconfigPath, 'utf8'),
    'log-format': 'json',
    'metrics-address': '127.0.0.1:0',
    debounce: '0',
    ...options.inputs,
  }
  const settings = parseSettings((name) => inputs[name] ?? '')
  const lines: LogLine[] = []
  const log = createEventLog('json', { write: (_level, line) => void lines.push(JSON.parse(line) as LogLine) })
  const stop = new AbortController()
  const done = runWatch(settings, {
    connect: async () => connectWatch(settings, { env: {}, mask: () => undefined }),
    log,
    signal: stop.signal,
    ...(options.identity === undefined ? {} : { identity: options.identity }),
    ...(options.election === undefined ? {} : { election: options.election }),
    backoff: options.backoff ?? { minMs: 200, maxMs: 2_000 },
  })
  done.catch(() => undefined)
  const matches = (l: LogLine, msg: string, fields: Readonly<Record<string, unknown>>): boolean =>
    l.msg === msg && Object.entries(fields).every(([k, v]) => l[k] === v)
  const line = async (msg: string, fields: Readonly<Record<string, unknown>> = {}, timeoutMs = 30_000): Promise<LogLine> =>
    waitFor(() => lines.find((l) => matches(l, msg, fields)), {
      timeoutMs,
      intervalMs: 20,
      message: `log line '${msg}' ${JSON.stringify(fields)}; seen: ${lines.map((l) => l.msg).join(' | ')}`,
    })
  const url = async (): Promise<string> => String((await line('serving /healthz, /readyz and /metrics')).url)
  return {
    lines,
    url,
    line,
    done,
    async synced() {
      await line('initial sync done')
    },
    async metrics() {
      const response = await fetch(`${await url()}/metrics`)
      if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`)
      if (!(response.headers.get('content-type') ?? '').startsWith('text/plain; version=0.0.4'))
        throw new Error(`/metrics content type ${response.headers.get('content-type')}`)
      return parseMetrics(await response.text())
    },
    async readyz() {
      const response = await fetch(`${await url()}/readyz`)
      return { status: response.status, body: (await response.text()).trim() }
    },
    async stop() {
      stop.abort()
      return done
    },
  }
}

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Metrics {
  readonly samples: readonly Sample[]
  readonly types: ReadonlyMap<string, string>
  /** Sum of the samples of `name` whose labels include `labels`. */
  value(name: string, labels?: Readonly<Record<string, string>>): number
}

/** The Prometheus text format, strictly: every line is a comment, blank, or a valid sample. */
export function parseMetrics(text: string): Metrics {
  const samples: Sample[] = []
  const types = new Map<string, string>()
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '') continue
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (type !== null) {
      types.set(type[1] ?? '', type[2] ?? '')
      continue
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/.exec(line)
    if (m === null) throw new Error(`not a Prometheus sample: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] ?? ''] = (pair[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
    const valueText = m[4] ?? ''
    samples.push({ name: m[1] ?? '', labels, value: valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText) })
  }
  return {
    samples,
    types,
    value: (name, labels = {}) =>
      samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0),
  }
}
