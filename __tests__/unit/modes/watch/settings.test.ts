// The watch inputs: defaults, formats, and one-sentence errors. And the log line formats.
import { describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../../src/lib/errors.ts'
import { parseSettings } from '../../../../src/settings.ts'
import { createEventLog } from '../../../../src/modes/watch/log.ts'

function settings(inputs: Record<string, string>) {
  return parseSettings((name) => inputs[name] ?? '')
}

function error(inputs: Record<string, string>): string {
  try {
    settings(inputs)
  } catch (e) {
    if (e instanceof ConfigurationError) return e.message
    throw e
  }
  throw new Error('expected a ConfigurationError')
}

describe('watch settings', () => {
  it('has defaults for a single replica that serves nothing and runs until stopped', () => {
    expect(settings({ mode: 'watch' })).toMatchObject({
      mode: 'watch',
      debounceMs: 2_000,
      watchDurationMs: undefined,
      metricsAddress: undefined,
      logFormat: 'text',
      leaderElection: false,
      leaderElectionNamespace: 'flux-system',
      leaderElectionName: 'helmrelease-trigger-watch',
      recoverIntervalMs: undefined,
    })
  })

  it('reads durations, 0 debounce, addresses and the election inputs', () => {
    expect(
      settings({
        debounce: '0',
        'watch-duration': '1h',
        'recover-interval': '10m',
        'metrics-address': ':8080',
        'log-format': 'JSON',
        'leader-election': 'true',
        'leader-election-namespace': 'ops',
        'leader-election-name': 'hrt.watch',
      }),
    ).toMatchObject({
      debounceMs: 0,
      watchDurationMs: 3_600_000,
      recoverIntervalMs: 600_000,
      metricsAddress: { host: '', port: 8080 },
      logFormat: 'json',
      leaderElection: true,
      leaderElectionNamespace: 'ops',
      leaderElectionName: 'hrt.watch',
    })
    expect(settings({ 'metrics-address': '127.0.0.1:0' }).metricsAddress).toEqual({ host: '127.0.0.1', port: 0 })
    expect(settings({ 'metrics-address': '[::1]:9090' }).metricsAddress).toEqual({ host: '::1', port: 9090 })
  })

  it.each([
    [{ debounce: 'soon' }, "Input 'debounce' must be a duration like 5m, 90s or 1h30m (0 for none); got 'soon'."],
    [{ 'watch-duration': '0' }, "Input 'watch-duration' must be a duration like 5m, 90s or 1h30m; got '0'."],
    [{ 'metrics-address': '8080' }, "Input 'metrics-address' must be host:port or :port, such as :8080 or 127.0.0.1:9090; got '8080'."],
    [{ 'metrics-address': ':70000' }, "Input 'metrics-address' must be host:port or :port, such as :8080 or 127.0.0.1:9090; got ':70000'."],
    [{ 'log-format': 'xml' }, "Input 'log-format' must be one of text, json; got 'xml'."],
    [{ 'leader-election': 'yes' }, "Input 'leader-election' must be true or false; got 'yes'."],
    [
      { 'leader-election-name': 'Not Valid' },
      "Input 'leader-election-name' must be a Kubernetes object name (lowercase letters, digits, '-' and '.'); got 'Not Valid'.",
    ],
  ])('refuses %j with one sentence', (inputs, message) => {
    expect(error(inputs)).toBe(message)
  })
})

describe('watch logs', () => {
  it('writes one JSON object per event under json', () => {
    const lines: string[] = []
    const log = createEventLog('json', { write: (_l, line) => lines.push(line) }, () => Date.UTC(2026, 10, 22, 10, 0, 0))
    log.event('info', 'release triggered', { release: 'apps/api', latencyMs: 12, skipped: undefined })
    log.warning('careful')
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { time: '2026-11-22T10:00:00.000Z', level: 'info', msg: 'release triggered', release: 'apps/api', latencyMs: 12 },
      { time: '2026-11-22T10:00:00.000Z', level: 'warning', msg: 'careful' },
    ])
  })

  it('writes key=value text, quoting values with spaces, and names warnings', () => {
    const lines: string[] = []
    const log = createEventLog('text', { write: (_l, line) => lines.push(line) })
    log.event('info', 'release skipped', { release: 'apps/api', detail: 'spec.suspend is true' })
    log.event('warning', 'source deleted', { source: 'ConfigMap/apps/v' })
    expect(lines).toEqual(['release skipped release=apps/api detail="spec.suspend is true"', 'warning: source deleted source=ConfigMap/apps/v'])
  })
})
