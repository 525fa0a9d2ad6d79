// I1 of the second security audit, against the real apiserver (RBAC on): someone with only the
// built-in `edit` role in one namespace labels a ConfigMap there whose annotations name a release
// in another namespace. Watch mode, running with an identity that can patch releases everywhere,
// must not become their deputy: by default it neither requests a reconcile of that release nor
// resets its failure count (it is Stalled), and says why; only where cross-namespace-targets allows
// the pair does it trigger (and reset) it, as nebius/helmrelease-trigger-operator always did.

import { readFileSync } from 'node:fs'
import { CoreV1Api, KubeConfig, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node'
import { afterEach, describe, expect, it } from 'vitest'
import { useCluster } from '../../test/support/context.ts'
import { startWatch, type WatchHandle } from '../../test/support/watch.ts'

const cluster = useCluster()
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api)
const REQUESTED = 'reconcile.fluxcd.io/requestedAt'
const RESET = 'reconcile.fluxcd.io/resetAt'

const running: WatchHandle[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop().catch(() => undefined)))
})

/** Tenant A (an `edit`-only ServiceAccount there) and namespace B holding a Stalled release. */
async function tenants(): Promise<{ a: string; b: string; tenant: CoreV1Api }> {
  const a = await cluster.createNamespace('tenant-a')
  const b = await cluster.createNamespace('tenant-b')
  const token = await cluster.serviceAccountToken(a, 'developer')
  // What the built-in `edit` role grants on ConfigMaps (the aggregated role itself is filled by
  // kube-controller-manager, which this cluster does not run), and nothing on HelmReleases.
  await rbac.createNamespacedRole({
    namespace: a,
    body: {
      metadata: { name: 'edit-configmaps' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] }],
    },
  })
  await rbac.createNamespacedRoleBinding({
    namespace: a,
    body: {
      metadata: { name: 'developer-edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'edit-configmaps' },
      subjects: [{ kind: 'ServiceAccount', name: 'developer', namespace: a }],
    },
  })
  const kc = new KubeConfig()
  kc.loadFromString(readFileSync(await cluster.kubeconfigFor(token, 'developer'), 'utf8'))
  const tenant = kc.makeApiClient(CoreV1Api)
  // The grant is in effect once the tenant can list ConfigMaps in A.
  await cluster.waitFor(async () => (await tenant.listNamespacedConfigMap({ namespace: a })) && true)
  await cluster.applyHelmRelease({ namespace: b, name: 'platform', repository: 'absent' })
  await cluster.custom.patchNamespacedCustomObjectStatus(
    {
      group: 'helm.toolkit.fluxcd.io',
      version: 'v2',
      namespace: b,
      plural: 'helmreleases',
      name: 'platform',
      body: {
        status: {
          conditions: [
            { type: 'Ready', status: 'False', reason: 'RetriesExceeded', message: 'upgrade retries exhausted', lastTransitionTime: new Date().toISOString() },
            { type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: 'upgrade retries exhausted', lastTransitionTime: new Date().toISOString() },
          ],
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )
  return { a, b, tenant }
}

/** The tenant's labelled ConfigMap in A naming `platform` in B. */
async function plant(tenant: CoreV1Api, a: string, b: string, value: string): Promise<void> {
  const body = {
    metadata: {
      name: 'steer',
      namespace: a,
      labels: { 'nebius.ai/helmrelease-trigger-operator': 'true' },
      annotations: { 'nebius.ai/helmreleases-name': 'platform', 'nebius.ai/helmreleases-namespace': b },
    },
    data: { value },
  }
  await tenant.replaceNamespacedConfigMap({ namespace: a, name: 'steer', body }).catch(() => tenant.createNamespacedConfigMap({ namespace: a, body }))
}

async function annotations(b: string): Promise<Readonly<Record<string, string>>> {
  return (await cluster.getHelmRelease(b, 'platform')).metadata.annotations ?? {}
}

describe('I1: a tenant who can edit ConfigMaps in one namespace cannot steer releases of another', () => {
  it('by default: no reconcile request, no reset of the Stalled release, and one warning saying how to allow it', async () => {
    const { a, b, tenant } = await tenants()
    const watch = startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: `${a},${b}` } })
    running.push(watch)
    await watch.synced()
    await plant(tenant, a, b, 'one')
    const warning = await watch.line('source annotation ignored', { source: `ConfigMap/${a}/steer` })
    expect(warning.problem).toBe(
      `ConfigMap/${a}/steer names the HelmRelease ${b}/platform, outside its own namespace ${a}: not triggered; to allow it, add ${a}=${b} (or *=${b}) to cross-namespace-targets`,
    )
    // A second change is judged the same way once the first is: the release was never written.
    await plant(tenant, a, b, 'two')
    await watch.line('source annotation ignored', { source: `ConfigMap/${a}/steer` })
    const after = await annotations(b)
    expect(after[REQUESTED]).toBeUndefined()
    expect(after[RESET]).toBeUndefined()
    expect(Object.keys(after).filter((k) => k.startsWith('nebius.ai/'))).toEqual([])
  })

  it('where cross-namespace-targets allows the pair: triggered, and reset since it is Stalled', async () => {
    const { a, b, tenant } = await tenants()
    const watch = startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: `${a},${b}`, 'cross-namespace-targets': `${a}=${b}` } })
    running.push(watch)
    await watch.synced()
    await plant(tenant, a, b, 'one')
    const after = await cluster.waitFor(async () => {
      const now = await annotations(b)
      return now[REQUESTED] !== undefined && now
    })
    expect(after[RESET]).toBe(after[REQUESTED])
  })
})
