// The hand-written Prometheus exposition: well-formed for a strict parser, escaped labels,
// cumulative histogram buckets, and every metric the watch mode promises.
import { describe, expect, it } from 'vitest'
import { Counter, createWatchMetrics, Histogram, Registry } from '../../../../src/modes/watch/metrics.ts'
import { parseMetrics } from '../../../../test/support/watch.ts'

const gauges = { queueDepth: () => 3, lastSync: () => 1_790_000_000.5, sources: () => 7, releases: () => 4, leader: () => 1, ready: () => 1 }

describe('Prometheus exposition', () => {
  it('writes HELP and TYPE before the samples of each family, and ends with a newline', () => {
    const registry = new Registry()
    registry.register(new Counter('demo_total', 'A demo.\nSecond line \\ backslash.')).inc({ result: 'ok' }, 2)
    const text = registry.exposition()
    expect(text).toBe('# HELP demo_total A demo.\\nSecond line \\\\ backslash.\n# TYPE demo_total counter\ndemo_total{result="ok"} 2\n')
  })

  it('escapes label values and sorts label names, so one series is one line', () => {
    const c = new Counter('x_total', 'x')
    c.inc({ b: 'say "hi"\n', a: 'back\\slash' })
    c.inc({ a: 'back\\slash', b: 'say "hi"\n' })
    expect(c.lines()).toEqual(['x_total{a="back\\\\slash",b="say \\"hi\\"\\n"} 2'])
    const parsed = parseMetrics(`# TYPE x_total counter\n${c.lines().join('\n')}\n`)
    expect(parsed.samples[0]?.labels).toEqual({ a: 'back\\slash', b: 'say "hi"\n' })
  })

  it('keeps histogram buckets cumulative, with +Inf, sum and count', () => {
    const h = new Histogram('lat_seconds', 'latency', [0.1, 1, 0.01])
    for (const v of [0.005, 0.05, 0.5, 5]) h.observe(v)
    const m = parseMetrics(new Registry().register(h) && ['# TYPE lat_seconds histogram', ...h.lines()].join('\n'))
    expect(m.samples.filter((s) => s.name === 'lat_seconds_bucket').map((s) => [s.labels['le'], s.value])).toEqual([
      ['0.01', 1],
      ['0.1', 2],
      ['1', 3],
      ['+Inf', 4],
    ])
    expect(m.value('lat_seconds_count')).toBe(4)
    expect(m.value('lat_seconds_sum')).toBeCloseTo(5.555)
  })

  it('exposes every watch metric, parseable, with the right types', () => {
    const metrics = createWatchMetrics(gauges, 1_790_000_000_000)
    metrics.triggers.inc({ result: 'triggered', reason: 'ReconcileRequested' })
    metrics.triggers.inc({ result: 'skipped', reason: 'Suspended' })
    metrics.latency.observe(0.042)
    metrics.restarts.inc({ watch: 'configmaps/trigger@all', reason: 'gone' })
    metrics.deletions.inc()
    const m = parseMetrics(metrics.registry.exposition())
    expect(Object.fromEntries(m.types)).toEqual({
      helmrelease_trigger_watch_triggers_total: 'counter',
      helmrelease_trigger_watch_event_to_patch_seconds: 'histogram',
      helmrelease_trigger_watch_watch_restarts_total: 'counter',
      helmrelease_trigger_watch_source_deletions_total: 'counter',
      helmrelease_trigger_watch_events_dropped_total: 'counter',
      helmrelease_trigger_watch_queue_depth: 'gauge',
      helmrelease_trigger_watch_last_sync_timestamp_seconds: 'gauge',
      helmrelease_trigger_watch_sources: 'gauge',
      helmrelease_trigger_watch_releases: 'gauge',
      helmrelease_trigger_watch_leader: 'gauge',
      helmrelease_trigger_watch_ready: 'gauge',
      process_resident_memory_bytes: 'gauge',
      process_start_time_seconds: 'gauge',
    })
    expect(m.value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(1)
    expect(m.value('helmrelease_trigger_watch_event_to_patch_seconds_bucket', { le: '0.05' })).toBe(1)
    expect(m.value('helmrelease_trigger_watch_event_to_patch_seconds_bucket', { le: '0.025' })).toBe(0)
    expect(m.value('helmrelease_trigger_watch_queue_depth')).toBe(3)
    expect(m.value('helmrelease_trigger_watch_last_sync_timestamp_seconds')).toBe(1_790_000_000.5)
    expect(m.value('process_start_time_seconds')).toBe(1_790_000_000)
    expect(metrics.triggers.total({ result: 'skipped' })).toBe(1)
  })
})
