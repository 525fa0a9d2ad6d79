import { describe, expect, it } from 'vitest'
import { contentOfConfigMap, digestOf } from '../../../../src/core/digest.ts'
import { parseSettings, type Settings } from '../../../../src/settings.ts'
import { Status } from '../../../../src/engine/result.ts'
import { runTrigger, type RunContext, type TriggerDeps } from '../../../../src/modes/trigger/pipeline.ts'
import { FakeCluster, FakeClock, FakeGit, recordingWaiter } from '../../../../test/support/fakes.ts'
import { ConflictError, ForbiddenError } from '../../../../src/kube/api-error.ts'
import { triggerConfigMap } from '../../../../test/support/manifests.ts'
import { ociRepository, release as renderedRelease, renderedSource, repo } from '../../../../test/support/rendered.ts'
import type { RenderRange } from '../../../../src/modes/trigger/pipeline.ts'
import type { Triggered } from '../../../../src/engine/outcome.ts'
import { clusterRefused } from '../../../../src/github/policy.ts'

const configMap = (value: string, extra = ''): string =>
  triggerConfigMap({ name: 'app-values', namespace: 'apps', releases: 'app', values: `replicas: ${value}${extra}` })

const release = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: other
  namespace: apps
spec:
  valuesFrom:
    - kind: ConfigMap
      name: app-values
`

function settings(overrides: Record<string, string> = {}): Settings {
  return parseSettings((name) => overrides[name] ?? '')
}

function pushContext(before: string, after: string): RunContext {
  return { eventName: 'push', event: { before, after }, sha: after, runUrl: 'https://github.example/o/r/actions/runs/1', refused: undefined }
}

function deps(git: FakeGit, cluster: FakeCluster, clock = new FakeClock()): TriggerDeps {
  const warnings: string[] = []
  return { git, connect: async () => cluster, clock, log: { info: () => undefined, warning: (m) => warnings.push(m) } }
}

const liveData = (value: string) => ({ 'values.yaml': `replicas: ${value}\n` })

describe('runTrigger', () => {
  it('patches the annotated release once with the token, the digest and an Event', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))

    expect(report.results).toHaveLength(1)
    const [result] = report.results
    expect(result).toMatchObject({ namespace: 'apps', name: 'app', status: Status.Triggered })
    expect(cluster.patches).toHaveLength(1)
    const annotations = cluster.release('apps', 'app').annotations
    expect(annotations['reconcile.fluxcd.io/requestedAt']).toBe(result?.token)
    const expected = digestOf(contentOfConfigMap({ data: liveData('2') }), { semantic: true })
    expect(JSON.parse(annotations['nebius.ai/config-digest'] ?? '{}')).toEqual({ 'ConfigMap/apps/app-values': expected })
    expect(annotations['reconcile.fluxcd.io/forceAt']).toBeUndefined()
    expect(cluster.events).toHaveLength(1)
    expect(cluster.events[0]?.message).toContain('commit b')
    expect(cluster.events[0]?.message).toContain('actions/runs/1')
  })

  it('skips a re-run for the same digests (idempotent) and triggers again with force', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    const again = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    expect(again.results.map((r) => [r.status, r.reason])).toEqual([[Status.Skipped, 'UpToDate']])
    expect(cluster.patches).toHaveLength(1)

    const forced = await runTrigger(settings({ wait: 'false', force: 'true' }), pushContext('a', 'b'), deps(git, cluster))
    expect(forced.results[0]?.status).toBe(Status.Triggered)
    const annotations = cluster.release('apps', 'app').annotations
    expect(annotations['reconcile.fluxcd.io/forceAt']).toBe(annotations['reconcile.fluxcd.io/requestedAt'])
  })

  it('gives one patch per release carrying every changed source, from annotation and valuesFrom', async () => {
    const second = configMap('1').replaceAll('app-values', 'more-values').replace('replicas: 1', 'replicas: 1')
    const git = new FakeGit()
      .commit('a', undefined, { 'cm.yaml': configMap('1'), 'more.yaml': second, 'hr.yaml': release.replace('name: other', 'name: app') })
      .commit('b', 'a', {
        'cm.yaml': configMap('2'),
        'more.yaml': second.replace('replicas: 1', 'replicas: 5'),
        'hr.yaml': release.replace('name: other', 'name: app'),
      })
    const cluster = new FakeCluster()
      .addRelease('apps', 'app')
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'more-values' }, liveData('5'))
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    expect(cluster.patches).toHaveLength(1)
    expect(report.results[0]?.sources.map((s) => s.id)).toEqual(['ConfigMap/apps/app-values', 'ConfigMap/apps/more-values'])
  })

  it('waits for the source to arrive and patches nothing that reads a source that never does', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('1'))
    const report = await runTrigger(settings({ wait: 'false', timeout: '30s' }), pushContext('a', 'b'), deps(git, cluster))
    expect(cluster.patches).toHaveLength(0)
    expect(report.sources).toMatchObject([{ id: 'ConfigMap/apps/app-values', applied: false }])
    expect(report.sources[0]?.message).toContain('never reached the planned content')
    expect(report.results).toMatchObject([{ status: Status.Failed, reason: 'SourceNotApplied', severity: 'error' }])
  })

  it('skips suspended and missing releases, the missing one as a warning', async () => {
    const cm = configMap('2').replace('nebius.ai/helmreleases-name: app', 'nebius.ai/helmreleases-name: app, gone')
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': cm })
    const cluster = new FakeCluster()
      .addRelease('apps', 'app', { suspend: true })
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    expect(report.results.map((r) => [r.name, r.status, r.reason, r.severity])).toEqual([
      ['app', Status.Skipped, 'Suspended', 'none'],
      ['gone', Status.Skipped, 'NotFound', 'warning'],
    ])
    expect(cluster.patches).toHaveLength(0)
  })

  it('re-reads and decides again when the patch meets a conflict', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    cluster.conflictOnce.add('apps/app')
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    expect(report.results[0]?.status).toBe(Status.Triggered)
    expect(cluster.patches).toHaveLength(2)
  })

  it("never writes an older commit's digests over a newer run's: the older run is Superseded", async () => {
    // Commits a → b → c. The run for b saw b's content arrive; before it patches, c's content
    // lands and c's run triggers the release. Then b's run reads the release and decides.
    const ref = { kind: 'ConfigMap' as const, namespace: 'apps', name: 'app-values' }
    const git = new FakeGit()
      .commit('a', undefined, { 'cm.yaml': configMap('1') })
      .commit('b', 'a', { 'cm.yaml': configMap('2') })
      .commit('c', 'b', { 'cm.yaml': configMap('3') })
    let newer: Promise<Awaited<ReturnType<typeof runTrigger>>> | undefined
    class OvertakenCluster extends FakeCluster {
      override async getRelease(...args: Parameters<FakeCluster['getRelease']>) {
        if (newer === undefined) {
          this.setSource(ref, liveData('3'))
          newer = runTrigger(settings({ wait: 'false' }), pushContext('b', 'c'), deps(git, this))
          await newer
        }
        return super.getRelease(...args)
      }
    }
    const cluster = new OvertakenCluster().addRelease('apps', 'app').setSource(ref, liveData('2'))
    const older = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))

    expect((await newer)?.results.map((r) => r.status)).toEqual([Status.Triggered])
    expect(older.results.map((r) => [r.status, r.reason])).toEqual([[Status.Skipped, 'Superseded']])
    expect(older.results[0]?.message).toContain('ConfigMap/apps/app-values is now')
    expect(older.results[0]?.severity).toBe('none')
    expect(cluster.patches).toHaveLength(1)
    const newerDigest = digestOf(contentOfConfigMap({ data: liveData('3') }), { semantic: true })
    expect(JSON.parse(cluster.release('apps', 'app').annotations['nebius.ai/config-digest'] ?? '{}')).toEqual({ 'ConfigMap/apps/app-values': newerDigest })
  })

  it('after a conflict caused by a newer run, decides again and does not regress its digest', async () => {
    const ref = { kind: 'ConfigMap' as const, namespace: 'apps', name: 'app-values' }
    const git = new FakeGit()
      .commit('a', undefined, { 'cm.yaml': configMap('1') })
      .commit('b', 'a', { 'cm.yaml': configMap('2') })
      .commit('c', 'b', { 'cm.yaml': configMap('3') })
    const newerDigest = digestOf(contentOfConfigMap({ data: liveData('3') }), { semantic: true })
    // Between the older run's read and its patch, c's content lands and c's run patches first.
    class RacedCluster extends FakeCluster {
      raced = false
      override async patchRelease(...args: Parameters<FakeCluster['patchRelease']>) {
        if (!this.raced) {
          this.raced = true
          this.setSource(ref, liveData('3'))
          await super.patchRelease(
            args[0],
            { annotations: { 'nebius.ai/config-digest': JSON.stringify({ 'ConfigMap/apps/app-values': newerDigest }) }, labels: {} },
            { dryRun: false },
          )
        }
        return super.patchRelease(...args)
      }
    }
    const cluster = new RacedCluster().addRelease('apps', 'app').setSource(ref, liveData('2'))
    const older = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    expect(older.results.map((r) => [r.status, r.reason])).toEqual([[Status.Skipped, 'Superseded']])
    expect(JSON.parse(cluster.release('apps', 'app').annotations['nebius.ai/config-digest'] ?? '{}')).toEqual({ 'ConfigMap/apps/app-values': newerDigest })
  })

  it('reports a patch whose answer was lost as triggered once, not as up to date', async () => {
    // The patch landed, the answer never came; the client's retry then conflicted with our own write.
    class LostAnswerCluster extends FakeCluster {
      lost = false
      override async patchRelease(...args: Parameters<FakeCluster['patchRelease']>) {
        const release = await super.patchRelease(...args)
        if (this.lost) return release
        this.lost = true
        throw new ConflictError('patch helmreleases apps/app: the object changed meanwhile (409 Conflict)')
      }
    }
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new LostAnswerCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    expect(report.results.map((r) => r.status)).toEqual([Status.Triggered])
    expect(cluster.patches).toHaveLength(1)
    expect(cluster.release('apps', 'app').annotations['reconcile.fluxcd.io/requestedAt']).toBe(report.results[0]?.token)
    expect(cluster.events).toHaveLength(1)
  })

  it('starts no release after the timeout: a slow apiserver ends the run, the rest listed as TimedOut', async () => {
    const clock = new FakeClock()
    // Every read takes two minutes: the third release starts at 4 min, the fourth would at 6.
    class SlowCluster extends FakeCluster {
      override async getRelease(...args: Parameters<FakeCluster['getRelease']>) {
        await clock.sleep(120_000)
        return super.getRelease(...args)
      }
    }
    const names = ['a', 'b', 'c', 'd', 'e']
    const many = configMap('1').replace('nebius.ai/helmreleases-name: app', `nebius.ai/helmreleases-name: "${names.join(', ')}"`)
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': many }).commit('b', 'a', { 'cm.yaml': many.replace('replicas: 1', 'replicas: 2') })
    const cluster = new SlowCluster()
    for (const n of names) cluster.addRelease('apps', n)
    const report = await runTrigger(
      settings({ wait: 'false', 'wait-for-apply': 'false', 'max-concurrency': '1', timeout: '5m' }),
      pushContext('a', 'b'),
      deps(git, cluster, clock),
    )
    expect(report.results.map((r) => [r.name, r.status])).toEqual([
      ['a', Status.Triggered],
      ['b', Status.Triggered],
      ['c', Status.Triggered],
      ['d', Status.TimedOut],
      ['e', Status.TimedOut],
    ])
    expect(report.results[3]?.message).toContain('the timeout (5m) passed before its turn')
    expect(cluster.patches).toHaveLength(3)
  })

  it('sends resetAt with the token when the release is stalled', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const stalled = { conditions: [{ type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: 'Failed to upgrade after 1 attempt(s)' }] }
    const cluster = new FakeCluster()
      .addRelease('apps', 'app', {}, { status: stalled })
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), deps(git, cluster))
    const annotations = cluster.release('apps', 'app').annotations
    expect(annotations['reconcile.fluxcd.io/resetAt']).toBe(annotations['reconcile.fluxcd.io/requestedAt'])
  })

  it('writes nothing on a pull request unless allowed, and plans all the same', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app')
    const context: RunContext = {
      eventName: 'pull_request',
      event: { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: false } },
      sha: 'b',
      runUrl: undefined,
      refused: clusterRefused('pull_request', { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: false } }, false),
    }
    let connected = false
    const report = await runTrigger(settings(), context, { ...deps(git, cluster), connect: async () => ((connected = true), cluster) })
    expect(connected).toBe(false)
    expect(report.planOnly).toContain('plan only')
    expect(report.results.map((r) => [r.name, r.status])).toEqual([['app', Status.Planned]])
  })

  it('never writes for a pull request from a fork, even with allow-pull-requests', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app')
    const event = { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: true } }
    for (const eventName of ['pull_request', 'pull_request_target']) {
      let connected = false
      const report = await runTrigger(
        settings({ 'allow-pull-requests': 'true' }),
        { eventName, event, sha: 'b', runUrl: undefined, refused: clusterRefused(eventName, event, true) },
        { ...deps(git, cluster), connect: async () => ((connected = true), cluster) },
      )
      expect(connected).toBe(false)
      expect(report.planOnly).toContain('from a fork')
    }
    const sameRepo = { pull_request: { ...event.pull_request, fromFork: false } }
    const cluster2 = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    const allowed = await runTrigger(
      settings({ 'allow-pull-requests': 'true', wait: 'false' }),
      { eventName: 'pull_request', event: sameRepo, sha: 'b', runUrl: undefined, refused: clusterRefused('pull_request', sameRepo, true) },
      deps(git, cluster2),
    )
    expect(allowed.results.map((r) => r.status)).toEqual([Status.Triggered])
  })

  it('sends patches as dry runs and records no Event under dry-run', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    const before = cluster.release('apps', 'app').resourceVersion
    const report = await runTrigger(settings({ 'dry-run': 'true' }), pushContext('a', 'b'), deps(git, cluster))
    expect(report.results[0]?.status).toBe(Status.DryRun)
    expect(cluster.patches.map((p) => p.dryRun)).toEqual([true])
    expect(cluster.release('apps', 'app').resourceVersion).toBe(before)
    expect(cluster.events).toHaveLength(0)
  })

  it('does not connect when a comment-only edit changes no digest', async () => {
    const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('1', ' # one replica is enough') })
    let connected = false
    const report = await runTrigger(settings(), pushContext('a', 'b'), {
      ...deps(git, new FakeCluster()),
      connect: async () => ((connected = true), new FakeCluster()),
    })
    expect(connected).toBe(false)
    expect(report.plan.sources).toEqual([])
    expect(report.results).toEqual([])
  })
})

describe('runTrigger on a rendered repository', () => {
  // A commit the renderer turned into objects: the generated values ConfigMap of `app` changed
  // at apps/app/values.yaml:2; `other` reads another key of it; `db` bumped its chart.
  const values = (replicas: string) => ({ 'values.yaml': `image: v1\nreplicas: ${replicas}\n`, 'other.yaml': 'x: 1\n' })
  const cm = (replicas: string) =>
    renderedSource({ name: 'app-values', data: values(replicas), keyOrigins: { 'values.yaml': { file: 'apps/app/values.yaml', line: 1 } } })
  const app = renderedRelease({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
  const other = renderedRelease({ name: 'other', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values', valuesKey: 'other.yaml' }] })
  const db = (version: string) => renderedRelease({ name: 'db', version, origin: { file: 'apps/db/release.yaml', line: 4 } })
  const render: RenderRange = async () => ({
    rendered: { base: repo([cm('1'), app, other, db('1.0.0')]), head: repo([cm('2'), app, other, db('2.0.0')]) },
    reading: 'Read as Flux applies it.',
  })
  const git = new FakeGit().commit('a', undefined, {}).commit('b', 'a', {})
  const dbSpec = (version: string) => ({ chart: { spec: { chart: 'db', version, sourceRef: { kind: 'HelmRepository', name: 'charts' } } } })
  const liveCluster = () =>
    new FakeCluster()
      .addRelease('apps', 'app')
      .addRelease('apps', 'other')
      .addRelease('apps', 'db', dbSpec('2.0.0'))
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, values('2'))

  it('patches only the release whose read key changed, names the edited line in the Event, and waits for the spec change unpatched', async () => {
    const cluster = liveCluster()
    const seen: Triggered[] = []
    const report = await runTrigger(settings(), pushContext('a', 'b'), { ...deps(git, cluster), render, outcome: recordingWaiter(seen) })
    expect(cluster.patches.map((p) => p.ref.name)).toEqual(['app'])
    expect(cluster.events[0]?.message).toContain('ConfigMap/apps/app-values')
    expect(cluster.events[0]?.message).toContain('at apps/app/values.yaml:2')
    expect(seen.map((t) => [t.planned.name, t.token === undefined])).toEqual([
      ['app', false],
      ['db', true],
    ])
    expect(report.results.map((r) => [r.name, r.status, r.spec?.fields])).toEqual([
      ['app', Status.Upgraded, undefined],
      ['db', Status.Upgraded, ['spec.chart.spec.version']],
    ])
    expect(report.notes[0]).toBe('Read as Flux applies it.')
    expect(report.results[0]?.sources[0]?.origin).toEqual({ file: 'apps/app/values.yaml', line: 2 })
  })

  it('patches a release whose spec and source changed together only once the cluster holds its new spec', async () => {
    const both: RenderRange = async () => ({
      rendered: {
        base: repo([cm('1'), renderedRelease({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })]),
        head: repo([cm('2'), renderedRelease({ name: 'app', version: '2.0.0', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })]),
      },
      reading: 'Read as Flux applies it.',
    })
    const stale = new FakeCluster()
      .addRelease('apps', 'app', { chart: { spec: { version: '1.0.0' } } })
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, values('2'))
    const missed = await runTrigger(settings({ wait: 'false', timeout: '2s' }), pushContext('a', 'b'), { ...deps(git, stale), render: both })
    expect(stale.patches).toEqual([])
    expect(missed.results.map((r) => [r.name, r.status, r.reason])).toEqual([['app', Status.Failed, 'SpecNotApplied']])

    const held = new FakeCluster()
      .addRelease('apps', 'app', { chart: { spec: { version: '2.0.0' } } })
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, values('2'))
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), { ...deps(git, held), render: both })
    expect(held.patches.map((p) => p.ref.name)).toEqual(['app'])
    expect(report.results.map((r) => [r.name, r.status])).toEqual([['app', Status.Triggered]])
    expect(held.events[0]?.message).toContain('Its spec changed too (spec.chart.spec.version at apps/app/release.yaml:1)')
  })

  it('reports a spec change without waiting when wait is off, and plans it on a pull request', async () => {
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), { ...deps(git, liveCluster()), render })
    expect(report.results.find((r) => r.name === 'db')).toMatchObject({ status: Status.Skipped, reason: 'SpecChanged' })
    const context: RunContext = {
      eventName: 'pull_request',
      event: { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: false } },
      sha: 'b',
      runUrl: undefined,
      refused: clusterRefused('pull_request', { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: false } }, false),
    }
    const planned = await runTrigger(settings(), context, { ...deps(git, liveCluster()), render })
    expect(planned.results.map((r) => [r.name, r.status])).toEqual([
      ['app', Status.Planned],
      ['db', Status.Planned],
    ])
  })

  it('keeps the file-by-file plan when the renderer finds no Flux Kustomization', async () => {
    const files = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1') }).commit('b', 'a', { 'cm.yaml': configMap('2') })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, liveData('2'))
    const reading = 'Read file by file: the repository holds no Flux Kustomization.'
    const none: RenderRange = async () => ({ rendered: undefined, reading })
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), { ...deps(files, cluster), render: none })
    expect(report.results.map((r) => [r.name, r.status])).toEqual([['app', Status.Triggered]])
    expect(report.notes).toContain(reading)
  })
})

describe('runTrigger on a chart source change', () => {
  // A commit that bumps the OCIRepository `demo` from 0.1.0 to 0.2.0 at apps/demo/repository.yaml:9;
  // `app` names it through chartRef and, in `withValues`, reads a values ConfigMap changed alongside.
  const chartRef = { kind: 'OCIRepository', name: 'demo' }
  const values = (replicas: string) => ({ 'values.yaml': `replicas: ${replicas}\n` })
  const cm = (replicas: string) => renderedSource({ name: 'app-values', data: values(replicas) })
  const oci = (tag: string) => ociRepository({ name: 'demo', tag, specOrigins: { '["ref","tag"]': { file: 'apps/demo/repository.yaml', line: 9 } } })
  const app = renderedRelease({ name: 'app', chartRef, valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
  const chartOnly: RenderRange = async () => ({
    rendered: { base: repo([oci('0.1.0'), cm('1'), app]), head: repo([oci('0.2.0'), cm('1'), app]) },
    reading: 'Read as Flux applies it.',
  })
  const withValues: RenderRange = async () => ({
    rendered: { base: repo([oci('0.1.0'), cm('1'), app]), head: repo([oci('0.2.0'), cm('2'), app]) },
    reading: 'Read as Flux applies it.',
  })
  const git = new FakeGit().commit('a', undefined, {}).commit('b', 'a', {})
  const digest = `sha256:${'ab'.repeat(32)}`

  /** The OCIRepository as the API returns it: at `tag`, judged by source-controller as `ready` for generation 2. */
  function liveOci(tag: string, ready: { status: 'True' | 'False' | 'Unknown'; message: string }, revision?: string): Record<string, unknown> {
    return {
      metadata: { namespace: 'apps', name: 'demo', generation: 2 },
      spec: { url: 'oci://registry.example/charts/demo', ref: { tag } },
      status: {
        observedGeneration: ready.status === 'True' ? 2 : 1,
        conditions: [{ type: 'Ready', ...ready, observedGeneration: 2 }],
        ...(revision === undefined ? {} : { artifact: { revision } }),
      },
    }
  }
  const cluster = (oci: Record<string, unknown>) => {
    const c = new FakeCluster().addRelease('apps', 'app', { chartRef }).setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'app-values' }, values('2'))
    c.chartSources.set('apps/demo', oci)
    return c
  }
  const fetched = () => liveOci('0.2.0', { status: 'True', message: 'stored artifact' }, `0.2.0@${digest}`)

  it('waits, unpatched, for helm-controller to attempt the artifact source-controller fetched, and names it in the result', async () => {
    const live = cluster(fetched())
    const seen: Triggered[] = []
    const report = await runTrigger(settings(), pushContext('a', 'b'), { ...deps(git, live), render: chartOnly, outcome: recordingWaiter(seen) })
    expect(live.patches).toEqual([])
    expect(seen.map((t) => [t.planned.name, t.token, t.chartAttempt?.value])).toEqual([['app', undefined, digest]])
    expect(report.results).toEqual([
      expect.objectContaining({
        name: 'app',
        status: Status.Upgraded,
        chart: {
          source: 'OCIRepository/apps/demo',
          fields: ['spec.ref.tag'],
          origin: { file: 'apps/demo/repository.yaml', line: 9 },
          revision: `0.2.0@${digest}`,
        },
      }),
    ])
  })

  it('patches a release whose chart and values changed together only once the new chart is fetched', async () => {
    const stale = cluster(liveOci('0.1.0', { status: 'True', message: 'stored artifact' }, `0.1.0@sha256:${'cd'.repeat(32)}`))
    const missed = await runTrigger(settings({ timeout: '2s' }), pushContext('a', 'b'), {
      ...deps(git, stale),
      render: withValues,
      outcome: recordingWaiter([]),
    })
    expect(stale.patches).toEqual([])
    expect(missed.results.map((r) => [r.name, r.status, r.reason])).toEqual([['app', Status.Failed, 'ChartNotFetched']])
    expect(missed.results[0]?.message).toContain(
      'did not arrive within the timeout (spec.ref.tag, apps/demo/repository.yaml:9; new spec not applied yet (spec.ref.tag))',
    )

    const live = cluster(fetched())
    const seen: Triggered[] = []
    await runTrigger(settings(), pushContext('a', 'b'), { ...deps(git, live), render: withValues, outcome: recordingWaiter(seen) })
    expect(live.patches.map((p) => p.ref.name)).toEqual(['app'])
    expect(seen.map((t) => [t.planned.name, t.token !== undefined, t.chartAttempt?.value])).toEqual([['app', true, digest]])
    expect(live.events[0]?.message).toContain(
      'Its chart source OCIRepository/apps/demo changed too (spec.ref.tag at apps/demo/repository.yaml:9); requested once source-controller had fetched the new chart.',
    )
  })

  it("fails at once with source-controller's message when it cannot fetch the new chart, and waits for nothing", async () => {
    const missing = cluster(liveOci('0.2.0', { status: 'False', message: 'failed to determine artifact digest: MANIFEST_UNKNOWN' }))
    const seen: Triggered[] = []
    const report = await runTrigger(settings(), pushContext('a', 'b'), { ...deps(git, missing), render: chartOnly, outcome: recordingWaiter(seen) })
    expect(seen).toEqual([])
    expect(report.results.map((r) => [r.name, r.status, r.reason, r.severity])).toEqual([['app', Status.Failed, 'ChartNotFetched', 'error']])
    expect(report.results[0]?.message).toBe(
      'not upgraded: source-controller could not fetch the chart OCIRepository/apps/demo names since the commit (spec.ref.tag, apps/demo/repository.yaml:9): failed to determine artifact digest: MANIFEST_UNKNOWN',
    )
  })

  it('fails only the releases naming a chart source the role cannot read, naming the rule', async () => {
    const denied = cluster(fetched())
    denied.chartSourceError = new ForbiddenError(
      'Forbidden: cannot get ocirepositories.source.toolkit.fluxcd.io demo in namespace apps. Grant the identity this RBAC rule: apiGroups: ["source.toolkit.fluxcd.io"], resources: ["ocirepositories"], verbs: ["get"]',
    )
    const report = await runTrigger(settings(), pushContext('a', 'b'), { ...deps(git, denied), render: withValues, outcome: recordingWaiter([]) })
    expect(denied.patches).toEqual([])
    expect(report.results.map((r) => [r.name, r.status, r.reason])).toEqual([['app', Status.Failed, 'ChartNotFetched']])
    expect(report.results[0]?.message).toContain(
      'not patched: OCIRepository/apps/demo (spec.ref.tag, apps/demo/repository.yaml:9) could not be read: Forbidden',
    )
    expect(report.results[0]?.message).toContain('resources: ["ocirepositories"], verbs: ["get"]')
  })

  it('reports the chart change without waiting when wait is off', async () => {
    const report = await runTrigger(settings({ wait: 'false' }), pushContext('a', 'b'), { ...deps(git, cluster(fetched())), render: chartOnly })
    expect(report.results.map((r) => [r.name, r.status, r.reason])).toEqual([['app', Status.Skipped, 'ChartChanged']])
  })
})
