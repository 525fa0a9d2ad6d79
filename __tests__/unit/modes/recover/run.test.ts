import { describe, expect, it } from 'vitest'
import { decideRecovery, runRecover, type RecoveryPolicy } from '../../../../src/modes/recover/run.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { parseSettings } from '../../../../src/settings.ts'
import { outputsOf, summaryMarkdown } from '../../../../src/modes/trigger/report.ts'
import { ConfigurationError } from '../../../../src/lib/errors.ts'
import { FakeClock, FakeCluster } from '../../../../test/support/fakes.ts'
import { tableUnder } from '../../../../test/support/markdown.ts'

const keys = keysFor('nebius.ai')
const settings = parseSettings(() => '')
const policy: RecoveryPolicy = { patterns: settings.recoverPatterns, maxAttempts: 3, backoffMs: 300_000, keys }
const NOW = Date.UTC(2026, 10, 22, 10, 0, 0)

function failing(message: string, extra: { reason?: string; stalled?: boolean; annotations?: Record<string, string>; suspend?: boolean } = {}) {
  const conditions = [{ type: 'Ready', status: 'False', reason: extra.reason ?? 'InstallFailed', message }]
  if (extra.stalled) conditions.push({ type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: 'retries exhausted' })
  return { conditions, history: [{ version: 1, status: 'failed' }] }
}

function release(status: Record<string, unknown>, annotations: Record<string, string> = {}, suspend = false) {
  return toHelmRelease({ metadata: { namespace: 'apps', name: 'app', resourceVersion: '7', annotations }, spec: { suspend }, status })
}

describe('decideRecovery', () => {
  it.each([
    'Helm upgrade failed: context deadline exceeded',
    'failed to fetch chart: dial tcp 10.0.0.1:443: i/o timeout',
    'net/http: TLS handshake timeout',
    'read tcp: connection reset by peer',
    'dial tcp 127.0.0.1:6443: connect: connection refused',
    'GET https://registry.example/v2/: 429 Too Many Requests',
    'unexpected status code 503 Service Unavailable',
    'first line\nHelm install failed: Internal Server Error',
  ])('recovers a release failed with %j', (message) => {
    expect(decideRecovery(release(failing(message)), NOW, policy)).toMatchObject({ action: 'recover', attempt: 1 })
  })

  it.each([
    "values don't meet the specifications of the schema",
    'template: demo/templates/cm.yaml:1: invalid value',
    'chart "nope" version "9.9.9" not found',
  ])('leaves a non-transient failure alone and lists it: %j', (message) => {
    expect(decideRecovery(release(failing(message)), NOW, policy)).toMatchObject({ action: 'skip', reason: 'NotTransient', severity: 'warning' })
  })

  it('recovers a Stalled release whatever its message', () => {
    expect(decideRecovery(release(failing('invalid value', { stalled: true })), NOW, policy)).toMatchObject({
      action: 'recover',
      why: expect.stringContaining('stalled'),
    })
    expect(decideRecovery(release(failing('whatever', { reason: 'RetriesExceeded' })), NOW, policy)).toMatchObject({ action: 'recover' })
  })

  it('skips suspended releases', () => {
    expect(decideRecovery(release(failing('context deadline exceeded'), {}, true), NOW, policy)).toMatchObject({ action: 'skip', reason: 'Suspended' })
  })

  it('honours the backoff, doubling after each attempt', () => {
    const at = (ms: number) => new Date(NOW - ms).toISOString().replace('Z', '000000Z')
    const after1 = (ago: number) =>
      decideRecovery(release(failing('i/o timeout'), { 'nebius.ai/recover-attempts': '1', 'nebius.ai/recover-at': at(ago) }), NOW, policy)
    expect(after1(60_000)).toMatchObject({ action: 'skip', reason: 'BackingOff', severity: 'none' })
    expect(after1(300_000)).toMatchObject({ action: 'recover', attempt: 2 })
    const after2 = (ago: number) =>
      decideRecovery(release(failing('i/o timeout'), { 'nebius.ai/recover-attempts': '2', 'nebius.ai/recover-at': at(ago) }), NOW, policy)
    expect(after2(300_000)).toMatchObject({ action: 'skip', reason: 'BackingOff' })
    expect(after2(600_000)).toMatchObject({ action: 'recover', attempt: 3 })
  })

  it('stops when the budget is spent, as an error', () => {
    const d = decideRecovery(
      release(failing('i/o timeout'), { 'nebius.ai/recover-attempts': '3', 'nebius.ai/recover-at': '2020-01-01T00:00:00.000000000Z' }),
      NOW,
      policy,
    )
    expect(d).toMatchObject({ action: 'skip', reason: 'BudgetExhausted', severity: 'error' })
  })

  it('resets the budget of a release that is Ready again, and ignores healthy or busy ones', () => {
    const ready = { conditions: [{ type: 'Ready', status: 'True', reason: 'UpgradeSucceeded', message: '' }] }
    expect(decideRecovery(release(ready, { 'nebius.ai/recover-attempts': '2' }), NOW, policy)).toEqual({ action: 'reset-budget' })
    expect(decideRecovery(release(ready), NOW, policy)).toEqual({ action: 'ignore' })
    expect(
      decideRecovery(release({ conditions: [{ type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'context deadline exceeded' }] }), NOW, policy),
    ).toEqual({ action: 'ignore' })
  })
})

describe('recover settings', () => {
  const read = (inputs: Record<string, string>) => parseSettings((n) => inputs[n] ?? '')
  it('reads patterns one per line (commas belong to the expression), case-insensitive', () => {
    const s = read({ 'recover-patterns': 'quota{1,2} exceeded\n# comment\n  oops  ' })
    expect(s.recoverPatterns.map((p) => p.source)).toEqual(['quota{1,2} exceeded', 'oops'])
    expect(s.recoverPatterns[1]?.test('OOPS')).toBe(true)
  })
  it('refuses an invalid expression, a bad budget or backoff, a bad namespace', () => {
    expect(() => read({ 'recover-patterns': '(' })).toThrow(ConfigurationError)
    expect(() => read({ 'recover-max-attempts': '0' })).toThrow(/recover-max-attempts/)
    expect(() => read({ 'recover-backoff': 'soon' })).toThrow(/recover-backoff/)
    expect(() => read({ namespaces: 'apps, Bad_NS' })).toThrow(/namespaces.*Bad_NS/)
    expect(read({ namespaces: 'b\na, b', 'from-git': 'true' })).toMatchObject({ namespaces: ['a', 'b'], fromGit: true })
  })
})

describe('runRecover against the fake cluster', () => {
  it('patches requestedAt and resetAt with one token and the budget, skips what it must, and reports', async () => {
    const cluster = new FakeCluster()
      .addRelease('apps', 'transient', {}, { status: failing('context deadline exceeded') })
      .addRelease('apps', 'broken', {}, { status: failing('invalid value') })
      .addRelease('apps', 'paused', { suspend: true }, { status: failing('i/o timeout') })
      .addRelease(
        'apps',
        'healthy',
        {},
        { status: { conditions: [{ type: 'Ready', status: 'True' }] }, annotations: { 'nebius.ai/recover-attempts': '1', 'nebius.ai/recover-at': 'x' } },
      )
      .addRelease('other', 'transient', {}, { status: failing('i/o timeout') })
    const report = await runRecover(
      { ...settings, namespaces: ['apps'] },
      { connect: async () => cluster, clock: new FakeClock(NOW), log: { info: () => undefined, warning: () => undefined } },
    )
    const byName = Object.fromEntries(report.results.map((r) => [r.name, r]))
    expect(byName['transient']).toMatchObject({ namespace: 'apps', status: 'Triggered', reason: 'RecoveryRequested' })
    expect(byName['broken']).toMatchObject({ status: 'Skipped', reason: 'NotTransient' })
    expect(byName['paused']).toMatchObject({ status: 'Skipped', reason: 'Suspended' })
    expect(byName['healthy']).toMatchObject({ status: 'Skipped', reason: 'BudgetReset' })
    const a = cluster.release('apps', 'transient').annotations
    expect(a['reconcile.fluxcd.io/requestedAt']).toBe(byName['transient']?.token)
    expect(a['reconcile.fluxcd.io/resetAt']).toBe(a['reconcile.fluxcd.io/requestedAt'])
    expect(a['nebius.ai/recover-attempts']).toBe('1')
    expect(a['nebius.ai/recover-at']).toBe(a['reconcile.fluxcd.io/requestedAt'])
    expect(cluster.release('apps', 'healthy').annotations).toEqual({})
    expect(cluster.release('other', 'transient').annotations).toEqual({})
    expect(cluster.events.map((e) => e.reason)).toEqual(['RecoveryRequested'])
    expect(outputsOf(report).plan).toBeNull()
    expect(tableUnder(summaryMarkdown(report), 'Releases').map((row) => row[1])).toContain('apps/transient')
    expect(summaryMarkdown(report)).not.toContain('Range:')
  })
})
