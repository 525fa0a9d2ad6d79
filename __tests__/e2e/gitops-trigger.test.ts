// The GitOps loop end to end, with nothing standing in for Flux: a commit pushed to the
// loopback git server is fetched by the real source-controller and applied by the real
// kustomize-controller (a configMapGenerator's values, a SOPS Secret decrypted with an age
// key made here); the bundled action, run as the runner runs it on that push, renders the
// repository as Flux does, waits until kustomize-controller has applied the commit,
// triggers, and reports helm-controller's upgrade at the line the commit edited.

import { readFileSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import type { ActionRun } from '../../test/support/action.ts'
import { demoChart } from '../../test/support/chart.ts'
import { useCluster } from '../../test/support/context.ts'
import { chartRepositoryName } from '../../test/support/flux.ts'
import { fluxTree, generatedValuesApp, kustomization, podinfoChartRefRelease, podinfoRelease } from '../../test/support/gitops.ts'
import { bootstrap as bootstrapLoop, pushAndRun as pushAndRunLoop, type Loop } from '../../test/support/gitops-loop.ts'
import { kustomizeBinary } from '../../test/support/kustomize.ts'
import { tableUnder } from '../../test/support/markdown.ts'
import { ageKeySecret, encryptSecret, makeAgeKey, sopsTools, type AgeKey } from '../../test/support/sops.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')

let kustomize: string
beforeAll(async () => {
  // Cold builds take minutes; cached ones are instant.
  kustomize = await kustomizeBinary()
  await sopsTools()
}, 45 * 60_000)

const bootstrap = (prefix: string, files: (namespace: string) => Promise<Record<string, string>>): Promise<Loop> => bootstrapLoop(cluster, prefix, files)
const pushAndRun = (loop: Loop, files: Record<string, string>, message: string): Promise<ActionRun> =>
  pushAndRunLoop(cluster, loop, files, message, { kubeconfig, kustomize })

function triggered(run: ActionRun): { name: string; status: string; revisionBefore?: number; revisionAfter?: number }[] {
  return JSON.parse(run.outputs['triggered'] ?? '[]')
}

/**
 * The release at revision 2, as the action reports it: `Upgraded 1 → 2` is the action's upgrade.
 * helm-controller can also act on its own: any pass of it after kustomize-controller applied the
 * new values upgrades. Giving each namespace a HelmRepository of its own removed one reason for
 * such a pass (a cross-namespace HelmChart requeue); a clean-clone run still showed both tests
 * at revision 2 before the action's first read, cause not found. The action then reports,
 * truthfully, `Unchanged` at revision 2. Either way the deployed values are checked after.
 */
function expectRevisionTwo(run: ActionRun): void {
  const results = triggered(run)
  expect(results, run.stdout).toHaveLength(1)
  const [result] = results
  expect(result).toMatchObject({ name: 'podinfo', revisionAfter: 2 })
  expect(
    [
      ['Upgraded', 1],
      ['Unchanged', 2],
    ],
    run.stdout,
  ).toContainEqual([result?.status, result?.revisionBefore])
  expect(run.summary).toContain(result?.status === 'Upgraded' ? '1 → 2' : 'Unchanged')
}

async function deployed(namespace: string): Promise<Record<string, string>> {
  const rendered = await cluster.core.readNamespacedConfigMap({ namespace, name: 'podinfo' })
  return rendered.data ?? {}
}

describe('the GitOps loop: push → kustomize-controller applies → the action triggers → helm-controller upgrades', () => {
  it('waits for the generated ConfigMap of an edited values.yaml and reports Upgraded 1 → 2 at its line', async () => {
    const values = (greeting: string): string => `replicas: 2\ngreeting: ${greeting}\n`
    const loop = await bootstrap('gitops-values', async (namespace) => ({
      ...fluxTree({ namespace, chartRepoUrl: cluster.chartRepoUrl }),
      ...generatedValuesApp(namespace, values('hello')),
    }))
    expect((await deployed(loop.namespace))['greeting']).toBe('hello')

    const run = await pushAndRun(loop, { 'apps/podinfo/values.yaml': values('bonjour') }, 'podinfo: say bonjour')

    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expectRevisionTwo(run)
    // The edited line, as the summary's plan table shows it to a reader.
    expect(tableUnder(run.summary, 'Plan').map((row) => row[3])).toContain('apps/podinfo/values.yaml:2')
    // helm-controller upgraded with the values kustomize-controller applied, not the old ones.
    expect((await deployed(loop.namespace))['greeting']).toBe('bonjour')
  })

  it('waits for the Kustomization to apply the commit of an edited SOPS Secret, decrypted, before it triggers', async () => {
    let key: AgeKey | undefined
    const secret = async (token: string, recipient: string): Promise<string> =>
      encryptSecret(
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'podinfo-secret' }, type: 'Opaque', stringData: { 'values.yaml': `token: ${token}\n` } },
        recipient,
      )
    const loop = await bootstrap('gitops-sops', async (namespace) => {
      key = await makeAgeKey()
      await cluster.core.createNamespacedSecret({ namespace, body: ageKeySecret(namespace, 'sops-age', key) })
      return {
        ...fluxTree({ namespace, chartRepoUrl: cluster.chartRepoUrl, decryptionSecret: 'sops-age' }),
        'apps/podinfo/secret.yaml': await secret('first', key.recipient),
        'apps/podinfo/release.yaml': podinfoRelease(namespace, [{ kind: 'Secret', name: 'podinfo-secret' }]),
        'apps/podinfo/kustomization.yaml': kustomization({ resources: ['repository.yaml', 'secret.yaml', 'release.yaml'] }),
      }
    })
    expect((await deployed(loop.namespace))['token']).toBe('first')
    if (key === undefined) throw new Error('no age key was made')

    const run = await pushAndRun(loop, { 'apps/podinfo/secret.yaml': await secret('second', key.recipient) }, 'podinfo: rotate the token')

    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expectRevisionTwo(run)
    expect(tableUnder(run.summary, 'Plan').map((row) => row[3] ?? '')).toContainEqual(expect.stringMatching(/^apps\/podinfo\/secret\.yaml/))
    // The upgrade read the Secret kustomize-controller decrypted at the pushed revision.
    expect((await deployed(loop.namespace))['token']).toBe('second')
    expect(run.summary).not.toContain('second')
  })
})

describe('a chart bump through the GitOps loop: a commit changes the HelmChart the release names (chartRef)', () => {
  it('waits for source-controller to pull the new version and reports the upgrade at the version line', async () => {
    const name = 'gitops-helmchart'
    for (const version of ['0.1.0', '0.2.0']) await cluster.publishChart({ ...demoChart(version), name })
    const chart = (namespace: string, version: string): string =>
      stringify({
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: 'HelmChart',
        metadata: { name: 'podinfo' },
        spec: { chart: name, version, interval: '1h', sourceRef: { kind: 'HelmRepository', name: chartRepositoryName(namespace) } },
      })
    const loop = await bootstrap('gitops-helmchart', async (namespace) => ({
      ...fluxTree({ namespace, chartRepoUrl: cluster.chartRepoUrl }),
      ...generatedValuesApp(namespace, 'greeting: hello\n'),
      'apps/podinfo/chart.yaml': chart(namespace, '0.1.0'),
      'apps/podinfo/release.yaml': podinfoChartRefRelease(namespace, 'HelmChart'),
      'apps/podinfo/kustomization.yaml': kustomization({
        resources: ['repository.yaml', 'chart.yaml', 'release.yaml'],
        configMapGenerator: [{ name: 'podinfo-values', files: ['values.yaml'], options: { disableNameSuffixHash: true } }],
      }),
    }))

    const file = chart(loop.namespace, '0.2.0')
    const run = await pushAndRun(loop, { 'apps/podinfo/chart.yaml': file }, 'podinfo: chart 0.2.0')

    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expectRevisionTwo(run)
    const versionLine = file.split('\n').findIndex((line) => line.trim().startsWith('version:')) + 1
    expect(JSON.parse(run.outputs['triggered'] ?? '[]')).toEqual([
      expect.objectContaining({ chart: { source: `HelmChart/${loop.namespace}/podinfo`, revision: '0.2.0' } }),
    ])
    expect(tableUnder(run.summary, 'Releases').map((row) => row[0])).toContainEqual(expect.stringContaining(`apps/podinfo/chart.yaml:${versionLine}`))
    const rendered = await cluster.core.readNamespacedConfigMap({ namespace: loop.namespace, name: 'podinfo' })
    expect(rendered.metadata?.annotations?.['demo.helmrelease-trigger.test/chart-version']).toBe('0.2.0')
  })
})
