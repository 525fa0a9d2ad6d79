// The pure pieces of watch mode's wiring: which reflectors run, when the view is complete and
// how fresh it is, what /readyz answers, what a release run counts and says, which sources a
// release records that are gone from view, what a recover pass logs, and the stop report.

import { describe, expect, it } from 'vitest'
import { keysFor } from '../../../../src/core/keys.ts'
import type { Digest } from '../../../../src/core/model.ts'
import { Reason, Status } from '../../../../src/engine/result.ts'
import { SkipReason } from '../../../../src/modes/trigger/action.ts'
import { Leadership } from '../../../../src/modes/watch/election.ts'
import { awayCandidates } from '../../../../src/modes/watch/gone.ts'
import { createWatchMetrics } from '../../../../src/modes/watch/metrics.ts'
import { readiness } from '../../../../src/modes/watch/ops.ts'
import { passCounts, recoverOptionsOf } from '../../../../src/modes/watch/recover-loop.ts'
import { reflectorSpecs } from '../../../../src/modes/watch/reflectors.ts'
import { refOf, resultNote, skipNote, watchTriggerOptions } from '../../../../src/modes/watch/release-run.ts'
import { watchReport } from '../../../../src/modes/watch/report.ts'
import { SyncState } from '../../../../src/modes/watch/sync.ts'
import { absentDigest, parseRelease, type WatchedRelease } from '../../../../src/modes/watch/view.ts'

const keys = keysFor('nebius.ai')

describe('reflectorSpecs', () => {
  it('runs both labels on both kinds and the releases, per namespace in scope', () => {
    const specs = reflectorSpecs(['a', 'b'], keys)
    expect(specs.map((s) => s.name)).toEqual([
      'configmaps/trigger@a',
      'configmaps/watch@a',
      'secrets/trigger@a',
      'secrets/watch@a',
      'helmreleases@a',
      'configmaps/trigger@b',
      'configmaps/watch@b',
      'secrets/trigger@b',
      'secrets/watch@b',
      'helmreleases@b',
    ])
    expect(specs[0]).toEqual({
      name: 'configmaps/trigger@a',
      scope: { resource: 'configmaps', namespace: 'a', labelSelector: `${keys.triggerLabel}=${keys.triggerLabelValue}` },
      watches: 'source',
      kind: 'ConfigMap',
      selector: 'trigger',
    })
    expect(specs[1]?.scope.labelSelector).toBe('reconcile.fluxcd.io/watch=Enabled')
    expect(specs[4]).toEqual({ name: 'helmreleases@a', scope: { resource: 'helmreleases', namespace: 'a', labelSelector: undefined }, watches: 'release' })
  })

  it('watches every namespace with one set when none is named', () => {
    const specs = reflectorSpecs([], keys)
    expect(specs.map((s) => s.name)).toEqual(['configmaps/trigger@all', 'configmaps/watch@all', 'secrets/trigger@all', 'secrets/watch@all', 'helmreleases@all'])
    expect(specs.every((s) => s.scope.namespace === undefined)).toBe(true)
  })
})

describe('SyncState', () => {
  it('is complete once every reflector listed once, and says so once', () => {
    const sync = new SyncState(2)
    expect(sync.synced('a', false, 1_000)).toBe('partial')
    expect(sync.ready).toBe(false)
    expect(sync.synced('a', false, 1_500)).toBe('partial') // the same one twice is not two
    expect(sync.synced('b', false, 2_000)).toBe('complete')
    expect(sync.ready).toBe(true)
    expect(sync.synced('b', true, 3_000)).toBe('relist')
    expect(sync.ready).toBe(true)
  })

  it('reports the stalest reflector, and nothing before the view is complete', () => {
    const sync = new SyncState(2)
    sync.synced('a', false, 4_000)
    expect(sync.lastSyncSeconds()).toBe(0)
    sync.synced('b', false, 6_000)
    expect(sync.lastSyncSeconds()).toBe(4)
    sync.fresh('a', 9_000)
    expect(sync.lastSyncSeconds()).toBe(6)
  })
})

describe('readiness', () => {
  it.each([
    [false, true, undefined, false, 'initial sync in progress'],
    [true, true, undefined, true, 'ok: synced'],
    [true, true, 'me', true, 'ok: synced; leading'],
    [true, false, 'other', true, 'ok: synced; standing by (leader: other)'],
    [true, false, '', true, 'ok: synced; standing by (leader: none)'],
  ] as const)('ready %s, leading %s, holder %s', (ready, leading, holder, ok, body) => {
    expect(readiness(ready, leading, holder)).toEqual({ ok, body })
  })
})

describe('Leadership', () => {
  it('leads from the start without election, and stands by with it until the Lease is held', () => {
    expect(new Leadership(false).isLeading()).toBe(true)
    expect(new Leadership(false).holder).toBeUndefined()
    expect(new Leadership(true).isLeading()).toBe(false)
  })
})

describe('a release run', () => {
  it('splits a release key at its first slash', () => {
    expect(refOf('apps/web')).toEqual({ namespace: 'apps', name: 'web' })
  })

  it('never forces and never re-reads the sources (their watch queues a newer change)', () => {
    expect(watchTriggerOptions(keys, true)).toMatchObject({ force: false, reset: true, checkSuperseded: false, requestedBy: 'by helmrelease-trigger watch' })
  })

  it('says nothing of a release found up to date by a pass, but counts it after a change', () => {
    const upToDate = { action: 'skip', reason: SkipReason.UpToDate, message: 'up to date' } as const
    expect(skipNote('apps/web', upToDate, undefined)).toBeUndefined()
    expect(skipNote('apps/web', upToDate, 5)).toEqual({
      result: 'skipped',
      reason: SkipReason.UpToDate,
      level: 'info',
      message: 'release skipped',
      fields: { release: 'apps/web', reason: SkipReason.UpToDate, detail: 'up to date' },
    })
    expect(skipNote('apps/web', { action: 'skip', reason: SkipReason.Suspended, message: 'suspended' }, undefined)?.reason).toBe(SkipReason.Suspended)
  })

  it.each([
    [Status.Failed, 'none', 'failed', 'error', 'release trigger failed'],
    [Status.TimedOut, 'none', 'failed', 'error', 'release trigger failed'],
    [Status.Skipped, 'warning', 'skipped', 'warning', 'release skipped'],
    [Status.Skipped, 'none', 'skipped', 'info', 'release skipped'],
  ] as const)('an engine result %s (severity %s) counts as %s', (status, severity, result, level, message) => {
    expect(resultNote('apps/web', { status, severity, reason: Reason.TimedOut, message: 'm' })).toEqual({
      result,
      reason: Reason.TimedOut,
      level,
      message,
      fields: { release: 'apps/web', reason: Reason.TimedOut, detail: 'm' },
    })
  })
})

describe('awayCandidates', () => {
  const digest = (c: string): Digest => `sha256:${c.repeat(64)}`
  const release = (namespace: string, name: string, recorded: Record<string, string>): WatchedRelease => {
    const r = parseRelease({ metadata: { namespace, name, resourceVersion: '1', annotations: { [keys.configDigest]: JSON.stringify(recorded) } }, spec: {} })
    if (r === undefined) throw new Error('bad release')
    return r
  }

  it('names each recorded source missing from view once, with every release recording it', () => {
    const releases = [
      release('apps', 'a', { 'ConfigMap/apps/gone': digest('1'), 'ConfigMap/apps/here': digest('2') }),
      release('apps', 'b', { 'ConfigMap/apps/gone': digest('3'), 'Secret/other/away': digest('4') }),
    ]
    const away = awayCandidates(releases, (id) => id === 'ConfigMap/apps/here', keys.configDigest, absentDigest(true), [])
    expect(away).toEqual([
      {
        ref: { kind: 'ConfigMap', namespace: 'apps', name: 'gone', id: 'ConfigMap/apps/gone' },
        recordedBy: [
          { namespace: 'apps', name: 'a' },
          { namespace: 'apps', name: 'b' },
        ],
      },
      { ref: { kind: 'Secret', namespace: 'other', name: 'away', id: 'Secret/other/away' }, recordedBy: [{ namespace: 'apps', name: 'b' }] },
    ])
  })

  it('leaves out deletions already handled, sources outside the watched namespaces, and ids that are not sources', () => {
    const releases = [release('apps', 'a', { 'ConfigMap/apps/handled': absentDigest(true), 'Secret/other/away': digest('4'), nonsense: digest('5') })]
    expect(awayCandidates(releases, () => false, keys.configDigest, absentDigest(true), ['apps'])).toEqual([])
  })
})

describe('recover in watch mode', () => {
  it('never waits for the outcome and reads nothing else from the settings', () => {
    const settings = {
      annotationPrefix: 'p',
      recoverPatterns: [],
      recoverMaxAttempts: 3,
      recoverBackoffMs: 1,
      namespaces: ['a'],
      maxConcurrency: 2,
      dryRun: true,
      timeoutMs: 9,
      extra: 'not copied',
    }
    expect(recoverOptionsOf(settings)).toEqual({
      annotationPrefix: 'p',
      recoverPatterns: [],
      recoverMaxAttempts: 3,
      recoverBackoffMs: 1,
      namespaces: ['a'],
      maxConcurrency: 2,
      dryRun: true,
      wait: false,
      timeoutMs: 9,
    })
  })

  it('counts a pass by status', () => {
    const results = [Status.Triggered, Status.Triggered, Status.Skipped, Status.Failed, Status.TimedOut].map((status) => ({ status }))
    expect(passCounts(results)).toEqual({ recovered: 2, skipped: 1, failed: 1 })
  })
})

describe('watchReport', () => {
  it('counts dry runs as triggered and only real restarts', () => {
    const metrics = createWatchMetrics({ queueDepth: () => 0, lastSync: () => 0, sources: () => 0, releases: () => 0, leader: () => 1, ready: () => 1 }, 0)
    metrics.triggers.inc({ result: 'triggered', reason: 'ReconcileRequested' }, 3)
    metrics.triggers.inc({ result: 'dry-run', reason: 'ReconcileRequested' })
    metrics.triggers.inc({ result: 'skipped', reason: 'Suspended' }, 2)
    metrics.triggers.inc({ result: 'failed', reason: 'Error' })
    metrics.deletions.inc()
    metrics.restarts.inc({ watch: 'w', reason: 'expired' }, 5)
    metrics.restarts.inc({ watch: 'w', reason: 'gone' })
    metrics.restarts.inc({ watch: 'w', reason: 'error' }, 2)
    expect(watchReport(metrics, 1234, 'signal')).toEqual({
      triggered: 4,
      skipped: 2,
      failed: 1,
      deletions: 1,
      restarts: 3,
      durationMs: 1234,
      stoppedBy: 'signal',
    })
  })
})
