// The drift engine against a hand-written ObjectReader and the FakeCluster: release
// selection, skips and errors per release, bounded concurrency, the `correct` flow
// (forceAt = requestedAt, outcome, re-check) and the exit rule of each drift-action.
import { describe, expect, it } from 'vitest'
import { driftFailure, runDrift, ReleaseState, type DriftReport } from '../../../../src/modes/drift/run.ts'
import { driftCounts, driftHeadline, driftOutput, driftSummary, driftText } from '../../../../src/modes/drift/report.ts'
import { encodeRelease } from '../../../../src/core/helm-storage.ts'
import { ForbiddenError } from '../../../../src/kube/api-error.ts'
import type { Json, ObjectReader, ObjectRef, ResourceInfo, StorageSecret } from '../../../../src/kube/objects.ts'
import { controllerReason, Reason, Status, type ReleaseResult } from '../../../../src/engine/result.ts'
import { parseSettings } from '../../../../src/settings.ts'
import type { OutcomeWaiter, Triggered } from '../../../../src/engine/outcome.ts'
import { FakeClock, FakeCluster } from '../../../../test/support/fakes.ts'
import { tableUnder } from '../../../../test/support/markdown.ts'

const RESOURCES: Readonly<Record<string, ResourceInfo>> = {
  'v1/ConfigMap': { resource: 'configmaps', namespaced: true },
  'v1/Secret': { resource: 'secrets', namespaced: true },
  'v1/Namespace': { resource: 'namespaces', namespaced: false },
  'apps/v1/Deployment': { resource: 'deployments', namespaced: true },
  'autoscaling/v2/HorizontalPodAutoscaler': { resource: 'horizontalpodautoscalers', namespaced: true },
  'helm.toolkit.fluxcd.io/v2/HelmRelease': { resource: 'helmreleases', namespaced: true },
}

/** Objects and Helm storage in memory; counts GETs in flight. */
class FakeObjects implements ObjectReader {
  readonly server = 'https://fake.invalid'
  readonly releases: Json[] = []
  readonly objects = new Map<string, Json>()
  readonly secrets = new Map<string, StorageSecret & { labels: Record<string, string> }>()
  readonly hpaTargets = new Map<string, string[]>()
  readonly forbidden = new Set<string>()
  inFlight = 0
  maxInFlight = 0
  gets = 0

  release(
    namespace: string,
    name: string,
    manifest: string,
    options: { status?: string; version?: number; spec?: Json; labels?: Record<string, string>; releaseNamespace?: string } = {},
  ): this {
    const version = options.version ?? 1
    this.releases.push({
      metadata: { namespace, name, labels: options.labels ?? {} },
      spec: options.spec ?? {},
      status: { history: [{ name, namespace: options.releaseNamespace ?? namespace, version }] },
    })
    const stored = {
      name,
      namespace: options.releaseNamespace ?? namespace,
      version,
      info: { status: options.status ?? 'deployed' },
      manifest,
      chart: { metadata: { name: 'demo', version: '0.1.0' } },
    }
    this.secrets.set(`${namespace}/sh.helm.release.v1.${name}.v${version}`, {
      type: 'helm.sh/release.v1',
      data: { release: encodeRelease(stored) },
      labels: { owner: 'helm', name, version: String(version) },
    })
    return this
  }

  put(object: Json): this {
    const m = object['metadata'] as { namespace?: string; name: string }
    this.objects.set(`${object['kind']}/${m.namespace ?? ''}/${m.name}`, object)
    return this
  }

  async resource(apiVersion: string, kind: string): Promise<ResourceInfo | undefined> {
    return RESOURCES[`${apiVersion}/${kind}`]
  }

  async get(ref: ObjectRef): Promise<Json | undefined> {
    this.gets++
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    await new Promise((r) => setTimeout(r, 1))
    this.inFlight--
    if (this.forbidden.has(ref.kind)) throw new ForbiddenError(`Forbidden: cannot get ${ref.kind.toLowerCase()}s ${ref.name}`)
    if (ref.kind === 'HelmRelease')
      return this.releases.find((r) => JSON.stringify(r['metadata']).includes(`"namespace":"${ref.namespace}","name":"${ref.name}"`))
    return this.objects.get(`${ref.kind}/${ref.namespace ?? ''}/${ref.name}`)
  }

  async listHelmReleases(namespace: string | undefined, selector: string | undefined): Promise<Json[]> {
    const [key, value] = (selector ?? '').split('=')
    return this.releases.filter((r) => {
      const m = r['metadata'] as { namespace: string; labels: Record<string, string> }
      return (namespace === undefined || m.namespace === namespace) && (key === undefined || key === '' || m.labels[key] === value)
    })
  }

  async listSecretMetadata(namespace: string, selector: string): Promise<{ name: string; labels: Record<string, string> }[]> {
    const name = /name=([^,]+)/.exec(selector)?.[1]
    return [...this.secrets]
      .filter(([k, s]) => k.startsWith(`${namespace}/`) && s.labels['name'] === name)
      .map(([k, s]) => ({ name: k.slice(namespace.length + 1), labels: s.labels }))
  }

  async getSecret(namespace: string, name: string): Promise<StorageSecret | undefined> {
    return this.secrets.get(`${namespace}/${name}`)
  }

  async listHpaTargets(namespace: string): Promise<string[]> {
    return this.hpaTargets.get(namespace) ?? []
  }
}

const cm = (namespace: string | undefined, name: string, data: Record<string, string>): Json => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
  data,
})
const yaml = (o: Json): string => `---\n# Source: demo/templates/x.yaml\n${JSON.stringify(o)}\n`

/** Settles every triggered release as helm-controller would after a forced upgrade, and applies `fix` first. */
class FakeOutcome implements OutcomeWaiter {
  readonly waited: Triggered[] = []
  constructor(
    private readonly fix: () => void,
    private readonly status: Status = Status.Upgraded,
  ) {}
  async wait(_cluster: unknown, triggered: readonly Triggered[]): Promise<ReleaseResult[]> {
    this.waited.push(...triggered)
    this.fix()
    return triggered.map((t) => ({
      namespace: t.planned.namespace,
      name: t.planned.name,
      sources: [],
      status: this.status,
      reason: this.status === Status.Upgraded ? Reason.UpgradeSucceeded : controllerReason('UpgradeFailed'),
      message: 'done',
      durationMs: 1,
      severity: this.status === Status.Upgraded ? 'none' : 'error',
      revisionAfter: 2,
      token: t.token,
    }))
  }
}

async function run(
  objects: FakeObjects,
  inputs: Record<string, string> = {},
  extra: { cluster?: FakeCluster; outcome?: OutcomeWaiter } = {},
): Promise<DriftReport> {
  const settings = parseSettings((n) => inputs[n] ?? '')
  const cluster = extra.cluster ?? new FakeCluster()
  return runDrift(settings, {
    objects: async () => objects,
    connect: async () => cluster,
    clock: new FakeClock(),
    log: { info: () => undefined, warning: () => undefined },
    ...(extra.outcome === undefined ? {} : { outcome: extra.outcome }),
  })
}

describe('runDrift: observe', () => {
  it('compares every object of the latest deployed release; namespace-less objects land in the release namespace', async () => {
    const objects = new FakeObjects()
      .release(
        'apps',
        'web',
        yaml(cm(undefined, 'web', { a: '1' })) +
          yaml(cm('other', 'shared', { b: '2' })) +
          yaml({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } }),
      )
      .put(cm('apps', 'web', { a: '1' }))
      .put(cm('other', 'shared', { b: 'changed' }))
      .put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } })
    const report = await run(objects)
    expect(report.releases).toEqual([
      expect.objectContaining({
        namespace: 'apps',
        name: 'web',
        state: ReleaseState.Drifted,
        objects: 3,
        inSync: 2,
        revision: 1,
        chart: 'demo-0.1.0',
        message: '3 objects, 1 drifted',
      }),
    ])
    expect(report.releases[0]?.drifted).toEqual([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'other',
        name: 'shared',
        state: 'changed',
        changes: [{ path: 'data.b', desired: '"2"', live: '"changed"' }],
        source: 'demo/templates/x.yaml',
      },
    ])
  })

  it('uses the target namespace of the Helm release for objects without one', async () => {
    const objects = new FakeObjects()
      .release('flux-system', 'web', yaml(cm(undefined, 'web', { a: '1' })), { releaseNamespace: 'prod', spec: { targetNamespace: 'prod' } })
      .put(cm('prod', 'web', { a: '1' }))
    expect((await run(objects)).releases[0]).toMatchObject({ state: ReleaseState.InSync, inSync: 1 })
  })

  it('reports a missing object, an unknown kind and a forbidden read per object; drift wins over errors', async () => {
    const objects = new FakeObjects().release(
      'apps',
      'web',
      yaml(cm(undefined, 'gone', { a: '1' })) +
        yaml({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }) +
        yaml({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } }),
    )
    objects.forbidden.add('Secret')
    const [release] = (await run(objects)).releases
    expect(release?.state).toBe(ReleaseState.Drifted)
    expect(release?.drifted.map((o) => [o.kind, o.state, o.message ?? ''])).toEqual([
      ['ConfigMap', 'missing', ''],
      ['Secret', 'error', 'Forbidden: cannot get secrets s'],
      ['Widget', 'error', 'the cluster does not serve Widget in example.com/v1 (is its CRD installed?)'],
    ])
    expect(release?.message).toBe('3 objects, 1 drifted, 2 not compared')
  })

  it('skips releases whose latest revision is not deployed, and those never installed', async () => {
    const objects = new FakeObjects().release('apps', 'busy', yaml(cm(undefined, 'busy', {})), { status: 'pending-upgrade', version: 4 })
    objects.releases.push({ metadata: { namespace: 'apps', name: 'new' }, spec: {}, status: {} })
    objects.releases.push({ metadata: { namespace: 'apps', name: 'remote' }, spec: { kubeConfig: { secretRef: { name: 'edge' } } }, status: {} })
    const report = await run(objects)
    expect(report.releases.map((r) => [r.name, r.state, r.reason, r.message])).toEqual([
      ['busy', 'Skipped', 'NotDeployed', 'latest Helm release (revision 4) is pending-upgrade, not deployed: not compared'],
      ['new', 'Skipped', 'NotInstalled', 'not installed yet: helm-controller has recorded no Helm release'],
      ['remote', 'Skipped', 'RemoteCluster', 'installs into another cluster (spec.kubeConfig): its Helm storage and objects are not in this one'],
    ])
    expect(objects.gets).toBe(0)
    expect(driftFailure({ ...report, action: 'fail' })).toBeUndefined()
  })

  it('fails only the release whose storage is unreadable or gone', async () => {
    const objects = new FakeObjects()
      .release('apps', 'ok', yaml(cm(undefined, 'ok', {})))
      .put(cm('apps', 'ok', {}))
      .release('apps', 'bad', '')
    objects.secrets.set('apps/sh.helm.release.v1.bad.v1', {
      type: 'helm.sh/release.v1',
      data: { release: 'Zm9v' },
      labels: { owner: 'helm', name: 'bad', version: '1' },
    })
    objects.releases.push({ metadata: { namespace: 'apps', name: 'lost' }, spec: {}, status: { history: [{ name: 'lost', version: 3 }] } })
    const report = await run(objects)
    expect(report.releases.map((r) => [r.name, r.state, r.reason])).toEqual([
      ['bad', 'Error', 'StorageUnreadable'],
      ['lost', 'Error', 'NoStorage'],
      ['ok', 'InSync', 'InSync'],
    ])
    expect(report.releases[0]?.message).toContain('Helm storage Secret apps/sh.helm.release.v1.bad.v1 is corrupt')
  })

  it('selects releases by namespace list and label selector', async () => {
    const objects = new FakeObjects()
      .release('a', 'one', '', { labels: { team: 'x' } })
      .release('b', 'two', '', { labels: { team: 'y' } })
      .release('c', 'three', '', { labels: { team: 'x' } })
    expect((await run(objects, { namespaces: 'a,b' })).releases.map((r) => r.name)).toEqual(['one', 'two'])
    expect((await run(objects, { selector: 'team=x' })).releases.map((r) => r.name)).toEqual(['one', 'three'])
    expect((await run(objects, { selector: 'team=x', namespaces: 'a' })).scope).toBe('namespaces a, selector team=x')
  })

  it('ignores replicas of objects an HPA in the cluster scales, and drift-ignore paths', async () => {
    const deploy = (replicas: number, image: string): Json => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'apps' },
      spec: { replicas, template: { spec: { containers: [{ name: 'app', image }] } } },
    })
    const objects = new FakeObjects().release('apps', 'web', yaml(deploy(2, 'a'))).put(deploy(6, 'b'))
    expect((await run(objects)).releases[0]?.drifted[0]?.changes.map((c) => c.path)).toEqual(['spec.replicas', 'spec.template.spec.containers[name=app].image'])
    objects.hpaTargets.set('apps', ['Deployment/web'])
    expect((await run(objects)).releases[0]?.drifted[0]?.changes.map((c) => c.path)).toEqual(['spec.template.spec.containers[name=app].image'])
    expect((await run(objects, { 'drift-ignore': 'Deployment/web/spec.template.spec.containers[*].image' })).releases[0]?.state).toBe(ReleaseState.InSync)
  })

  it('honours helm-controller’s per-object opt-out annotation', async () => {
    const live = {
      ...cm('apps', 'web', { a: 'changed' }),
      metadata: { name: 'web', namespace: 'apps', annotations: { 'helm.toolkit.fluxcd.io/driftDetection': 'disabled' } },
    }
    const objects = new FakeObjects().release('apps', 'web', yaml(cm(undefined, 'web', { a: '1' }))).put(live)
    expect((await run(objects)).releases[0]).toMatchObject({ state: ReleaseState.InSync, ignored: 1, inSync: 0 })
  })

  it('keeps at most max-concurrency GETs in flight across releases', async () => {
    const objects = new FakeObjects()
    for (let r = 0; r < 6; r++) {
      const docs = Array.from({ length: 20 }, (_, i) => yaml(cm(undefined, `cm-${i}`, { i: String(i) }))).join('')
      objects.release(`ns-${r}`, 'app', docs)
      for (let i = 0; i < 20; i++) objects.put(cm(`ns-${r}`, `cm-${i}`, { i: String(i) }))
    }
    const report = await run(objects, { 'max-concurrency': '3' })
    expect(driftCounts(report)).toEqual({ inSync: 6, drifted: 0, skipped: 0, errors: 0 })
    expect(objects.gets).toBe(120)
    expect(objects.maxInFlight).toBe(3)
  })
})

describe('runDrift: drift-action', () => {
  const drifted = (): FakeObjects =>
    new FakeObjects().release('apps', 'web', yaml(cm(undefined, 'web', { a: '1' }))).put(cm('apps', 'web', { a: 'hand-edited' }))

  it('report never fails; fail fails naming the release, object and field', async () => {
    const report = await run(drifted())
    expect(driftFailure(report)).toBeUndefined()
    expect(driftFailure({ ...report, action: 'fail' })).toBe('1 release not in sync (drift-action: fail): apps/web: ConfigMap/apps/web data.a')
  })

  it('correct sends requestedAt and forceAt with one token, records an Event, waits, re-checks', async () => {
    const objects = drifted()
    const cluster = new FakeCluster().addRelease('apps', 'web')
    const outcome = new FakeOutcome(() => objects.put(cm('apps', 'web', { a: '1' })))
    const report = await run(objects, { 'drift-action': 'correct' }, { cluster, outcome })
    const [patch] = cluster.patches
    const annotations = patch?.patch.annotations ?? {}
    expect(annotations['reconcile.fluxcd.io/forceAt']).toBe(annotations['reconcile.fluxcd.io/requestedAt'])
    expect(outcome.waited.map((t) => [t.planned.name, t.force, t.token])).toEqual([['web', true, annotations['reconcile.fluxcd.io/requestedAt']]])
    expect(cluster.events.map((e) => [e.reason, e.message])).toEqual([
      ['DriftCorrectionRequested', 'Drift from Helm revision 1 in 1 object (ConfigMap/apps/web); forced upgrade requested.'],
    ])
    expect(report.releases[0]).toMatchObject({ state: ReleaseState.InSync, correction: { status: Status.Upgraded, revisionAfter: 2 } })
    expect(driftFailure(report)).toBeUndefined()
    expect(driftHeadline(report)).toBe('drift: 1 in sync, 0 drifted, 0 skipped, 0 not checked, 1 correction requested')
  })

  it('correct fails when the upgrade fails or the drift stays; suspended releases are not touched', async () => {
    const failing = await run(
      drifted(),
      { 'drift-action': 'correct' },
      { cluster: new FakeCluster().addRelease('apps', 'web'), outcome: new FakeOutcome(() => undefined, Status.Failed) },
    )
    expect(driftFailure(failing)).toBe('1 release not in sync (drift-action: correct): apps/web: correction Failed (UpgradeFailed)')
    const stays = await run(
      drifted(),
      { 'drift-action': 'correct' },
      { cluster: new FakeCluster().addRelease('apps', 'web'), outcome: new FakeOutcome(() => undefined) },
    )
    expect(driftFailure(stays)).toContain('apps/web: ConfigMap/apps/web data.a still drifted after correction')
    const paused = new FakeCluster().addRelease('apps', 'web', { suspend: true })
    const suspended = await run(drifted(), { 'drift-action': 'correct' }, { cluster: paused, outcome: new FakeOutcome(() => undefined) })
    expect(paused.patches).toEqual([])
    expect(suspended.releases[0]).toMatchObject({ state: ReleaseState.Drifted, correction: { status: Status.Skipped, reason: 'Suspended' } })
    expect(driftFailure(suspended)).toBe('1 release not in sync (drift-action: correct): apps/web: drifted, not corrected (Suspended)')
  })

  it('correct with dry-run sends a server-side dry run and waits for nothing', async () => {
    const cluster = new FakeCluster().addRelease('apps', 'web')
    const outcome = new FakeOutcome(() => undefined)
    const report = await run(drifted(), { 'drift-action': 'correct', 'dry-run': 'true' }, { cluster, outcome })
    expect(cluster.patches.map((p) => p.dryRun)).toEqual([true])
    expect(outcome.waited).toEqual([])
    expect(report.releases[0]?.correction).toMatchObject({ status: Status.DryRun })
  })
})

describe('drift reporting', () => {
  it('summary, text and JSON carry the field, desired → live, and never a Secret value', async () => {
    const secret = (value: string): Json => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'apps' },
      data: { password: Buffer.from(value).toString('base64') },
    })
    const objects = new FakeObjects()
      .release('apps', 'web', yaml(cm(undefined, 'web', { a: '1|2' })) + yaml(secret('desired-pw')) + yaml(cm(undefined, 'gone', {})))
      .put(cm('apps', 'web', { a: '<b>' }))
      .put(secret('live-pw'))
    const report = await run(objects, { 'drift-action': 'fail' })
    const summary = driftSummary(report)
    expect(summary).toContain('## helmrelease-trigger drift: 0 in sync, 1 drifted, 0 skipped, 0 not checked')
    const drift = tableUnder(summary, 'Drift')
    // Each object names the chart template the stored manifest says it came from.
    expect(drift).toContainEqual(['apps/web', 'ConfigMap/apps/web (demo/templates/x.yaml)', 'data.a', '"1|2" → "<b>"', 'changed'])
    expect(drift).toContainEqual(['apps/web', 'Secret/apps/db (demo/templates/x.yaml)', 'data.password', '(redacted) → (redacted)', 'changed'])
    expect(drift).toContainEqual(['apps/web', 'ConfigMap/apps/gone (demo/templates/x.yaml)', '—', '—', 'missing'])
    const text = driftText(report)
    expect(text).toMatch(/apps\/web\s+ConfigMap\/apps\/web \(demo\/templates\/x\.yaml\)\s+data\.a\s+"1\|2" -> "<b>"\s+changed/)
    const json = JSON.stringify(driftOutput(report))
    for (const out of [summary, text, json]) {
      for (const value of ['desired-pw', 'live-pw', Buffer.from('desired-pw').toString('base64'), Buffer.from('live-pw').toString('base64')])
        expect(out).not.toContain(value)
    }
    expect(driftOutput(report)).toMatchObject({
      action: 'fail',
      counts: { drifted: 1 },
      releases: [{ name: 'web', state: 'Drifted', drifted: [{ kind: 'ConfigMap', name: 'gone', state: 'missing' }, { name: 'web' }, { kind: 'Secret' }] }],
    })
  })
})
