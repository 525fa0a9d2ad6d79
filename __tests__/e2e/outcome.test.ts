// End to end with the real source-controller and helm-controller: a real git repository,
// the bundled action run as the runner runs it, and helm-controller's real outcome.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { chartRepositoryName } from '../../test/support/flux.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')

function configMapManifest(namespace: string, values: string, extra = ''): string {
  return `${triggerConfigMap({ name: 'app-values', namespace, releases: 'app', values }).replace(/\n$/, '')}${extra}\n`
}

function helmReleaseManifest(namespace: string, interval = '1h'): string {
  return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app
  namespace: ${namespace}
spec:
  interval: ${interval}
  chart:
    spec:
      chart: demo
      version: '*'
      sourceRef:
        kind: HelmRepository
        name: ${chartRepositoryName(namespace)}
  install:
    disableWait: true
  upgrade:
    disableWait: true
  valuesFrom:
    - kind: ConfigMap
      name: app-values
`
}

interface Fleet {
  readonly namespace: string
  readonly repo: Repo
  head: string
}

/** A namespace with the chart repository, the ConfigMap and the release installed (revision 1), and its repository. */
async function fleet(prefix: string, greeting = 'hello', spec?: Record<string, unknown>): Promise<Fleet> {
  const namespace = await cluster.createNamespace(prefix)
  await cluster.applyHelmRepository(namespace)
  await cluster.applyValues(namespace, `greeting: ${greeting}`)
  await cluster.applyHelmRelease({ namespace, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }], ...(spec === undefined ? {} : { spec }) })
  await cluster.waitForHelmReleaseReady(namespace, 'app')
  const repo = createRepo()
  repo.write({ 'apps/values.yaml': configMapManifest(namespace, `greeting: ${greeting}`), 'apps/release.yaml': helmReleaseManifest(namespace) })
  return { namespace, repo, head: repo.commit('initial fleet') }
}

async function push(f: Fleet, files: Record<string, string>, inputs: Record<string, string> = {}): Promise<ActionRun> {
  const before = f.head
  f.repo.write(files)
  f.head = f.repo.commit('change values')
  return runAction({
    workspace: f.repo.dir,
    eventName: 'push',
    event: { before, after: f.head, ref: 'refs/heads/main' },
    sha: f.head,
    inputs: { kubeconfig, timeout: '90s', ...inputs },
  })
}

function parsed(
  run: ActionRun,
  name: string,
): {
  name: string
  status: string
  reason: string
  message: string
  revisionBefore?: number
  revisionAfter?: number
  token?: string
  deployed?: unknown
}[] {
  return JSON.parse(run.outputs[name] ?? '[]')
}

async function renderedGreeting(namespace: string): Promise<string | undefined> {
  const cm = await cluster.core.readNamespacedConfigMap({ namespace, name: 'app' })
  return cm.data?.['greeting']
}

const fleets: Fleet[] = []
afterAll(() => fleets.forEach((f) => f.repo.cleanup()))

/**
 * Applies values the demo chart refuses to render and pushes them, as kustomize-controller
 * would have applied them: the run fails with helm-controller's UpgradeFailed and its message.
 */
async function pushRejectedValues(f: Fleet): Promise<{ broken: ActionRun; failed: ReturnType<typeof parsed>[number] | undefined }> {
  const values = 'greeting: bonjour\nfail: values rejected by the demo chart'
  await cluster.applyValues(f.namespace, values)
  const broken = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, values) })
  expect(broken.exitCode).toBe(1)
  const [failed] = parsed(broken, 'failed')
  expect(failed, JSON.stringify(failed)).toMatchObject({ name: 'app', status: 'Failed', reason: 'UpgradeFailed' })
  expect(failed?.message).toContain('values rejected by the demo chart')
  return { broken, failed }
}

describe('trigger and wait, with the real helm-controller', () => {
  let f: Fleet
  beforeAll(async () => {
    f = await fleet('e2e-upgrade')
    fleets.push(f)
  })

  it('upgrades to revision 2 once the new ConfigMap is applied, and reports Upgraded', async () => {
    // The apply lands a few seconds after the push, as kustomize-controller's would.
    const applied = new Promise<void>((resolve, reject) => setTimeout(() => cluster.applyValues(f.namespace, 'greeting: bonjour').then(resolve, reject), 3_000))
    const run = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: bonjour') })
    await applied
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const [triggered] = parsed(run, 'triggered')
    expect(triggered).toMatchObject({ name: 'app', status: 'Upgraded', revisionBefore: 1, revisionAfter: 2 })
    expect(await renderedGreeting(f.namespace)).toBe('bonjour')
    expect(run.summary).toContain('1 → 2')
    expect(run.summary).toContain('Upgraded')
    // What the upgrade changed, read back from Helm's storage: the chart's ConfigMap and the values given.
    expect(triggered?.deployed).toMatchObject({
      from: 1,
      to: 2,
      objects: [
        {
          object: `ConfigMap ${f.namespace}/app`,
          change: 'changed',
          paths: expect.arrayContaining([{ path: 'data.greeting', change: 'changed', before: 'hello', after: 'bonjour' }]),
        },
      ],
      values: [{ path: 'greeting', change: 'changed', before: 'hello', after: 'bonjour' }],
      valuesHidden: false,
    })
    expect(run.summary).toContain('### What Helm deployed')
    expect(run.stdout).toContain(`deployed ${f.namespace}/app revision 1 → 2: changes ConfigMap ${f.namespace}/app`)
  })

  it('triggers nothing for a comment-only edit', async () => {
    const run = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: bonjour # said politely') })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(parsed(run, 'triggered')).toEqual([])
    expect(run.summary).toContain('nothing to trigger')
  })

  it("fails with helm-controller's message when the values break the chart", async () => {
    const { broken } = await pushRejectedValues(f)
    expect(broken.summary).toContain('values rejected by the demo chart')
    const warnings = await cluster.core.listNamespacedEvent({ namespace: f.namespace, fieldSelector: 'reason=UpgradeFailed,type=Warning' })
    expect(warnings.items.map((e) => e.message).join('\n')).toContain('values rejected by the demo chart')
  })
})

describe('the deployed diff when Helm storage loses the revision before during the upgrade', () => {
  it('still shows what the upgrade changed: the revision before was read before the patch', async () => {
    const f = await fleet('e2e-pruned')
    fleets.push(f)
    const storage = { namespace: f.namespace, name: 'sh.helm.release.v1.app.v1' }
    // As a prune would (helm-controller's maxHistory on a later upgrade): revision 1 deleted once revision 2 is stored.
    const pruned = cluster
      .waitFor(async () => (await cluster.core.listNamespacedSecret({ namespace: f.namespace, labelSelector: 'owner=helm,version=2' })).items.length > 0, {
        timeoutMs: 120_000,
        message: 'Helm storage revision 2',
      })
      .then(() => cluster.core.deleteNamespacedSecret(storage))
    const applied = new Promise<void>((resolve, reject) => setTimeout(() => cluster.applyValues(f.namespace, 'greeting: salut').then(resolve, reject), 3_000))
    const run = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: salut') })
    await Promise.all([applied, pruned])
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const [triggered] = parsed(run, 'triggered')
    expect(triggered).toMatchObject({ status: 'Upgraded', revisionBefore: 1, revisionAfter: 2 })
    await expect(cluster.core.readNamespacedSecret(storage)).rejects.toThrow()
    expect(triggered?.deployed).toMatchObject({
      from: 1,
      to: 2,
      objects: [{ paths: expect.arrayContaining([{ path: 'data.greeting', change: 'changed', before: 'hello', after: 'salut' }]) }],
    })
  })
})

describe('a release stalled with its retries exhausted', () => {
  it('gets resetAt with the token automatically and upgrades', async () => {
    const f = await fleet('e2e-stalled')
    fleets.push(f)
    // A key the apiserver refuses in ConfigMap data: Helm's upgrade fails at apply, records
    // a failed revision, and with no remediation retries helm-controller stalls the release.
    await cluster.applyValues(f.namespace, 'greeting: hi\n"bad key": 1')
    const broken = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: hi\n"bad key": 1') })
    expect(broken.exitCode).toBe(1)
    await cluster.waitFor(
      async () => {
        const conditions = ((await cluster.getHelmRelease(f.namespace, 'app')).status?.conditions ?? []) as { type: string; status: string }[]
        return conditions.some((c) => c.type === 'Stalled' && c.status === 'True')
      },
      { timeoutMs: 60_000, message: 'a Stalled release' },
    )

    // Applied after the push starts, as kustomize-controller would: a changed ConfigMap
    // lets helm-controller retry on its own, which would beat us to the upgrade.
    const applied = new Promise<void>((resolve, reject) => setTimeout(() => cluster.applyValues(f.namespace, 'greeting: salut').then(resolve, reject), 2_000))
    const fixed = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: salut') })
    await applied
    expect(fixed.exitCode, fixed.stdout + fixed.stderr).toBe(0)
    const [upgraded] = parsed(fixed, 'triggered')
    expect(upgraded, JSON.stringify(upgraded)).toMatchObject({ name: 'app', status: 'Upgraded' })
    const annotations = (await cluster.getHelmRelease(f.namespace, 'app')).metadata.annotations ?? {}
    expect(annotations['reconcile.fluxcd.io/resetAt']).toBe(upgraded?.token)
    expect(await renderedGreeting(f.namespace)).toBe('salut')
  })
})

describe('a release with the RetryOnFailure upgrade strategy', () => {
  it('is reported Failed with the message as soon as the upgrade fails, then upgrades on the next fixed commit', async () => {
    // helm-controller neither remediates nor stalls such a release: it retries on its own at retryInterval.
    const f = await fleet('e2e-retry', 'hello', { upgrade: { disableWait: true, strategy: { name: 'RetryOnFailure', retryInterval: '1h' } } })
    fleets.push(f)
    const { failed } = await pushRejectedValues(f)
    // The committer learns the release is not stuck: helm-controller retries it on its own. The count
    // is helm-controller's own: 2 when another reconcile (the new ConfigMap's) failed before our read.
    expect(failed?.message).toMatch(/\(helm-controller keeps retrying; [12] failures? so far\)$/)
    const conditions = ((await cluster.getHelmRelease(f.namespace, 'app')).status?.conditions ?? []) as { type: string; status: string }[]
    expect(conditions.filter((c) => c.type === 'Stalled' && c.status === 'True')).toEqual([])

    await cluster.applyValues(f.namespace, 'greeting: salut')
    const fixed = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: salut') })
    expect(fixed.exitCode, fixed.stdout + fixed.stderr).toBe(0)
    expect(parsed(fixed, 'failed')).toEqual([])
    // helm-controller also retries such a release on its own, and may deploy the fix before the
    // run's first read: then the run truthfully finds it Unchanged at that revision.
    const [result, ...others] = parsed(fixed, 'triggered')
    expect(others).toEqual([])
    expect(result).toMatchObject({ name: 'app' })
    expect(['Upgraded', 'Unchanged'], JSON.stringify(result)).toContain(result?.status)
    expect(await renderedGreeting(f.namespace)).toBe('salut')
  })
})

describe('wait-for-apply', () => {
  it('times out naming the source that never arrived and patches nothing', async () => {
    const f = await fleet('e2e-never')
    fleets.push(f)
    const run = await push(f, { 'apps/values.yaml': configMapManifest(f.namespace, 'greeting: never-applied') }, { timeout: '8s' })
    expect(run.exitCode).not.toBe(0)
    expect(run.summary).toContain(`ConfigMap/${f.namespace}/app-values never reached the planned content`)
    const annotations = (await cluster.getHelmRelease(f.namespace, 'app')).metadata.annotations ?? {}
    expect(annotations['reconcile.fluxcd.io/requestedAt']).toBeUndefined()
    expect(parsed(run, 'triggered')).toEqual([])
  })
})

describe('a release whose manifest changed with its ConfigMap', () => {
  it('is triggered once, not twice', async () => {
    const f = await fleet('e2e-once')
    fleets.push(f)
    await cluster.applyValues(f.namespace, 'greeting: hola')
    const run = await push(f, {
      'apps/values.yaml': configMapManifest(f.namespace, 'greeting: hola'),
      'apps/release.yaml': helmReleaseManifest(f.namespace, '2h'),
    })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const triggered = parsed(run, 'triggered')
    expect(triggered.map((t) => t.name)).toEqual(['app'])
    const events = await cluster.core.listNamespacedEvent({ namespace: f.namespace, fieldSelector: 'reason=ConfigChanged' })
    expect(events.items).toHaveLength(1)
    expect(await renderedGreeting(f.namespace)).toBe('hola')
  })
})
