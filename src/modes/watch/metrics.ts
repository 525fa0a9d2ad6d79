// Prometheus metrics of the watch mode, in the text exposition format (version 0.0.4),
// written by hand: counters, gauges and one histogram are all we need.

export interface Labels {
  readonly [name: string]: string
}

interface Family {
  readonly name: string
  readonly help: string
  readonly type: 'counter' | 'gauge' | 'histogram'
  lines(): string[]
}

export class Counter implements Family {
  readonly type = 'counter'
  readonly name: string
  readonly help: string
  private readonly values = new Map<string, { labels: Labels; value: number }>()
  constructor(name: string, help: string) {
    this.name = name
    this.help = help
  }
  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(labels)
    const current = this.values.get(key) ?? { labels, value: 0 }
    current.value += by
    this.values.set(key, current)
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelText(labels))?.value ?? 0
  }
  /** Sum over every series whose labels include `match`. */
  total(match: Labels = {}): number {
    let sum = 0
    for (const v of this.values.values()) if (Object.entries(match).every(([k, x]) => v.labels[k] === x)) sum += v.value
    return sum
  }
  lines(): string[] {
    return [...this.values.values()].map((v) => `${this.name}${labelText(v.labels)} ${number(v.value)}`)
  }
}

export class Gauge implements Family {
  readonly type = 'gauge'
  readonly name: string
  readonly help: string
  private readonly read: () => number
  constructor(name: string, help: string, read: () => number) {
    this.name = name
    this.help = help
    this.read = read
  }
  lines(): string[] {
    return [`${this.name} ${number(this.read())}`]
  }
}

export class Histogram implements Family {
  readonly type = 'histogram'
  readonly name: string
  readonly help: string
  readonly buckets: readonly number[]
  private readonly counts: number[]
  private sum = 0
  private count = 0
  constructor(name: string, help: string, buckets: readonly number[]) {
    this.name = name
    this.help = help
    this.buckets = [...buckets].sort((a, b) => a - b)
    this.counts = this.buckets.map(() => 0)
  }
  observe(value: number): void {
    this.sum += value
    this.count++
    this.buckets.forEach((b, i) => {
      if (value <= b) this.counts[i] = (this.counts[i] ?? 0) + 1
    })
  }
  get observations(): number {
    return this.count
  }
  lines(): string[] {
    return [
      ...this.buckets.map((b, i) => `${this.name}_bucket{le="${number(b)}"} ${this.counts[i] ?? 0}`),
      `${this.name}_bucket{le="+Inf"} ${this.count}`,
      `${this.name}_sum ${number(this.sum)}`,
      `${this.name}_count ${this.count}`,
    ]
  }
}

export class Registry {
  private readonly families: Family[] = []
  register<F extends Family>(family: F): F {
    this.families.push(family)
    return family
  }
  /** The exposition: HELP and TYPE, then the samples, for each family. */
  exposition(): string {
    return this.families.map((f) => [`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`, ...f.lines()].join('\n')).join('\n') + '\n'
  }
}

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

function labelText(labels: Labels): string {
  const entries = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  if (entries.length === 0) return ''
  return `{${entries.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`).join(',')}}`
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

function number(n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (n === Infinity) return '+Inf'
  if (n === -Infinity) return '-Inf'
  return String(n)
}

// ---- the watch mode's metrics ------------------------------------------------------------

/** Event-to-patch latency buckets, seconds: from a few milliseconds to well past the debounce. */
export const LATENCY_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

export interface WatchMetrics {
  readonly registry: Registry
  /** Per release run: result triggered|skipped|failed and the engine's reason. */
  readonly triggers: Counter
  readonly latency: Histogram
  /** Watch reopened: resource and reason (expired, gone, error). */
  readonly restarts: Counter
  readonly deletions: Counter
  /** Kubernetes Events not written because too many were waiting. */
  readonly eventsDropped: Counter
}

export interface WatchGauges {
  readonly queueDepth: () => number
  readonly lastSync: () => number
  readonly sources: () => number
  readonly releases: () => number
  readonly leader: () => number
  readonly ready: () => number
}

export function createWatchMetrics(gauges: WatchGauges, startedAt: number): WatchMetrics {
  const registry = new Registry()
  const p = 'helmrelease_trigger_watch'
  const triggers = registry.register(new Counter(`${p}_triggers_total`, 'Release runs by result (triggered, skipped, failed) and reason.'))
  const latency = registry.register(
    new Histogram(
      `${p}_event_to_patch_seconds`,
      'From a source change reaching the watch to the HelmRelease patch being accepted, debounce included.',
      LATENCY_BUCKETS,
    ),
  )
  const restarts = registry.register(
    new Counter(
      `${p}_watch_restarts_total`,
      'Watches reopened, by resource and reason (expired: the server ended it; gone: 410, listed again; error: dropped or refused, listed again after a backoff).',
    ),
  )
  const deletions = registry.register(new Counter(`${p}_source_deletions_total`, 'Watched ConfigMaps and Secrets deleted.'))
  const eventsDropped = registry.register(
    new Counter(`${p}_events_dropped_total`, 'Kubernetes Events not written because too many were already waiting (a burst of changes).'),
  )
  registry.register(new Gauge(`${p}_queue_depth`, 'Releases waiting for their debounce, a worker, or being patched.', gauges.queueDepth))
  registry.register(
    new Gauge(`${p}_last_sync_timestamp_seconds`, 'Unix time the view was last known fresh (a list, an event or a bookmark on every watch).', gauges.lastSync),
  )
  registry.register(new Gauge(`${p}_sources`, 'Labelled ConfigMaps and Secrets in view.', gauges.sources))
  registry.register(new Gauge(`${p}_releases`, 'HelmReleases in view.', gauges.releases))
  registry.register(new Gauge(`${p}_leader`, '1 while this replica may patch (leader, or leader election off).', gauges.leader))
  registry.register(new Gauge(`${p}_ready`, '1 once the initial sync is done.', gauges.ready))
  registry.register(new Gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => process.memoryUsage.rss()))
  registry.register(new Gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => startedAt / 1000))
  return { registry, triggers, latency, restarts, deletions, eventsDropped }
}
