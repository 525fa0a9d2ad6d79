// Proves the local test cluster is the real thing: a real kube-apiserver with RBAC,
// the Flux CRDs, the real source-controller and helm-controller, and the loopback
// chart repository. Other integration and e2e tests build on what is checked here.

import { randomBytes } from 'node:crypto'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { useCluster } from '../../test/support/context.ts'
import { HELM_RELEASE, HELM_REPOSITORY, REQUESTED_AT, chartRepositoryName, condition, helmRelease, type FluxObject } from '../../test/support/flux.ts'
import { startCluster } from '../../test/support/cluster.ts'
import { kubeConfigFromFile, waitFor } from '../../test/support/kube.ts'

const cluster = useCluster()

async function readConfigMap(namespace: string, name: string): Promise<Record<string, string>> {
  const configMap = await cluster.core.readNamespacedConfigMap({ namespace, name })
  return { ...configMap.data, ...configMap.metadata?.annotations }
}

describe('local cluster', () => {
  it('runs the Kubernetes version pinned in test/cluster/kube/go.mod', async () => {
    expect(cluster.versions.kubernetes).toMatch(/^v1\.\d+\.\d+$/)
    const response = await fetch(`${cluster.chartRepoUrl}/index.yaml`)
    expect(response.status).toBe(200)
    expect(parse(await response.text()).entries.demo[0].version).toBe('0.1.0')
  })

  it('creates a HelmRelease and reads it back through the CustomObjectsApi', async () => {
    const namespace = await cluster.createNamespace('crud')
    const body = helmRelease({ namespace, name: 'app', values: { greeting: 'hi' }, spec: { suspend: true } })

    await cluster.custom.createNamespacedCustomObject({ ...HELM_RELEASE, namespace, body })
    const read = (await cluster.custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace, name: 'app' })) as FluxObject

    expect(read.kind).toBe('HelmRelease')
    expect(read.metadata.generation).toBe(1)
    expect(read.spec?.values).toEqual({ greeting: 'hi' })
    expect(read.spec?.chart).toMatchObject({ spec: { chart: 'demo', sourceRef: { kind: 'HelmRepository', name: chartRepositoryName(namespace) } } })
  })

  it('installs the demo chart with the real controllers and handles a reconcile request', async () => {
    const namespace = await cluster.createNamespace('install')
    await cluster.applyHelmRepository(namespace)
    const values = { greeting: 'hello', replicas: 2, nested: { a: true } }
    await cluster.applyHelmRelease({ namespace, name: 'demo', version: '0.1.0', values })

    const ready = await cluster.waitForHelmReleaseReady(namespace, 'demo')
    expect(ready.status?.history?.[0]?.status).toBe('deployed')
    const rendered = await readConfigMap(namespace, 'demo')
    expect(rendered.greeting).toBe('hello')
    expect(rendered.replicas).toBe('2')
    expect(rendered.nested).toBeUndefined()
    expect(parse(rendered['values.yaml'] ?? '')).toEqual(values)
    expect(rendered['demo.helmrelease-trigger.test/chart-version']).toBe('0.1.0')

    // What the action does: a merge patch of the reconcile annotation with a fresh token.
    const token = new Date().toISOString()
    await cluster.custom.patchNamespacedCustomObject(
      { ...HELM_RELEASE, namespace, name: 'demo', body: { metadata: { annotations: { [REQUESTED_AT]: token } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    const handled = await cluster.waitFor(
      async () => {
        const release = await cluster.getHelmRelease(namespace, 'demo')
        return release.status?.lastHandledReconcileAt === token && release
      },
      { timeoutMs: 60_000, message: `lastHandledReconcileAt == ${token}` },
    )
    expect(handled.status?.lastHandledReconcileAt).toBe(token)
    expect(condition(handled, 'Ready')?.status).toBe('True')
  })

  it('upgrades to a chart version published while the cluster runs', async () => {
    const namespace = await cluster.createNamespace('upgrade')
    // A chart of its own, so other tests' `demo` is untouched.
    const chart = `echo-${randomBytes(3).toString('hex')}`
    await cluster.publishChart({ name: chart, version: '1.0.0' })
    await cluster.applyHelmRepository(namespace)
    await cluster.applyHelmRelease({ namespace, name: 'echo', chart, version: '1.x', values: { colour: 'blue' } })
    await cluster.waitForHelmReleaseReady(namespace, 'echo')
    expect(await readConfigMap(namespace, 'echo')).toMatchObject({ colour: 'blue', 'demo.helmrelease-trigger.test/chart-version': '1.0.0' })

    await cluster.publishChart({ name: chart, version: '1.1.0' })
    await expect(cluster.publishChart({ name: chart, version: '1.1.0' })).rejects.toThrow(/409/)
    // source-controller re-reads index.yaml on its interval or on request.
    await cluster.custom.patchNamespacedCustomObject(
      {
        ...HELM_REPOSITORY,
        namespace,
        name: chartRepositoryName(namespace),
        body: { metadata: { annotations: { [REQUESTED_AT]: new Date().toISOString() } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    await cluster.waitFor(async () => (await readConfigMap(namespace, 'echo'))['demo.helmrelease-trigger.test/chart-version'] === '1.1.0', {
      timeoutMs: 90_000,
      message: `${chart} 1.1.0 to be deployed`,
    })
    // The chart's ConfigMap changes before helm-controller records the revision: wait for the record.
    await cluster.waitFor(
      async () => {
        const latest = (await cluster.waitForHelmReleaseReady(namespace, 'echo')).status?.history?.[0]
        return latest?.status === 'deployed' && latest.chartVersion === '1.1.0'
      },
      { timeoutMs: 90_000, message: `${chart} 1.1.0 recorded as deployed in the release history` },
    )
  })

  it('fails the release when a value makes the chart fail to render', async () => {
    const namespace = await cluster.createNamespace('fail')
    await cluster.applyHelmRepository(namespace)
    await cluster.applyHelmRelease({ namespace, name: 'broken', version: '0.1.0', values: { fail: 'broken on purpose' } })

    const failed = await cluster.waitFor(
      async () => {
        const release = await cluster.getHelmRelease(namespace, 'broken')
        return condition(release, 'Ready')?.status === 'False' && /broken on purpose/.test(condition(release, 'Ready')?.message ?? '') && release
      },
      { timeoutMs: 120_000, message: 'Ready=False naming the failure' },
    )
    expect(condition(failed, 'Ready')?.message).toContain('broken on purpose')
  })

  it('enforces RBAC for a ServiceAccount token from the TokenRequest API', async () => {
    const namespace = await cluster.createNamespace('rbac')
    const token = await cluster.serviceAccountToken(namespace, 'reader')
    const asReader = kubeConfigFromFile(await cluster.kubeconfigFor(token, 'reader')).makeApiClient(CustomObjectsApi)

    await expect(asReader.listNamespacedCustomObject({ ...HELM_RELEASE, namespace })).rejects.toMatchObject({ code: 403 })
    await expect(asReader.listClusterCustomObject(HELM_RELEASE)).rejects.toMatchObject({ code: 403 })

    // The token authenticates as the ServiceAccount: a RoleBinding opens exactly that namespace.
    const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api)
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'helmrelease-reader' },
        rules: [{ apiGroups: [HELM_RELEASE.group], resources: [HELM_RELEASE.plural], verbs: ['get', 'list'] }],
      },
    })
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'helmrelease-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'helmrelease-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
      },
    })
    const list = await cluster.waitFor(() => asReader.listNamespacedCustomObject({ ...HELM_RELEASE, namespace }), {
      timeoutMs: 10_000,
      message: 'the RoleBinding to take effect',
    })
    expect(list).toMatchObject({ items: [] })
    await expect(asReader.listClusterCustomObject(HELM_RELEASE)).rejects.toMatchObject({ code: 403 })
  })
})

// Fault tests take the apiserver and etcd away mid-run; they rely on a restart keeping
// the address, the serving certificate, the tokens and the data.
describe('local cluster restarts', () => {
  it('restarts etcd and the apiserver with the same address, certificate and data', async () => {
    const own = await startCluster()
    try {
      const core = own.kubeconfig.makeApiClient(CoreV1Api)
      await core.createNamespacedConfigMap({ namespace: 'flux-system', body: { metadata: { name: 'kept' }, data: { a: '1' } } })
      const pid = own.processes.find((p) => p.name === 'kube-apiserver')?.pid

      await own.stopComponent('kube-apiserver', { kill: true })
      await expect(core.readNamespacedConfigMap({ namespace: 'flux-system', name: 'kept' })).rejects.toThrow()
      await own.startComponent('kube-apiserver')
      expect(own.processes.find((p) => p.name === 'kube-apiserver')?.pid).not.toBe(pid)
      expect((await core.readNamespacedConfigMap({ namespace: 'flux-system', name: 'kept' })).data).toEqual({ a: '1' })

      await own.restart('etcd', { downMs: 500 })
      const read = await waitFor(() => core.readNamespacedConfigMap({ namespace: 'flux-system', name: 'kept' }).catch(() => undefined), {
        timeoutMs: 60_000,
        message: 'the apiserver to reach the restarted etcd',
      })
      expect(read.data).toEqual({ a: '1' })
    } finally {
      await own.stop()
    }
  })
})
