// End to end with a chart from an OCI registry, as Flux recommends publishing charts: the
// HelmRelease names an OCIRepository through `chartRef` (no `chart` template, no HelmChart),
// source-controller pulls the chart from the loopback registry, and the bundled action
// triggers the release and reads helm-controller's outcome as it does for a HelmRepository.
// Through the GitOps loop, a commit that bumps the OCIRepository's tag is the chart upgrade:
// the action waits for source-controller's new artifact, then for helm-controller's upgrade.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { demoChart } from '../../test/support/chart.ts'
import { useCluster } from '../../test/support/context.ts'
import { helmRelease, isReady, manifestText, OCI_REPOSITORY, ociRepository, type FluxObject, type HelmReleaseOptions } from '../../test/support/flux.ts'
import { fluxTree, generatedValuesApp, podinfoChartRefRelease } from '../../test/support/gitops.ts'
import { bootstrap, pushAndRun, type Loop } from '../../test/support/gitops-loop.ts'
import { kustomizeBinary } from '../../test/support/kustomize.ts'
import { tableUnder } from '../../test/support/markdown.ts'
import { startSlowRegistry, type SlowRegistry } from '../../test/support/slow-registry.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')

function configMapManifest(namespace: string, values: string): string {
  return triggerConfigMap({ name: 'app-values', namespace, releases: 'app', values })
}

/** The release as the cluster gets it and as the repository's file holds it. */
function release(namespace: string): HelmReleaseOptions {
  return { namespace, name: 'app', chartRef: { kind: 'OCIRepository', name: 'demo' }, valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] }
}

function outputOf(run: ActionRun, name: string): { name: string; status: string; revisionBefore?: number; revisionAfter?: number }[] {
  return JSON.parse(run.outputs[name] ?? '[]')
}

describe('a HelmRelease whose chart comes from an OCIRepository (chartRef)', () => {
  let namespace: string
  let repo: Repo
  let head: string
  let chartDigest: string

  beforeAll(async () => {
    namespace = await cluster.createNamespace('e2e-oci')
    const pushed = await cluster.pushOciChart(demoChart('0.1.0'))
    chartDigest = pushed.digest
    await cluster.applyOciRepository({ namespace, name: 'demo', url: pushed.url, tag: pushed.tag })
    await cluster.applyValues(namespace, 'greeting: hello')
    await cluster.applyHelmRelease(release(namespace))
    await cluster.waitForHelmReleaseReady(namespace, 'app')
    repo = createRepo()
    repo.write({ 'apps/values.yaml': configMapManifest(namespace, 'greeting: hello'), 'apps/release.yaml': manifestText(helmRelease(release(namespace))) })
    head = repo.commit('initial')
  })
  afterAll(() => repo?.cleanup())

  it('installed the chart source-controller pulled from the registry', async () => {
    const source = (await cluster.custom.getNamespacedCustomObject({ ...OCI_REPOSITORY, namespace, name: 'demo' })) as FluxObject
    expect(isReady(source)).toBe(true)
    const artifact = source.status?.['artifact'] as { revision?: string } | undefined
    expect(artifact?.revision).toBe(`0.1.0@${chartDigest}`)
    const release = await cluster.getHelmRelease(namespace, 'app')
    // helm-controller marks a chart from an OCIRepository with the artifact's digest as build metadata.
    expect(release.status?.history?.[0]).toMatchObject({
      status: 'deployed',
      chartVersion: `0.1.0+${chartDigest.slice('sha256:'.length, 'sha256:'.length + 12)}`,
    })
  })

  it('triggers the release when its ConfigMap changes and reports the upgrade to revision 2', async () => {
    const before = head
    repo.write({ 'apps/values.yaml': configMapManifest(namespace, 'greeting: bonjour') })
    head = repo.commit('change values')
    await cluster.applyValues(namespace, 'greeting: bonjour')
    const run = await runAction({
      workspace: repo.dir,
      eventName: 'push',
      event: { before, after: head, ref: 'refs/heads/main' },
      sha: head,
      inputs: { kubeconfig, timeout: '90s' },
    })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(outputOf(run, 'triggered')).toEqual([expect.objectContaining({ name: 'app', status: 'Upgraded', revisionBefore: 1, revisionAfter: 2 })])
    expect(outputOf(run, 'failed')).toEqual([])
    expect(run.summary).toContain('1 → 2')
    const rendered = await cluster.core.readNamespacedConfigMap({ namespace, name: 'app' })
    expect(rendered.data?.['greeting']).toBe('bonjour')
  })
})

describe('a chart bump through the GitOps loop: a commit changes the OCIRepository tag', () => {
  const chart = (version: string) => ({ ...demoChart(version), name: 'gitops-oci' })
  let kustomize: string
  let loop: Loop
  let url: string
  let registry: SlowRegistry
  const digests = new Map<string, string>()
  // source-controller takes this long to resolve 0.3.0: an upgrade that does not wait for the new chart runs on the old one.
  const SLOW_TAG = '0.3.0'

  const repository = (namespace: string, tag: string): string => manifestText(ociRepository({ namespace, name: 'podinfo', url, tag }))
  const values = (greeting: string): string => stringify({ greeting })
  /** The line `tag:` is on in apps/podinfo/repository.yaml: where the summary points. */
  const tagLine = (text: string): number => text.split('\n').findIndex((line) => line.trim().startsWith('tag:')) + 1

  interface Entry {
    readonly name: string
    readonly status: string
    readonly reason?: string
    readonly message?: string
    readonly revisionBefore?: number
    readonly revisionAfter?: number
    readonly chart?: { source: string; revision?: string }
  }
  const output = (run: ActionRun, name: string): Entry[] => JSON.parse(run.outputs[name] ?? '[]')
  const podinfo = async () => cluster.getHelmRelease(loop.namespace, 'podinfo')
  const deployed = async () => cluster.core.readNamespacedConfigMap({ namespace: loop.namespace, name: 'podinfo' })

  beforeAll(async () => {
    kustomize = await kustomizeBinary()
    registry = await startSlowRegistry(cluster.ociRegistryUrl ?? '', (path) => (path.includes(`/manifests/${SLOW_TAG}`) ? 3_000 : 0))
    for (const version of ['0.1.0', '0.2.0', SLOW_TAG]) {
      const pushed = await cluster.pushOciChart(chart(version))
      url = `oci://${registry.host}${new URL(pushed.url.replace(/^oci:/, 'http:')).pathname}`
      digests.set(version, pushed.digest)
    }
    loop = await bootstrap(cluster, 'gitops-oci', async (namespace) => ({
      ...fluxTree({ namespace, chartRepoUrl: cluster.chartRepoUrl }),
      ...generatedValuesApp(namespace, values('hello')),
      'apps/podinfo/repository.yaml': repository(namespace, '0.1.0'),
      'apps/podinfo/release.yaml': podinfoChartRefRelease(namespace, 'OCIRepository'),
    }))
  }, 45 * 60_000)
  afterAll(() => registry?.close())

  it('waits for the new artifact and helm-controller, and reports the upgrade at the tag line with the revision fetched', async () => {
    const file = repository(loop.namespace, '0.2.0')
    const run = await pushAndRun(cluster, loop, { 'apps/podinfo/repository.yaml': file }, 'podinfo: chart 0.2.0', { kubeconfig, kustomize })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const [result, ...others] = output(run, 'triggered')
    expect(others).toEqual([])
    expect(result).toMatchObject({
      name: 'podinfo',
      revisionAfter: 2,
      chart: { source: `OCIRepository/${loop.namespace}/podinfo`, revision: `0.2.0@${digests.get('0.2.0')}` },
    })
    // Upgraded 1 → 2, or Unchanged at 2 when helm-controller finished before the action's first read (gitops-trigger.test.ts says why).
    expect(
      [
        ['Upgraded', 1],
        ['Unchanged', 2],
      ],
      run.stdout,
    ).toContainEqual([result?.status, result?.revisionBefore])
    expect(tableUnder(run.summary, 'Releases').map((row) => row[0])).toContainEqual(expect.stringContaining(`apps/podinfo/repository.yaml:${tagLine(file)}`))
    expect((await deployed()).metadata?.annotations?.['demo.helmrelease-trigger.test/chart-version']).toMatch(/^0\.2\.0\+/)
  })

  it('upgrades once, on the new chart with the new values, when a commit bumps both and the registry is slow', async () => {
    const run = await pushAndRun(
      cluster,
      loop,
      { 'apps/podinfo/repository.yaml': repository(loop.namespace, SLOW_TAG), 'apps/podinfo/values.yaml': values('bonjour') },
      'podinfo: chart 0.3.0, say bonjour',
      { kubeconfig, kustomize },
    )
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(output(run, 'triggered')).toEqual([expect.objectContaining({ name: 'podinfo', revisionAfter: 3 })])
    // No revision on the old chart with the new values: the only new one has both (helm-controller keeps the last two).
    const history = (await podinfo()).status?.history ?? []
    expect(history.map((h) => [h.version, h.chartVersion?.split('+')[0]])).toEqual([
      [3, '0.3.0'],
      [2, '0.2.0'],
    ])
    expect((await deployed()).data?.['greeting']).toBe('bonjour')
  })

  it("fails naming the tag line and source-controller's error when the tag does not exist, and upgrades nothing", async () => {
    const file = repository(loop.namespace, '9.9.9')
    const run = await pushAndRun(cluster, loop, { 'apps/podinfo/repository.yaml': file }, 'podinfo: a chart never pushed', { kubeconfig, kustomize })
    expect(run.exitCode, run.stdout).toBe(1)
    const [failed] = output(run, 'failed')
    expect(failed).toMatchObject({ name: 'podinfo', status: 'Failed', reason: 'ChartNotFetched' })
    expect(failed?.message).toContain(`source-controller could not fetch the chart OCIRepository/${loop.namespace}/podinfo names since the commit`)
    expect(failed?.message).toContain(`apps/podinfo/repository.yaml:${tagLine(file)}`)
    expect(failed?.message).toContain('9.9.9')
    expect((await podinfo()).status?.history?.[0]).toMatchObject({ version: 3, status: 'deployed' })
  })
})
