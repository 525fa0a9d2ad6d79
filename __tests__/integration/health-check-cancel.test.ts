// helm-controller with its CancelHealthCheckOnNewRevision gate on (Flux ≥ 2.8, off by default):
// a newer request cuts short the health check of an upgrade still waiting for its workloads,
// marking the release Ready=False HealthCheckCanceled. Users scripting their own wait read that
// as the commit's failure (helm-controller#1422). Two runs of the bundled action for
// consecutive commits: the first commit's upgrade waits on a Deployment that can never be
// ready (no nodes), the second commit removes it. Both runs must report the upgrade that landed.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppsV1Api } from '@kubernetes/client-node'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { DEMO_CONFIGMAP_TEMPLATE, type ChartSpec } from '../../test/support/chart.ts'
import { startCluster, type LocalCluster } from '../../test/support/cluster.ts'
import { clusterHandle, type ClusterHandle } from '../../test/support/context.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

/** The demo ConfigMap, and a Deployment when `deployment: true`: never ready here, so helm-controller's health check waits on it. */
const GATED: ChartSpec = {
  name: 'gated',
  version: '0.1.0',
  values: { deployment: false },
  templates: {
    'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE,
    'deployment.yaml': `{{- if .Values.deployment }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: registry.invalid/app:1
{{- end }}
`,
  },
}

let own: LocalCluster
let cluster: ClusterHandle
let repo: Repo

beforeAll(async () => {
  own = await startCluster({ flux: true, charts: [GATED], helmFeatureGates: ['CancelHealthCheckOnNewRevision=true'] })
  cluster = clusterHandle(own)
  repo = createRepo()
}, 45 * 60_000)

afterAll(async () => {
  repo?.cleanup()
  await own?.stop()
})

interface Entry {
  readonly name: string
  readonly status: string
  readonly message: string
  readonly revisionBefore?: number
  readonly revisionAfter?: number
}
const output = (run: ActionRun, name: string): Entry[] => JSON.parse(run.outputs[name] ?? '[]')

describe('a health check cut short for a newer commit (CancelHealthCheckOnNewRevision)', () => {
  it('is no failure for the older run: both runs report the upgrade that landed', async () => {
    const kubeconfig = readFileSync(own.kubeconfigPath, 'utf8')
    const namespace = await cluster.createNamespace('cancel')
    const values = (deployment: boolean) => triggerConfigMap({ name: 'app-values', namespace, releases: 'app', values: `deployment: ${deployment}` })
    await cluster.applyHelmRepository(namespace)
    await cluster.applyValues(namespace, 'deployment: false')
    // helm-controller waits for the workloads (the default), at most 5 minutes.
    await cluster.applyHelmRelease({
      namespace,
      name: 'app',
      chart: 'gated',
      valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }],
      spec: { install: {}, upgrade: {}, timeout: '5m' },
    })
    await cluster.waitForHelmReleaseReady(namespace, 'app')
    repo.write({ 'apps/values.yaml': values(false) })
    const first = repo.commit('no deployment')
    const push = (before: string, after: string) =>
      runAction({ workspace: repo.dir, eventName: 'push', event: { before, after, ref: 'refs/heads/main' }, sha: after, inputs: { kubeconfig, timeout: '2m' } })

    // The first commit adds the Deployment: its upgrade waits on it.
    repo.write({ 'apps/values.yaml': values(true) })
    const second = repo.commit('add the deployment')
    await cluster.applyValues(namespace, 'deployment: true')
    const older = push(first, second)
    const apps = own.kubeconfig.makeApiClient(AppsV1Api)
    await cluster.waitFor(async () => (await apps.listNamespacedDeployment({ namespace })).items.length > 0, {
      timeoutMs: 90_000,
      message: 'helm-controller to install the Deployment and wait on it',
    })

    // The next commit removes it: its request cuts the first upgrade's health check short.
    repo.write({ 'apps/values.yaml': values(false) })
    const third = repo.commit('remove the deployment')
    await cluster.applyValues(namespace, 'deployment: false')
    const newer = await push(second, third)
    const olderRun = await older

    for (const run of [olderRun, newer]) expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const events = await cluster.core.listNamespacedEvent({ namespace })
    expect(events.items.map((e) => e.reason)).toContain('HealthCheckCanceled')
    expect(output(olderRun, 'failed')).toEqual([])
    expect(output(olderRun, 'triggered')).toEqual([
      expect.objectContaining({
        name: 'app',
        status: 'Upgraded',
        revisionBefore: 1,
        revisionAfter: 3,
        message: expect.stringContaining('(a later request, requestedAt '),
      }),
    ])
    expect(output(newer, 'triggered')).toEqual([expect.objectContaining({ name: 'app', status: 'Upgraded', revisionAfter: 3 })])
    // What landed is revision 3, the newer commit's values; revision 2 is the one whose health check was cut short.
    expect((await cluster.getHelmRelease(namespace, 'app')).status?.history?.map((h) => [h.version, h.status])).toEqual([
      [3, 'deployed'],
      [2, 'failed'],
      [1, 'superseded'],
    ])
  })
})
