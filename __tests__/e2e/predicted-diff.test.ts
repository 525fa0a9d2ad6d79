// The prediction checked against reality, end to end: a commit goes through the GitOps loop (the
// real source-, kustomize- and helm-controller); before it is applied, the bundled action runs on
// the pull request of the same commits and predicts what each upgrade will change; then the action
// runs on the push and helm-controller upgrades. The predicted diff must name the same objects and
// the same paths as the diff of the two revisions Helm stored (read from the cluster and compared
// by the product's own deployed diff), for a values change, a chart bump (from a Helm repository and
// from an OCIRepository, whose digest helm-controller writes into the chart version) and a
// postRenderers change.

import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { deployedDiff } from '../../src/core/deployed-diff.ts'
import { decodeRelease, type StoredRelease } from '../../src/core/helm-storage.ts'
import type { ObjectChange } from '../../src/core/manifest-diff.ts'
import type { PredictedDiff } from '../../src/core/predicted-diff.ts'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { DEMO_CONFIGMAP_TEMPLATE, demoChart } from '../../test/support/chart.ts'
import { FLUX_ENV } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { chartRepositoryName } from '../../test/support/flux.ts'
import { CLUSTER_ROOT, fluxTree, GIT_REPOSITORY_NAME, kustomization } from '../../test/support/gitops.ts'
import { bootstrap, pushAndRun, type Loop } from '../../test/support/gitops-loop.ts'
import { kustomizeBinary } from '../../test/support/kustomize.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const chartCache = mkdtempSync(join(tmpdir(), 'hrt-e2e-charts-'))
// A chart of this file's own: publishing its versions never moves another test's `*` release.
const CHART = `predict-${randomBytes(3).toString('hex')}`

/** The demo chart with a pre-install/pre-upgrade hook: post-renderers reach hooks under Helm 4's combined strategy only. */
const HOOKED = `${CHART}-hooks`
const HOOK = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
data:
  greeting: {{ .Values.greeting | quote }}
`

let kustomize: string
beforeAll(async () => {
  kustomize = await kustomizeBinary()
  await cluster.publishChart({ ...demoChart('0.1.0', { greeting: 'hello' }), name: CHART })
  await cluster.publishChart({ ...demoChart('0.2.0', { greeting: 'hello', extra: 'new in 0.2.0' }), name: CHART })
  await cluster.publishChart({
    ...demoChart('0.1.0', { greeting: 'hello' }),
    name: HOOKED,
    templates: { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE, 'hook.yaml': HOOK },
  })
  await cluster.pushOciChart({ ...demoChart('0.1.0', { greeting: 'hello' }), name: CHART })
  await cluster.pushOciChart({ ...demoChart('0.2.0', { greeting: 'hello', extra: 'new in 0.2.0' }), name: CHART })
}, 45 * 60_000)
afterAll(() => rmSync(chartCache, { recursive: true, force: true }))

interface ReleaseSpec {
  readonly version: string
  readonly postRenderers?: readonly unknown[]
  /** The chart from an OCIRepository (chartRef) at this tag of the loopback registry, instead of the Helm repository. */
  readonly oci?: boolean
  /** The chart's name in the Helm repository; default CHART. */
  readonly chart?: string
}

function app(namespace: string, values: string, spec: ReleaseSpec): Record<string, string> {
  const release = {
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name: 'podinfo' },
    spec: {
      interval: '1h',
      ...(spec.oci === true
        ? { chartRef: { kind: 'OCIRepository', name: 'podinfo' } }
        : {
            chart: { spec: { chart: spec.chart ?? CHART, version: spec.version, sourceRef: { kind: 'HelmRepository', name: chartRepositoryName(namespace) } } },
          }),
      install: { disableWait: true },
      upgrade: { disableWait: true },
      valuesFrom: [{ kind: 'ConfigMap', name: 'podinfo-values' }],
      ...(spec.postRenderers === undefined ? {} : { postRenderers: spec.postRenderers }),
    },
  }
  const oci = {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'OCIRepository',
    metadata: { name: 'podinfo' },
    spec: {
      url: `oci://${new URL(cluster.ociRegistryUrl ?? 'http://absent').host}/${CHART}`,
      ref: { tag: spec.version },
      insecure: true,
      interval: '1h',
      layerSelector: { mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', operation: 'copy' },
    },
  }
  return {
    'apps/podinfo/oci.yaml': stringify(oci),
    'apps/podinfo/values.yaml': values,
    'apps/podinfo/release.yaml': stringify(release),
    'apps/podinfo/kustomization.yaml': kustomization({
      resources: ['repository.yaml', 'oci.yaml', 'release.yaml'],
      configMapGenerator: [{ name: 'podinfo-values', files: ['values.yaml'], options: { disableNameSuffixHash: true } }],
    }),
  }
}

/** The pull request of `before..head` (same repository, so plan only), as the runner runs it. */
async function pullRequestPlan(loop: Loop, before: string, head: string): Promise<ActionRun> {
  return runAction({
    workspace: loop.remote.work.dir,
    eventName: 'pull_request',
    event: {
      number: 3,
      pull_request: { number: 3, base: { sha: before, repo: { full_name: 'acme/fleet' } }, head: { sha: head, repo: { full_name: 'acme/fleet' } } },
    },
    sha: head,
    inputs: {
      'cluster-root': CLUSTER_ROOT,
      'git-repository': `${loop.namespace}/${GIT_REPOSITORY_NAME}`,
      'chart-cache': chartCache,
      'kube-version': cluster.versions.kubernetes,
    },
  })
}

async function storedRevision(namespace: string, version: number): Promise<StoredRelease> {
  const name = `sh.helm.release.v1.podinfo.v${version}`
  const secret = await cluster.core.readNamespacedSecret({ namespace, name })
  return decodeRelease(name, secret.type, secret.data)
}

/** Objects and their changed paths, as both diffs name them. */
function shape(objects: readonly ObjectChange[]): string[] {
  return objects.flatMap((o) => [`${o.change} ${o.object}`, ...o.paths.map((p) => `  ${p.change} ${o.object} ${p.path}`)]).sort()
}

/**
 * Bootstraps the loop on `before`, pushes `after` with the pull request's plan run in between,
 * lets the action trigger, and returns the prediction and Helm's own revisions 1 and 2.
 */
async function predictAndUpgrade(prefix: string, before: ReleaseSpec & { values: string }, after: (namespace: string) => Record<string, string>) {
  const loop = await bootstrap(cluster, prefix, async (namespace) => ({
    ...fluxTree({ namespace, chartRepoUrl: cluster.chartRepoUrl }),
    ...app(namespace, before.values, before),
  }))
  let plan: ActionRun | undefined
  const run = await pushAndRun(cluster, loop, after(loop.namespace), 'the change', { kubeconfig, kustomize }, async (base, head) => {
    plan = await pullRequestPlan(loop, base, head)
  })
  expect(run.exitCode, run.stdout + run.stderr).toBe(0)
  if (plan === undefined) throw new Error('the pull request was not planned')
  expect(plan.exitCode, plan.stdout + plan.stderr).toBe(0)
  const [entry] = JSON.parse(plan.outputs['diff'] ?? '[]') as (PredictedDiff & { name: string })[]
  if (entry === undefined || 'notPredicted' in entry) throw new Error(`no prediction: ${plan.outputs['diff']}\n${plan.stdout}`)
  await cluster.waitFor(
    async () => (await cluster.core.listNamespacedSecret({ namespace: loop.namespace, labelSelector: 'owner=helm,name=podinfo,version=2' })).items.length > 0,
    {
      timeoutMs: 120_000,
      message: 'revision 2 stored',
    },
  )
  const reality = deployedDiff(await storedRevision(loop.namespace, 1), await storedRevision(loop.namespace, 2), false)
  if ('unavailable' in reality) throw new Error(reality.unavailable)
  return { predicted: entry, reality, plan }
}

const PATCH = {
  patch: stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'podinfo', labels: { tier: 'web' } } }),
  target: { kind: 'ConfigMap' },
}

describe('the pre-merge diff equals what Helm then deployed', () => {
  it.each([
    ['a values change', { version: '0.1.0', values: 'greeting: hello\n' }, () => ({ 'apps/podinfo/values.yaml': 'greeting: bonjour\n' })],
    ['a chart bump', { version: '0.1.0', values: 'greeting: hello\n' }, (ns: string) => app(ns, 'greeting: hello\n', { version: '0.2.0' })],
    [
      'an OCIRepository tag bump (the digest tracked in the chart version)',
      { version: '0.1.0', values: 'greeting: hello\n', oci: true },
      (ns: string) => app(ns, 'greeting: hello\n', { version: '0.2.0', oci: true }),
    ],
    [
      'a postRenderers change',
      { version: '0.1.0', values: 'greeting: hello\n' },
      (ns: string) => app(ns, 'greeting: hello\n', { version: '0.1.0', postRenderers: [{ kustomize: { patches: [PATCH] } }] }),
    ],
  ])('for %s', async (name, before, after) => {
    const { predicted, reality, plan } = await predictAndUpgrade(`predict-${(name.split(' ')[1] ?? 'case').toLowerCase()}`, before, after)
    // Same objects, same paths; and where values are shown, the same values.
    expect(shape(predicted.objects), plan.stdout).toEqual(shape(reality.objects))
    expect(predicted.objects).toEqual(reality.objects)
    expect(predicted.hooks).toEqual(reality.hooks)
    expect(predicted.values).toEqual(reality.values)
    expect(predicted.headline).toEqual(reality.headline)
    expect(predicted.objects.length).toBeGreaterThan(0)
    expect(plan.summary).toContain('### What the upgrade will change')
  })
})

describe('post-renderers over hooks: Helm 4 (Flux 2.9) against Helm 3 (Flux 2.7)', () => {
  const ANNOTATE = { patch: stringify([{ op: 'add', path: '/metadata/annotations/tier', value: 'web' }]), target: { kind: 'ConfigMap' } }
  it('predicts Helm 4’s combined strategy: the patch reaches the hook too; on Flux 2.7 the hook is left as the chart wrote it, the one named difference', async () => {
    const before = { version: '0.1.0', values: 'greeting: hello\n', chart: HOOKED }
    const after = (ns: string) => app(ns, 'greeting: hello\n', { ...before, postRenderers: [{ kustomize: { patches: [ANNOTATE] } }] })
    const { predicted, reality } = await predictAndUpgrade('predict-hooks', before, after)
    expect(predicted.objects).toEqual(reality.objects)
    const hookChange = { kind: 'ConfigMap', change: 'changed', paths: [{ path: 'metadata.annotations.tier', change: 'added', after: 'web' }] }
    expect(predicted.hooks).toEqual([{ object: expect.stringMatching(/^ConfigMap .*\/podinfo-hook$/), ...hookChange }])
    // Flux 2.7's helm-controller (Helm 3) runs post-renderers over the manifest only.
    expect(reality.hooks).toEqual(process.env[FLUX_ENV] === '2.7' ? [] : predicted.hooks)
  })
})
