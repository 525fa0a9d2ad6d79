// Mode drift with the real helm-controller: releases it installed are compared object by
// object with what Helm stored; edits and deletions made behind Helm's back are reported
// with their field paths (Secret values never), `correct` has helm-controller put them
// back, pending releases are skipped and a corrupt storage Secret fails only its release.

import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/entry/cli.ts'
import { runDrift, ReleaseState, type DriftReport } from '../../src/modes/drift/run.ts'
import { driftOutput, driftSummary, driftText } from '../../src/modes/drift/report.ts'
import { encodeRelease } from '../../src/core/helm-storage.ts'
import { createClusterClient } from '../../src/kube/cluster.ts'
import { createObjectReader } from '../../src/kube/objects.ts'
import { createOutcomeWaiter } from '../../src/engine/outcome.ts'
import { parseSettings } from '../../src/settings.ts'
import { systemClock } from '../../src/engine/ports.ts'
import { runAction } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { HELM_RELEASE, isObserved } from '../../test/support/flux.ts'
import { driftChart, driftChartObjects, manyConfigMapsChart } from '../../test/support/drift-chart.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { tableUnder } from '../../test/support/markdown.ts'

const cluster = useCluster()
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api)
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
const warnings: string[] = []
const log = { info: () => undefined, warning: (m: string) => void warnings.push(m) }
const CHART = `drift-${randomBytes(3).toString('hex')}`
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))

async function drift(namespace: string, inputs: Record<string, string> = {}): Promise<DriftReport> {
  const settings = parseSettings((n) => ({ namespaces: namespace, timeout: '120s', ...inputs })[n] ?? '')
  return runDrift(settings, {
    objects: async () => createObjectReader(cluster.kubeconfig, cluster.server),
    connect: async () => createClusterClient(cluster.kubeconfig, cluster.server),
    clock: systemClock,
    log,
    outcome: createOutcomeWaiter({ clock: systemClock, log }),
  })
}

async function install(namespace: string, name: string, chart = CHART, values: Record<string, unknown> = { greeting: 'hello' }): Promise<void> {
  await cluster.applyHelmRelease({ namespace, name, chart, values })
  await cluster.waitForHelmReleaseReady(namespace, name)
}

const b64 = (s: string): string => Buffer.from(s).toString('base64')

// Helm v4 keeps each object's `# Source: <chart>/templates/<file>` comment in the stored manifest.
const helmKeepsSource = cluster.versions.helm.startsWith('v4.')
const template = (file: string): { source?: string } => (helmKeepsSource ? { source: `${CHART}/templates/${file}` } : {})

/** Everything a user could see of a report. */
function rendered(report: DriftReport): string {
  return `${JSON.stringify(driftOutput(report))}\n${driftSummary(report)}\n${driftText(report)}`
}

describe('drift of a release installed by the real helm-controller', () => {
  let ns: string
  beforeAll(async () => {
    await cluster.publishChart(driftChart(CHART))
    ns = await cluster.createNamespace('drift')
    await cluster.applyHelmRepository(ns)
    await install(ns, 'app')
  })

  it('is in sync as installed: every rendered object read and compared', async () => {
    const report = await drift(ns)
    const [release] = report.releases
    expect(release, rendered(report)).toMatchObject({
      namespace: ns,
      name: 'app',
      releaseName: 'app',
      storageNamespace: ns,
      revision: 1,
      chart: `${CHART}-0.1.0`,
      state: ReleaseState.InSync,
      objects: driftChartObjects('app').length,
      inSync: driftChartObjects('app').length,
      drifted: [],
    })
  })

  it('reports an edited field with its path and both values, a Secret change without values, and not the HPA-owned replicas', async () => {
    await cluster.core.patchNamespacedConfigMap({ namespace: ns, name: 'app', body: { data: { greeting: 'edited' } } }, merge)
    await cluster.core.patchNamespacedSecret({ namespace: ns, name: 'app-credentials', body: { data: { password: b64('tampered-value') } } }, merge)
    await apps.patchNamespacedDeployment({ namespace: ns, name: 'app', body: { spec: { replicas: 4 } } }, merge)

    const report = await drift(ns)
    const [release] = report.releases
    expect(release?.state, rendered(report)).toBe(ReleaseState.Drifted)
    // `source`: the chart template, from the `# Source:` comment Helm v4 keeps in the stored
    // manifest; under Helm v3, helm-controller's post-renderer (origin labels) drops it.
    expect(release?.drifted).toEqual([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: ns,
        name: 'app',
        ...template('configmap.yaml'),
        state: 'changed',
        changes: [{ path: 'data.greeting', desired: '"hello"', live: '"edited"' }],
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        namespace: ns,
        name: 'app-credentials',
        ...template('secret.yaml'),
        state: 'changed',
        changes: [{ path: 'data.password', desired: '(redacted)', live: '(redacted)' }],
      },
    ])
    const text = rendered(report)
    for (const secret of ['tampered-value', b64('tampered-value'), 'app-s3cret-pw', b64('app-s3cret-pw')]) expect(text).not.toContain(secret)
    expect(tableUnder(driftSummary(report), 'Drift')).toContainEqual([
      `${ns}/app`,
      `ConfigMap/${ns}/app${helmKeepsSource ? ` (${CHART}/templates/configmap.yaml)` : ''}`,
      'data.greeting',
      '"hello" → "edited"',
      'changed',
    ])
  })

  it('reports a deleted object as missing', async () => {
    await cluster.core.deleteNamespacedService({ namespace: ns, name: 'app' })
    const report = await drift(ns)
    expect(report.releases[0]?.drifted.map((o) => `${o.kind}/${o.name}:${o.state}`)).toEqual([
      'ConfigMap/app:changed',
      'Secret/app-credentials:changed',
      'Service/app:missing',
    ])
  })

  it('correct: helm-controller re-applies the release and the re-check finds it in sync', async () => {
    const report = await drift(ns, { 'drift-action': 'correct' })
    const [release] = report.releases
    expect(release?.correction, rendered(report)).toMatchObject({ status: 'Upgraded', revisionAfter: 2 })
    expect(release).toMatchObject({ state: ReleaseState.InSync, revision: 2, drifted: [] })
    expect((await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'app' })).data?.['greeting']).toBe('hello')
    expect((await cluster.core.readNamespacedSecret({ namespace: ns, name: 'app-credentials' })).data?.['password']).toBe(b64('app-s3cret-pw'))
    expect((await cluster.core.readNamespacedService({ namespace: ns, name: 'app' })).spec?.ports?.[0]?.port).toBe(80)
    const hr = await cluster.getHelmRelease(ns, 'app')
    expect(hr.metadata.annotations?.['reconcile.fluxcd.io/forceAt']).toBe(hr.metadata.annotations?.['reconcile.fluxcd.io/requestedAt'])
    const events = await cluster.core.listNamespacedEvent({ namespace: ns })
    expect(events.items.filter((e) => e.reason === 'DriftCorrectionRequested').map((e) => e.message)).toEqual([
      expect.stringContaining('Drift from Helm revision 1 in 3 objects'),
    ])
    expect(await drift(ns, { 'drift-action': 'fail' }).then((r) => r.releases[0]?.state)).toBe(ReleaseState.InSync)
  })
})

describe('releases drift cannot compare', () => {
  it('skips a pending release, fails only the release whose storage Secret is corrupt, and checks the others', async () => {
    const ns = await cluster.createNamespace('drift-mixed')
    await cluster.applyHelmRepository(ns)
    await Promise.all(['good', 'pending', 'broken'].map((name) => install(ns, name, 'demo')))

    // An upgrade interrupted mid-way leaves a pending-upgrade revision on top, as Helm writes it.
    // Suspended first: helm-controller would otherwise unlock it (mark it failed) on its next pass.
    // A pass with the older spec can still be in flight (the install's own follow-up), so the
    // pending revision is written only once it has observed the suspension: its suspended pass
    // records the new generation, and no pass with the older spec can follow.
    await cluster.custom.patchNamespacedCustomObject({ ...HELM_RELEASE, namespace: ns, name: 'pending', body: { spec: { suspend: true } } }, merge)
    await cluster.waitFor(async () => isObserved(await cluster.getHelmRelease(ns, 'pending')), { timeoutMs: 60_000 })
    const v1 = await cluster.core.readNamespacedSecret({ namespace: ns, name: 'sh.helm.release.v1.pending.v1' })
    const stored = JSON.parse(gunzipSync(Buffer.from(Buffer.from(v1.data?.['release'] ?? '', 'base64').toString(), 'base64')).toString()) as Record<
      string,
      unknown
    >
    const pending = { ...stored, version: 2, info: { ...(stored['info'] as object), status: 'pending-upgrade' } }
    await cluster.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'sh.helm.release.v1.pending.v2', labels: { owner: 'helm', name: 'pending', status: 'pending-upgrade', version: '2' } },
        type: 'helm.sh/release.v1',
        data: { release: encodeRelease(pending) },
      },
    })
    // A storage Secret cut short: Helm's base64 text halved (on a 4-character boundary).
    const broken = await cluster.core.readNamespacedSecret({ namespace: ns, name: 'sh.helm.release.v1.broken.v1' })
    const helmText = Buffer.from(broken.data?.['release'] ?? '', 'base64').toString()
    const cut = helmText.slice(0, Math.floor(helmText.length / 8) * 4)
    await cluster.core.patchNamespacedSecret({ namespace: ns, name: 'sh.helm.release.v1.broken.v1', body: { data: { release: b64(cut) } } }, merge)

    const report = await drift(ns, { 'drift-action': 'fail' })
    expect(report.releases.map((r) => [r.name, r.state, r.reason, r.message])).toEqual([
      ['broken', 'Error', 'StorageUnreadable', `Helm storage Secret ${ns}/sh.helm.release.v1.broken.v1 is truncated: its gzip stream ends early`],
      ['good', 'InSync', 'InSync', '1 object'],
      ['pending', 'Skipped', 'NotDeployed', 'latest Helm release (revision 2) is pending-upgrade, not deployed: not compared'],
    ])

    // The CLI: the same check, a table on stdout, exit 1 for drift-action fail.
    let stdout = ''
    let stderr = ''
    const io = { out: (t: string) => void (stdout += t), err: (t: string) => void (stderr += t), env: {}, cwd: process.cwd() }
    const code = await main(['drift', '--kubeconfig', cluster.kubeconfigPath, '--namespaces', ns, '--drift-action', 'fail'], io)
    expect(code, stderr).toBe(1)
    expect(stdout).toContain('helmrelease-trigger drift: 1 in sync, 0 drifted, 1 skipped, 1 not checked')
    expect(stdout).toMatch(new RegExp(`${ns}/broken\\s+Error\\s+StorageUnreadable`))
    expect(stderr).toContain(`error: 1 release not in sync (drift-action: fail): ${ns}/broken: Helm storage Secret`)
    stdout = ''
    expect(await main(['drift', '--kubeconfig', cluster.kubeconfigPath, '--namespaces', ns, '--json'], io)).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({ action: 'report', counts: { inSync: 1, skipped: 1, errors: 1 } })
  })
})

describe('a large release', () => {
  it('checks a release of 300 objects and finds the one drifted', async () => {
    const chart = `${CHART}-many`
    await cluster.publishChart(manyConfigMapsChart(chart, 300))
    const ns = await cluster.createNamespace('drift-large')
    await cluster.applyHelmRepository(ns)
    await install(ns, 'bulk', chart)
    await cluster.core.patchNamespacedConfigMap({ namespace: ns, name: 'bulk-299', body: { data: { greeting: 'changed' } } }, merge)
    const started = Date.now()
    const report = await drift(ns, { 'max-concurrency': '10' })
    const elapsed = Date.now() - started
    expect(report.releases[0]).toMatchObject({ state: ReleaseState.Drifted, objects: 300, inSync: 299 })
    expect(report.releases[0]?.drifted.map((o) => o.name)).toEqual(['bulk-299'])
    console.log(`drift: checked 300 objects in ${elapsed} ms`)
  })
})

describe('a scheduled drift job (the bundled action)', () => {
  it('fails after someone edits a rendered ConfigMap, shows the exact field, and drift-action correct puts it back', async () => {
    const ns = await cluster.createNamespace('drift-job')
    await cluster.applyHelmRepository(ns)
    await install(ns, 'web', 'demo', { greeting: 'hello' })
    await cluster.core.patchNamespacedConfigMap({ namespace: ns, name: 'web', body: { data: { greeting: 'edited by hand' } } }, merge)
    const repo = createRepo()
    repos.push(repo)
    const sha = repo.commit('empty')
    const job = (action: string) =>
      runAction({
        workspace: repo.dir,
        eventName: 'schedule',
        event: {},
        sha,
        inputs: { mode: 'drift', kubeconfig, namespaces: ns, 'drift-action': action, timeout: '120s' },
      })

    const failed = await job('fail')
    expect(failed.exitCode, `${failed.stdout}\n${failed.stderr}`).toBe(1)
    expect(tableUnder(failed.summary, 'Drift')).toContainEqual([
      `${ns}/web`,
      `ConfigMap/${ns}/web${helmKeepsSource ? ' (demo/templates/configmap.yaml)' : ''}`,
      'data.greeting',
      '"hello" → "edited by hand"',
      'changed',
    ])
    expect(failed.stdout).toContain(`::error::1 release not in sync (drift-action: fail): ${ns}/web: ConfigMap/${ns}/web data.greeting`)
    const output = JSON.parse(failed.outputs['drift'] ?? '{}') as { releases: { state: string; drifted: { changes: { path: string }[] }[] }[] }
    expect(output.releases[0]?.state).toBe('Drifted')
    expect(output.releases[0]?.drifted[0]?.changes.map((c) => c.path)).toEqual(['data.greeting'])

    const corrected = await job('correct')
    expect(corrected.exitCode, `${corrected.stdout}\n${corrected.stderr}`).toBe(0)
    expect(corrected.summary).toContain('back in sync')
    expect((await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'web' })).data?.['greeting']).toBe('hello')

    const reported = await job('report')
    expect(reported.exitCode).toBe(0)
    expect(JSON.parse(reported.outputs['drift'] ?? '{}')).toMatchObject({ counts: { inSync: 1, drifted: 0 } })
  })
})
