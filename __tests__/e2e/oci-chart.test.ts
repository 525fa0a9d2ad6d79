// End to end with a chart from an OCI registry, as Flux recommends publishing charts: the
// HelmRelease names an OCIRepository through `chartRef` (no `chart` template, no HelmChart),
// source-controller pulls the chart from the loopback registry, and the bundled action
// triggers the release and reads helm-controller's outcome as it does for a HelmRepository.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { demoChart } from '../../test/support/chart.ts'
import { useCluster } from '../../test/support/context.ts'
import { helmRelease, isReady, manifestText, OCI_REPOSITORY, type FluxObject, type HelmReleaseOptions } from '../../test/support/flux.ts'
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
