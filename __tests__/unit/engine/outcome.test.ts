// Step 6: the pure judgement of one observed release (assess, lastSeen) and the waiter that
// watches the releases, against a hand-written ClusterClient and a clock that never waits.

import { describe, expect, it } from 'vitest'
import { TransientError } from '../../../src/lib/errors.ts'
import type { ClusterClient } from '../../../src/kube/cluster.ts'
import { toHelmRelease, type HelmRelease } from '../../../src/core/helmrelease.ts'
import type { Digest, PlannedRelease } from '../../../src/core/model.ts'
import { assess, createOutcomeWaiter, lastSeen } from '../../../src/engine/outcome.ts'
import { Status, type ReleaseResult, controllerReason } from '../../../src/engine/result.ts'
import type { Clock, Logger } from '../../../src/engine/ports.ts'
import type { Triggered } from '../../../src/engine/outcome.ts'
import { chartChange } from '../../../test/support/reports.ts'

const TOKEN = '2026-11-22T10:00:00.123000000Z'
const OLD_TOKEN = '2026-11-21T09:00:00.000000000Z'
const DIGEST: Digest = `sha256:${'a'.repeat(64)}`

interface Revision {
  readonly version: number
  readonly status: string
  readonly configDigest?: string
}

interface ReleaseState {
  readonly namespace?: string
  readonly name?: string
  readonly generation?: number
  readonly observedGeneration?: number
  readonly lastHandledReconcileAt?: string
  /** The reconcile.fluxcd.io/requestedAt annotation: the request last written. */
  readonly requestedAt?: string
  readonly lastHandledForceAt?: string
  readonly lastHandledResetAt?: string
  /** [status, reason, message] */
  readonly ready?: readonly [string, string?, string?]
  readonly reconciling?: readonly [string, string?]
  readonly stalled?: boolean
  readonly history?: readonly Revision[]
}

const DEPLOYED_1: Revision = { version: 1, status: 'deployed', configDigest: 'sha256:values-1' }
const SUPERSEDED_1: Revision = { ...DEPLOYED_1, status: 'superseded' }
const DEPLOYED_2: Revision = { version: 2, status: 'deployed', configDigest: 'sha256:values-2' }

/** A HelmRelease as the API returns it, read through toHelmRelease like the engine does. */
function hr(s: ReleaseState = {}): HelmRelease {
  const conditions = [
    ...(s.ready === undefined ? [] : [{ type: 'Ready', status: s.ready[0], reason: s.ready[1] ?? '', message: s.ready[2] ?? '' }]),
    ...(s.reconciling === undefined ? [] : [{ type: 'Reconciling', status: s.reconciling[0], reason: 'Progressing', message: s.reconciling[1] ?? '' }]),
    ...(s.stalled === true ? [{ type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: 'Failed to upgrade after 1 attempt(s)' }] : []),
  ]
  return toHelmRelease({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: {
      namespace: s.namespace ?? 'apps',
      name: s.name ?? 'app',
      uid: 'u',
      resourceVersion: '1',
      generation: s.generation ?? 2,
      ...(s.requestedAt === undefined ? {} : { annotations: { 'reconcile.fluxcd.io/requestedAt': s.requestedAt } }),
    },
    spec: {},
    status: {
      observedGeneration: s.observedGeneration ?? s.generation ?? 2,
      ...(s.lastHandledReconcileAt === undefined ? {} : { lastHandledReconcileAt: s.lastHandledReconcileAt }),
      ...(s.lastHandledForceAt === undefined ? {} : { lastHandledForceAt: s.lastHandledForceAt }),
      ...(s.lastHandledResetAt === undefined ? {} : { lastHandledResetAt: s.lastHandledResetAt }),
      conditions,
      history: (s.history ?? [DEPLOYED_1]).map((h) => ({ chartName: 'app', chartVersion: '1.0.0', ...h })),
    },
  })
}

function triggered(o: { namespace?: string; name?: string; force?: boolean; reset?: boolean; before?: HelmRelease; startedAt?: number } = {}): Triggered {
  const planned: PlannedRelease = {
    namespace: o.namespace ?? 'apps',
    name: o.name ?? 'app',
    sources: [{ id: 'ConfigMap/apps/app-values', digest: DIGEST, encrypted: false }],
  }
  const before = o.before ?? hr({ namespace: planned.namespace, name: planned.name, lastHandledReconcileAt: OLD_TOKEN, ready: ['True', 'UpgradeSucceeded'] })
  return { planned, release: before, before, token: TOKEN, force: o.force ?? false, reset: o.reset ?? false, startedAt: o.startedAt ?? 1_000 }
}

/** Handled by helm-controller: token seen, generation observed, Ready decided. */
const handled = (s: ReleaseState): ReleaseState => ({
  lastHandledReconcileAt: TOKEN,
  ready: ['True', 'UpgradeSucceeded', 'Helm upgrade succeeded for release apps/app.v2 with chart app@1.0.0'],
  ...s,
})

describe('assess', () => {
  const pending: readonly (readonly [string, Triggered, ReleaseState])[] = [
    ['token not yet handled', triggered(), { lastHandledReconcileAt: OLD_TOKEN, ready: ['True', 'UpgradeSucceeded'] }],
    ['no token handled ever', triggered(), { ready: ['True'] }],
    ['handled, but observedGeneration behind', triggered(), handled({ generation: 3, observedGeneration: 2, history: [DEPLOYED_2, SUPERSEDED_1] })],
    ['handled, Reconciling=True', triggered(), handled({ reconciling: ['True', 'Running upgrade'], history: [DEPLOYED_2, SUPERSEDED_1] })],
    ['handled, Ready=Unknown', triggered(), handled({ ready: ['Unknown', 'Progressing', 'Reconciliation in progress'] })],
    ['handled, no Ready condition yet', triggered(), { lastHandledReconcileAt: TOKEN }],
    ['forceAt sent, not yet handled', triggered({ force: true }), handled({ lastHandledForceAt: OLD_TOKEN, history: [DEPLOYED_2, SUPERSEDED_1] })],
    ['forceAt sent, never handled', triggered({ force: true }), handled({ history: [DEPLOYED_2, SUPERSEDED_1] })],
    [
      'resetAt sent, not yet handled',
      triggered({ reset: true }),
      handled({ lastHandledResetAt: OLD_TOKEN, ready: ['False', 'RetriesExceeded', 'old failure'] }),
    ],
    ['force and reset sent, only force handled', triggered({ force: true, reset: true }), handled({ lastHandledForceAt: TOKEN })],
  ]

  it.each(pending)('%s → undefined (keep waiting)', (_, t, state) => {
    expect(assess(t, hr(state), 5_000)).toBeUndefined()
  })

  const base = { namespace: 'apps', name: 'app', sources: triggered().planned.sources, token: TOKEN, durationMs: 4_000 }

  const done: readonly (readonly [string, Triggered, ReleaseState, ReleaseResult])[] = [
    [
      'Ready=False → Failed with helm-controller’s reason and message',
      triggered(),
      handled({
        ready: ['False', 'UpgradeFailed', "Helm upgrade failed for release apps/app with chart app@1.0.0: values don't meet the specifications of the schema"],
        history: [{ version: 2, status: 'failed' }, DEPLOYED_1],
      }),
      {
        ...base,
        status: Status.Failed,
        reason: controllerReason('UpgradeFailed'),
        message: "Helm upgrade failed for release apps/app with chart app@1.0.0: values don't meet the specifications of the schema",
        revisionBefore: 1,
        revisionAfter: 2,
        severity: 'error',
      },
    ],
    [
      'Ready=False without reason or message → Failed NotReady',
      triggered(),
      handled({ ready: ['False'] }),
      { ...base, status: Status.Failed, reason: 'NotReady', message: 'Ready=False', revisionBefore: 1, revisionAfter: 1, severity: 'error' },
    ],
    [
      'Ready=False wins over a deployed new revision',
      triggered(),
      handled({ ready: ['False', 'TestFailed', 'helm test failed'], history: [DEPLOYED_2, SUPERSEDED_1] }),
      {
        ...base,
        status: Status.Failed,
        reason: controllerReason('TestFailed'),
        message: 'helm test failed',
        revisionBefore: 1,
        revisionAfter: 2,
        severity: 'error',
      },
    ],
    [
      'new revision deployed → Upgraded with revisions before and after',
      triggered(),
      handled({ history: [DEPLOYED_2, SUPERSEDED_1] }),
      {
        ...base,
        status: Status.Upgraded,
        reason: 'UpgradeSucceeded',
        message: 'Helm upgrade succeeded for release apps/app.v2 with chart app@1.0.0',
        revisionBefore: 1,
        revisionAfter: 2,
        severity: 'none',
      },
    ],
    [
      'new revision, Ready without reason or message → Upgraded with defaults',
      triggered(),
      handled({ ready: ['True'], history: [DEPLOYED_2, SUPERSEDED_1] }),
      { ...base, status: Status.Upgraded, reason: 'UpgradeSucceeded', message: 'revision 2 deployed', revisionBefore: 1, revisionAfter: 2, severity: 'none' },
    ],
    [
      'first install (no revision before) → Upgraded',
      triggered({ before: hr({ ready: ['False', 'InstallFailed'], history: [] }) }),
      handled({ ready: ['True', 'InstallSucceeded', 'Helm install succeeded'], history: [{ version: 1, status: 'deployed' }] }),
      {
        ...base,
        status: Status.Upgraded,
        reason: controllerReason('InstallSucceeded'),
        message: 'Helm install succeeded',
        revisionBefore: undefined,
        revisionAfter: 1,
        severity: 'none',
      },
    ],
    [
      'same revision, new configDigest → Upgraded',
      triggered(),
      handled({ history: [{ ...DEPLOYED_1, configDigest: 'sha256:values-2' }] }),
      {
        ...base,
        status: Status.Upgraded,
        reason: 'UpgradeSucceeded',
        message: 'Helm upgrade succeeded for release apps/app.v2 with chart app@1.0.0',
        revisionBefore: 1,
        revisionAfter: 1,
        severity: 'none',
      },
    ],
    [
      'same revision and configDigest → Unchanged',
      triggered(),
      handled({ history: [DEPLOYED_1] }),
      {
        ...base,
        status: Status.Unchanged,
        reason: 'Unchanged',
        message: 'reconciled; values unchanged, no new Helm revision',
        revisionBefore: 1,
        revisionAfter: 1,
        severity: 'none',
      },
    ],
    [
      'latest history entry not deployed → Failed NotDeployed',
      triggered(),
      handled({ history: [{ version: 2, status: 'pending-upgrade' }, DEPLOYED_1] }),
      {
        ...base,
        status: Status.Failed,
        reason: 'NotDeployed',
        message: 'latest Helm release is pending-upgrade, not deployed',
        revisionBefore: 1,
        revisionAfter: 2,
        severity: 'error',
      },
    ],
    [
      'no history at all → Failed NotDeployed',
      triggered(),
      handled({ history: [] }),
      {
        ...base,
        status: Status.Failed,
        reason: 'NotDeployed',
        message: 'latest Helm release is missing, not deployed',
        revisionBefore: 1,
        revisionAfter: undefined,
        severity: 'error',
      },
    ],
    [
      'force and reset both handled → judged',
      triggered({ force: true, reset: true }),
      handled({ lastHandledForceAt: TOKEN, lastHandledResetAt: TOKEN, history: [DEPLOYED_2, SUPERSEDED_1] }),
      {
        ...base,
        status: Status.Upgraded,
        reason: 'UpgradeSucceeded',
        message: 'Helm upgrade succeeded for release apps/app.v2 with chart app@1.0.0',
        revisionBefore: 1,
        revisionAfter: 2,
        severity: 'none',
      },
    ],
  ]

  it.each(done)('%s', (_, t, state, expected) => {
    expect(assess(t, hr(state), 5_000)).toEqual(expected)
  })

  it('calls Ready=False Failed although Reconciling stays True while helm-controller retries on its own', () => {
    const state = handled({ ready: ['False', 'UpgradeFailed', 'Helm upgrade failed: values rejected'], reconciling: ['True', "Running 'upgrade' action"] })
    expect(assess(triggered(), hr(state), 5_000)).toMatchObject({
      status: Status.Failed,
      reason: controllerReason('UpgradeFailed'),
      message: 'Helm upgrade failed: values rejected (helm-controller keeps retrying; 0 failures so far)',
    })
    expect(assess(triggered(), hr({ ...state, stalled: true }), 5_000)?.message).toBe(
      'Helm upgrade failed: values rejected (stalled: helm-controller will not retry until reset)',
    )
  })

  it('waits while Ready=True but a Reconciling condition is still True', () => {
    expect(assess(triggered(), hr(handled({ reconciling: ['True', 'Running upgrade'], history: [DEPLOYED_2, SUPERSEDED_1] })), 5_000)).toBeUndefined()
  })

  it('ignores a Reconciling condition that is False', () => {
    expect(assess(triggered(), hr(handled({ reconciling: ['False'], history: [DEPLOYED_2, SUPERSEDED_1] })), 5_000)?.status).toBe(Status.Upgraded)
  })
})

describe('lastSeen', () => {
  it.each([
    ['never seen', undefined, 'release not seen since the patch'],
    ['token not handled, no Ready', hr({}), `lastHandledReconcileAt=none (waiting for ${TOKEN}); no Ready condition`],
    [
      'older token handled, Ready=True',
      hr({ lastHandledReconcileAt: OLD_TOKEN, ready: ['True', 'UpgradeSucceeded', 'Helm upgrade succeeded'] }),
      `lastHandledReconcileAt=${OLD_TOKEN} (waiting for ${TOKEN}); Ready=True UpgradeSucceeded: Helm upgrade succeeded`,
    ],
    [
      'token handled, still reconciling',
      hr({ lastHandledReconcileAt: TOKEN, ready: ['Unknown', 'Progressing', 'Running upgrade'], reconciling: ['True', 'Running upgrade action'] }),
      'token handled; Ready=Unknown Progressing: Running upgrade; Reconciling: Running upgrade action',
    ],
    ['Ready without reason or message', hr({ lastHandledReconcileAt: TOKEN, ready: ['Unknown'] }), 'token handled; Ready=Unknown'],
  ] as const)('%s', (_, live, expected) => {
    expect(lastSeen(triggered(), live)).toBe(expected)
  })
})

// ---- The waiter ------------------------------------------------------------------------

/** One watch connection: what the server sends, then how it ends. */
type Session = { readonly send: readonly HelmRelease[]; readonly then: 'end' | 'hold' } | { readonly fail: Error }

/**
 * A ClusterClient whose watches play scripted sessions per namespace, one per call; the last
 * session repeats (a server that keeps ending the watch the same way). 'hold' keeps the watch
 * open until the caller aborts it, as the real one does.
 */
class ScriptedCluster implements ClusterClient {
  readonly server = 'https://fake.invalid:6443'
  readonly watchCalls: string[] = []
  readonly aborted: string[] = []
  private readonly scripts: Map<string, readonly Session[]>

  constructor(scripts: Readonly<Record<string, readonly Session[]>>) {
    this.scripts = new Map(Object.entries(scripts))
  }

  async watchReleases(namespace: string, onRelease: (release: HelmRelease) => void, signal: AbortSignal): Promise<void> {
    const sessions = this.scripts.get(namespace) ?? [{ send: [], then: 'end' }]
    const calls = this.watchCalls.filter((n) => n === namespace).length
    this.watchCalls.push(namespace)
    const session = sessions[Math.min(calls, sessions.length - 1)]
    if (session === undefined) throw new Error(`no session scripted for ${namespace}`)
    await Promise.resolve()
    if ('fail' in session) throw session.fail
    for (const release of session.send) {
      if (signal.aborted) break
      onRelease(release)
    }
    if (session.then === 'hold' && !signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
    }
    if (signal.aborted) this.aborted.push(namespace)
  }

  getRelease(): never {
    throw new Error('not used by the outcome waiter')
  }
  listReleases(): never {
    throw new Error('not used by the outcome waiter')
  }
  patchRelease(): never {
    throw new Error('not used by the outcome waiter')
  }
  getSource(): never {
    throw new Error('not used by the outcome waiter')
  }
  listSources(): never {
    throw new Error('not used by the outcome waiter')
  }
  applyObject(): never {
    throw new Error('not used by the outcome waiter')
  }
  getKustomizationRevision(): never {
    throw new Error('not used by the outcome waiter')
  }
  getBootstrap(): never {
    throw new Error('not used by the outcome waiter')
  }
  getChartSource(): never {
    throw new Error('not used by the outcome waiter')
  }
  createSecret(): never {
    throw new Error('not used by the outcome waiter')
  }
  recordEvent(): never {
    throw new Error('not used by the outcome waiter')
  }
}

/** Time moves only when someone sleeps; sleeping returns at once. */
class FakeClock implements Clock {
  readonly sleeps: number[] = []
  constructor(private time: number) {}
  now(): number {
    return this.time
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms)
    this.time += ms
  }
}

class RecordingLog implements Logger {
  readonly infos: string[] = []
  readonly warnings: string[] = []
  info(message: string): void {
    this.infos.push(message)
  }
  warning(message: string): void {
    this.warnings.push(message)
  }
}

const START = 10_000
const TIMEOUT = 5_000

async function waitFor(cluster: ScriptedCluster, ts: readonly Triggered[]) {
  const clock = new FakeClock(START)
  const log = new RecordingLog()
  const results = await createOutcomeWaiter({ clock, log }).wait(cluster, ts, START + TIMEOUT)
  return { results, clock, log }
}

const NOT_HANDLED = hr({ lastHandledReconcileAt: OLD_TOKEN, ready: ['True', 'UpgradeSucceeded', 'Helm upgrade succeeded for release apps/app.v1'] })
const RECONCILING = hr({ lastHandledReconcileAt: TOKEN, ready: ['Unknown', 'Progressing', 'Running upgrade'], reconciling: ['True', 'Running upgrade action'] })
const UPGRADED = hr(handled({ history: [DEPLOYED_2, SUPERSEDED_1] }))

describe('createOutcomeWaiter', () => {
  it('reports Upgraded once the watch shows the token handled, and closes the watch', async () => {
    const cluster = new ScriptedCluster({ apps: [{ send: [NOT_HANDLED, RECONCILING, UPGRADED], then: 'hold' }] })
    const t = triggered({ startedAt: START - 2_000 })
    const { results, clock, log } = await waitFor(cluster, [t])
    expect(results).toEqual([
      {
        namespace: 'apps',
        name: 'app',
        sources: t.planned.sources,
        token: TOKEN,
        status: Status.Upgraded,
        reason: 'UpgradeSucceeded',
        message: 'Helm upgrade succeeded for release apps/app.v2 with chart app@1.0.0',
        revisionBefore: 1,
        revisionAfter: 2,
        durationMs: 2_000,
        severity: 'none',
      },
    ])
    expect(cluster.watchCalls).toEqual(['apps'])
    expect(cluster.aborted).toEqual(['apps'])
    expect(clock.sleeps).toEqual([])
    expect(log.warnings).toEqual([])
  })

  it('reports TimedOut, naming what was last seen, when helm-controller never handles the token', async () => {
    const cluster = new ScriptedCluster({ apps: [{ send: [NOT_HANDLED], then: 'end' }] })
    const t = triggered({ startedAt: START })
    const { results, clock } = await waitFor(cluster, [t])
    expect(results).toEqual([
      {
        namespace: 'apps',
        name: 'app',
        sources: t.planned.sources,
        token: TOKEN,
        status: Status.TimedOut,
        reason: 'TimedOut',
        message: `helm-controller did not finish within the timeout; last seen: lastHandledReconcileAt=${OLD_TOKEN} (waiting for ${TOKEN}); Ready=True UpgradeSucceeded: Helm upgrade succeeded for release apps/app.v1`,
        revisionBefore: 1,
        revisionAfter: 1,
        durationMs: TIMEOUT,
        severity: 'error',
      },
    ])
    // A watch the server ends at once is re-opened after a pause, never in a hot loop, until the deadline.
    expect(clock.now()).toBe(START + TIMEOUT)
    expect(clock.sleeps.every((ms) => ms === 250)).toBe(true)
    expect(cluster.watchCalls).toHaveLength(TIMEOUT / 250)
  })

  it('times out with what the last replay showed while the release keeps reconciling', async () => {
    const cluster = new ScriptedCluster({ apps: [{ send: [RECONCILING], then: 'end' }] })
    const { results } = await waitFor(cluster, [triggered()])
    expect(results[0]?.status).toBe(Status.TimedOut)
    expect(results[0]?.message).toBe(
      'helm-controller did not finish within the timeout; last seen: token handled; Ready=Unknown Progressing: Running upgrade; Reconciling: Running upgrade action',
    )
  })

  it('says the release was never seen when the watch never shows it', async () => {
    const stranger = hr({ name: 'other', lastHandledReconcileAt: TOKEN, ready: ['True'] })
    const cluster = new ScriptedCluster({ apps: [{ send: [stranger], then: 'end' }] })
    const { results } = await waitFor(cluster, [triggered()])
    expect(results[0]).toMatchObject({
      status: Status.TimedOut,
      revisionBefore: 1,
      revisionAfter: undefined,
      message: 'helm-controller did not finish within the timeout; last seen: release not seen since the patch',
    })
  })

  it('re-opens a watch the server keeps ending until the release is handled', async () => {
    const cluster = new ScriptedCluster({
      apps: [
        { send: [], then: 'end' },
        { send: [NOT_HANDLED], then: 'end' },
        { send: [RECONCILING], then: 'end' },
        { send: [UPGRADED], then: 'end' },
      ],
    })
    const { results, clock, log } = await waitFor(cluster, [triggered({ startedAt: START })])
    expect(results.map((r) => [r.status, r.revisionBefore, r.revisionAfter, r.durationMs])).toEqual([[Status.Upgraded, 1, 2, 750]])
    expect(cluster.watchCalls).toEqual(['apps', 'apps', 'apps', 'apps'])
    expect(clock.sleeps).toEqual([250, 250, 250])
    expect(log.warnings).toEqual([])
  })

  it('retries a watch that fails, with a warning and a backoff, then sees the outcome', async () => {
    const cluster = new ScriptedCluster({
      apps: [{ fail: new TransientError('Cannot reach the Kubernetes API server https://fake.invalid:6443 (ECONNRESET)') }, { send: [UPGRADED], then: 'hold' }],
    })
    const { results, clock, log } = await waitFor(cluster, [triggered({ startedAt: START })])
    expect(results.map((r) => [r.status, r.reason, r.durationMs])).toEqual([[Status.Upgraded, 'UpgradeSucceeded', 500]])
    expect(cluster.watchCalls).toEqual(['apps', 'apps'])
    expect(clock.sleeps).toEqual([500])
    expect(log.warnings).toEqual([
      'watching HelmReleases in apps failed (Cannot reach the Kubernetes API server https://fake.invalid:6443 (ECONNRESET)); retrying',
    ])
  })

  it('backs off exponentially while the watch keeps failing, and never sleeps past the deadline', async () => {
    const cluster = new ScriptedCluster({ apps: [{ fail: new Error('connection refused') }] })
    const { results, clock, log } = await waitFor(cluster, [triggered({ startedAt: START })])
    expect(results[0]?.status).toBe(Status.TimedOut)
    expect(results[0]?.message).toBe('helm-controller did not finish within the timeout; last seen: release not seen since the patch')
    // 500 + 1000 + 2000 = 3500; the next 4000 is cut to the 1500 left.
    expect(clock.sleeps).toEqual([500, 1_000, 2_000, 1_500])
    expect(clock.now()).toBe(START + TIMEOUT)
    expect(log.warnings).toHaveLength(4)
  })

  it('waits on each namespace and returns the results in the order of the triggered releases', async () => {
    const infraUpgraded = hr({ namespace: 'infra', name: 'ingress', ...handled({ history: [DEPLOYED_1] }) })
    const failed = hr({
      name: 'api',
      ...handled({ ready: ['False', 'UpgradeFailed', 'timed out waiting for the condition'], history: [{ version: 2, status: 'failed' }, DEPLOYED_1] }),
    })
    const cluster = new ScriptedCluster({
      apps: [{ send: [UPGRADED, failed], then: 'hold' }],
      infra: [{ send: [infraUpgraded], then: 'hold' }],
    })
    const ts = [triggered({ name: 'app' }), triggered({ namespace: 'infra', name: 'ingress' }), triggered({ name: 'api' })]
    const { results } = await waitFor(cluster, ts)
    expect(results.map((r) => [`${r.namespace}/${r.name}`, r.status, r.reason])).toEqual([
      ['apps/app', Status.Upgraded, 'UpgradeSucceeded'],
      ['infra/ingress', Status.Unchanged, 'Unchanged'],
      ['apps/api', Status.Failed, 'UpgradeFailed'],
    ])
    expect([...cluster.watchCalls].sort()).toEqual(['apps', 'infra'])
  })

  it('does not watch at all when nothing was triggered', async () => {
    const cluster = new ScriptedCluster({})
    const { results } = await waitFor(cluster, [])
    expect(results).toEqual([])
    expect(cluster.watchCalls).toEqual([])
  })
})

describe('assess: a release whose spec changed, not patched', () => {
  const spec = {
    change: 'modified' as const,
    origin: { file: 'apps/app/release.yaml', line: 9 },
    fields: ['spec.chart.spec.version'],
    expect: [{ path: ['chart', 'spec', 'version'], value: '2.0.0' }],
  }
  const planned: PlannedRelease = { namespace: 'apps', name: 'app', sources: [], spec }
  const before = hr({ ready: ['True', 'UpgradeSucceeded'] })
  const waitFor: Triggered = { planned, release: before, before, token: undefined, force: false, reset: false, startedAt: 1_000 }
  const withSpec = (version: string, s: ReleaseState): HelmRelease => {
    const live = hr(s)
    return { ...live, spec: { chart: { spec: { chart: 'app', version, reconcileStrategy: 'ChartVersion' } } } }
  }

  it('waits while the cluster holds the old spec, or the new generation is not observed yet', () => {
    expect(assess(waitFor, withSpec('1.0.0', { ready: ['True', 'UpgradeSucceeded'] }), 5_000)).toBeUndefined()
    expect(assess(waitFor, withSpec('2.0.0', { generation: 3, observedGeneration: 2, ready: ['True'] }), 5_000)).toBeUndefined()
    expect(lastSeen(waitFor, withSpec('1.0.0', { ready: ['True'] }))).toContain('new spec not applied yet (spec.chart.spec.version)')
  })

  it('is done on the new generation with no token: upgraded, failed, or reconciled without a new revision', () => {
    const upgraded = assess(
      waitFor,
      withSpec('2.0.0', { generation: 3, ready: ['True', 'UpgradeSucceeded', 'upgraded'], history: [DEPLOYED_2, SUPERSEDED_1] }),
      5_000,
    )
    expect(upgraded).toMatchObject({ status: Status.Upgraded, revisionBefore: 1, revisionAfter: 2, token: undefined })
    const failed = assess(waitFor, withSpec('2.0.0', { generation: 3, ready: ['False', 'UpgradeFailed', 'chart not found'] }), 5_000)
    expect(failed).toMatchObject({ status: Status.Failed, reason: 'UpgradeFailed' })
    const same = assess(waitFor, withSpec('2.0.0', { generation: 3, ready: ['True', 'ReconciliationSucceeded'] }), 5_000)
    expect(same).toMatchObject({ status: Status.Unchanged, message: 'new generation 3 reconciled; no new Helm revision' })
  })

  it('with a token too (spec and source in one commit), needs both the token handled and the new spec', () => {
    const both: Triggered = {
      ...waitFor,
      planned: { ...planned, sources: [{ id: 'ConfigMap/apps/app-values', digest: DIGEST, encrypted: false }] },
      token: TOKEN,
    }
    expect(assess(both, withSpec('1.0.0', handled({ history: [DEPLOYED_2, SUPERSEDED_1] })), 5_000)).toBeUndefined()
    expect(assess(both, withSpec('2.0.0', { ready: ['True'], history: [DEPLOYED_2, SUPERSEDED_1] }), 5_000)).toBeUndefined()
    expect(assess(both, withSpec('2.0.0', handled({ history: [DEPLOYED_2, SUPERSEDED_1] })), 5_000)).toMatchObject({ status: Status.Upgraded })
  })
})

describe('assess: a release whose chart source changed, not patched', () => {
  const NEW = `sha256:${'b'.repeat(64)}`
  const OLD = `sha256:${'c'.repeat(64)}`
  const planned: PlannedRelease = { namespace: 'apps', name: 'app', sources: [], chart: chartChange() }
  const before = hr({ ready: ['True', 'UpgradeSucceeded'] })
  const waitFor: Triggered = {
    planned,
    release: before,
    before,
    token: undefined,
    chartAttempt: { kind: 'OCIRepository', value: NEW },
    force: false,
    reset: false,
    startedAt: 1_000,
  }
  const attempted = (digest: string, s: ReleaseState): HelmRelease => {
    const live = hr(s)
    return { ...live, status: { ...live.status, lastAttemptedRevisionDigest: digest } }
  }

  it('waits until helm-controller has attempted the new artifact, however Ready the release is', () => {
    expect(assess(waitFor, attempted(OLD, { ready: ['True', 'UpgradeSucceeded'] }), 5_000)).toBeUndefined()
    expect(lastSeen(waitFor, attempted(OLD, { ready: ['True'] }))).toContain(`chart ${NEW.slice(0, 19)} not attempted yet (last attempted ${OLD.slice(0, 19)})`)
    expect(assess(waitFor, attempted(NEW, { ready: ['True'], reconciling: ['True', 'Running upgrade'] }), 5_000)).toBeUndefined()
  })

  it('for a HelmChart, waits on the chart version helm-controller last attempted', () => {
    const fromHelmChart: Triggered = { ...waitFor, chartAttempt: { kind: 'HelmChart', value: '0.2.0' } }
    const attemptedVersion = (version: string): HelmRelease => {
      const live = hr({ ready: ['True', 'UpgradeSucceeded', 'upgraded'], history: [DEPLOYED_2, SUPERSEDED_1] })
      return { ...live, status: { ...live.status, lastAttemptedRevision: version } }
    }
    expect(assess(fromHelmChart, attemptedVersion('0.1.0'), 5_000)).toBeUndefined()
    expect(assess(fromHelmChart, attemptedVersion('0.2.0'), 5_000)).toMatchObject({ status: Status.Upgraded })
  })

  it('is done once it has: upgraded, failed with the new chart, or the same release', () => {
    const upgraded = assess(waitFor, attempted(NEW, { ready: ['True', 'UpgradeSucceeded', 'upgraded'], history: [DEPLOYED_2, SUPERSEDED_1] }), 5_000)
    expect(upgraded).toMatchObject({ status: Status.Upgraded, revisionBefore: 1, revisionAfter: 2 })
    const failed = assess(waitFor, attempted(NEW, { ready: ['False', 'UpgradeFailed', 'values don’t meet the specifications of the schema'] }), 5_000)
    expect(failed).toMatchObject({ status: Status.Failed, reason: 'UpgradeFailed' })
    const same = assess(waitFor, attempted(NEW, { ready: ['True', 'ReconciliationSucceeded'] }), 5_000)
    expect(same).toMatchObject({ status: Status.Unchanged, message: 'new chart artifact reconciled; chart and values unchanged, no new Helm revision' })
    // helm-controller upgraded to the new chart before the run's first read: said, not hidden.
    const early = { ...waitFor, before: attempted(NEW, { ready: ['True'], history: [DEPLOYED_2, SUPERSEDED_1] }) }
    expect(assess(early, attempted(NEW, { ready: ['True'], history: [DEPLOYED_2, SUPERSEDED_1] }), 5_000)).toMatchObject({
      status: Status.Unchanged,
      revisionBefore: 2,
      message: 'helm-controller had attempted this chart before the run first read the release (revision 2); no newer Helm revision',
    })
  })
})

describe('assess: our request replaced by a later one (a newer run, flux reconcile)', () => {
  const LATER = '2026-11-22T10:00:05.000000000Z'
  const upgraded = { ready: ['True', 'UpgradeSucceeded', 'upgraded'] as const, history: [DEPLOYED_2, SUPERSEDED_1] }

  it('is done when the request written over ours is handled: that reconcile read our config too', () => {
    const result = assess(triggered(), hr({ ...upgraded, requestedAt: LATER, lastHandledReconcileAt: LATER }), 5_000)
    expect(result).toMatchObject({ status: Status.Upgraded, revisionBefore: 1, revisionAfter: 2, token: TOKEN })
    expect(result?.message).toBe(`upgraded (a later request, requestedAt ${LATER}, came while helm-controller worked on ours)`)
  })

  it('waits while the later request is not handled yet, or while ours is still the one written', () => {
    expect(assess(triggered(), hr({ ...upgraded, requestedAt: LATER, lastHandledReconcileAt: OLD_TOKEN }), 5_000)).toBeUndefined()
    expect(assess(triggered(), hr({ ...upgraded, requestedAt: TOKEN, lastHandledReconcileAt: LATER }), 5_000)).toBeUndefined()
  })

  it("waits past a health check helm-controller cut short for the newer request, then reports that request's outcome", () => {
    const canceled = hr({
      requestedAt: LATER,
      lastHandledReconcileAt: TOKEN,
      ready: ['False', 'HealthCheckCanceled', 'New reconciliation triggered by HelmRelease/apps/app'],
    })
    expect(assess(triggered(), canceled, 5_000)).toBeUndefined()
    // Without a newer request the same condition is still no verdict: helm-controller requeues at once.
    expect(assess(triggered(), hr({ lastHandledReconcileAt: TOKEN, ready: ['False', 'HealthCheckCanceled', 'x'] }), 5_000)).toBeUndefined()
    expect(assess(triggered(), hr({ ...upgraded, requestedAt: LATER, lastHandledReconcileAt: LATER }), 5_000)).toMatchObject({ status: Status.Upgraded })
    // The next attempt's own patches may show it succeeded before lastHandledReconcileAt moves on: the same outcome, said the same way.
    expect(assess(triggered(), hr({ ...upgraded, requestedAt: LATER, lastHandledReconcileAt: TOKEN }), 5_000)).toMatchObject({
      status: Status.Upgraded,
      message: `upgraded (a later request, requestedAt ${LATER}, came while helm-controller worked on ours)`,
    })
  })

  it('never lets a plain request stand in for the forceAt or resetAt we sent', () => {
    const live = hr({ ...upgraded, requestedAt: LATER, lastHandledReconcileAt: LATER, lastHandledForceAt: LATER, lastHandledResetAt: LATER })
    expect(assess(triggered({ force: true }), live, 5_000)).toBeUndefined()
    expect(assess(triggered({ reset: true }), live, 5_000)).toBeUndefined()
  })
})
