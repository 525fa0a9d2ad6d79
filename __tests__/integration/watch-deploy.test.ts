// deploy/watch as shipped, against the real apiserver with RBAC on: every manifest is accepted
// (the Deployment by a server-side dry run: no kubelet here), its probes and securityContext
// are what the Dockerfile's image needs, and a ServiceAccount token bound to exactly the
// shipped roles runs the watch mode (leader election included) with no Forbidden anywhere.

import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node'
import { parseAllDocuments } from 'yaml'
import { afterEach, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { DOCKERFILE } from '../../test/support/image.ts'
import { startWatch, type WatchHandle } from '../../test/support/watch.ts'

const cluster = useCluster()
const objects = KubernetesObjectApi.makeApiClient(cluster.kubeconfig)
const DIR = join(REPO_ROOT, 'deploy', 'watch')
const LABEL = { 'nebius.ai/helmrelease-trigger-operator': 'true' }
const KEY_SECRET = 'helmrelease-trigger-digest-key'

const running: WatchHandle[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop().catch(() => undefined)))
})

type Manifest = KubernetesObject & Record<string, unknown>

function manifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`)
    return d.toJS() as Manifest
  })
}

/** The manifest with its namespace, names and subjects moved to this test's (cluster-scoped names get a suffix). */
function placed(object: Manifest, namespace: string, suffix: string, watched?: string): Manifest {
  const copy = structuredClone(object) as Manifest & { subjects?: { namespace?: string }[]; roleRef?: { name: string } }
  const clusterScoped = copy.kind === 'ClusterRole' || copy.kind === 'ClusterRoleBinding'
  copy.metadata = {
    ...copy.metadata,
    ...(clusterScoped
      ? { name: `${copy.metadata?.name}-${suffix}` }
      : { namespace: watched !== undefined && copy.metadata?.namespace === 'apps' ? watched : namespace }),
  }
  if (copy.kind === 'ClusterRoleBinding' && copy.roleRef !== undefined) copy.roleRef.name = `${copy.roleRef.name}-${suffix}`
  for (const s of copy.subjects ?? []) s.namespace = namespace
  return copy
}

async function configMap(namespace: string, name: string, v: string): Promise<void> {
  const body = { metadata: { name, namespace, labels: LABEL }, data: { v } }
  try {
    await cluster.core.replaceNamespacedConfigMap({ namespace, name, body })
  } catch {
    await cluster.core.createNamespacedConfigMap({ namespace, body })
  }
}

async function digestOf(namespace: string, name: string): Promise<string | undefined> {
  const object = await cluster.getHelmRelease(namespace, name)
  return (JSON.parse(object.metadata.annotations?.['nebius.ai/config-digest'] ?? '{}') as Record<string, string>)[`ConfigMap/${namespace}/values`]
}

/** Runs watch as the deploy ServiceAccount; a change is triggered, with its Event, and nothing is Forbidden. */
async function watchesAsDeployed(namespace: string, kubeconfigPath: string, watched: string): Promise<void> {
  await configMap(watched, 'values', '1')
  await cluster.applyHelmRelease({ namespace: watched, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] })
  const w = startWatch({
    kubeconfigPath,
    inputs: { namespaces: watched, 'leader-election': 'true', 'leader-election-namespace': namespace, 'digest-key-namespace': namespace },
    election: { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 300 },
  })
  running.push(w)
  await w.synced()
  const first = await cluster.waitFor(() => digestOf(watched, 'app'), { message: 'the catch-up trigger at start' })
  await configMap(watched, 'values', '2')
  await cluster.waitFor(async () => ((await digestOf(watched, 'app')) ?? first) !== first, { message: 'the trigger after the change' })
  await cluster.core.deleteNamespacedConfigMap({ namespace: watched, name: 'values' })
  await w.line('source deleted', { source: `ConfigMap/${watched}/values` })
  await cluster.waitFor(async () => (await cluster.core.listNamespacedEvent({ namespace: watched })).items.some((e) => e.reason === 'SourceDeleted'), {
    message: 'the SourceDeleted Event',
  })
  expect((await w.readyz()).body).toBe('ok: synced; leading')
  const denied = w.lines.filter((l) => JSON.stringify(l).includes('Forbidden') || l.level === 'error' || l.msg.startsWith('could not'))
  expect(denied).toEqual([])
  expect((await cluster.core.listNamespacedEvent({ namespace: watched })).items.filter((e) => e.reason === 'ConfigChanged')).toHaveLength(2)
}

describe('deploy/watch', () => {
  it('ships every manifest the README names, each accepted by the apiserver', async () => {
    const files = readdirSync(DIR)
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
      .sort()
    expect(files).toEqual([
      'clusterrole.yaml',
      'deployment.yaml',
      'digest-key-create-role.yaml',
      'digest-key-role.yaml',
      'leader-election-role.yaml',
      'role.yaml',
      'serviceaccount.yaml',
    ])
    // The opt-in create Role (an escalation while bound) is never applied by `kubectl apply -k`.
    const kustomization = manifests('kustomization.yaml')[0] as unknown as { resources: string[] }
    expect(kustomization.resources.sort()).toEqual([
      'clusterrole.yaml',
      'deployment.yaml',
      'digest-key-role.yaml',
      'leader-election-role.yaml',
      'serviceaccount.yaml',
    ])
    const ns = await cluster.createNamespace('watch-deploy-dry')
    for (const file of files) {
      for (const object of manifests(file)) await objects.create(placed(object, ns, 'dry', ns), undefined, 'All')
    }
  })

  it('runs non-root with a read-only root filesystem, probed on /healthz and /readyz, leader-elected in its own namespace', () => {
    const [deployment] = manifests('deployment.yaml') as unknown as {
      spec: {
        template: {
          spec: {
            serviceAccountName: string
            securityContext: Record<string, unknown>
            containers: {
              args: string[]
              livenessProbe: { httpGet: { path: string } }
              readinessProbe: { httpGet: { path: string } }
              securityContext: Record<string, unknown>
              ports: { containerPort: number }[]
            }[]
          }
        }
      }
    }[]
    const pod = deployment?.spec.template.spec
    const container = pod?.containers[0]
    expect(pod?.serviceAccountName).toBe('helmrelease-trigger-watch')
    expect(pod?.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 })
    expect(container?.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
    expect(container?.livenessProbe.httpGet.path).toBe('/healthz')
    expect(container?.readinessProbe.httpGet.path).toBe('/readyz')
    expect(container?.args).toEqual(
      expect.arrayContaining(['watch', '--metrics-address=:8080', '--leader-election', '--leader-election-namespace=$(POD_NAMESPACE)']),
    )
    expect(container?.ports[0]?.containerPort).toBe(8080)
    const dockerfile = DOCKERFILE
    expect(dockerfile).toMatch(/^FROM node:24/m)
    expect(dockerfile).toMatch(/^USER 65532:65532$/m)
    expect(dockerfile).toContain('dist/cli.js')
  })

  it('clusterrole.yaml, leader-election-role.yaml and digest-key-role.yaml, with the key created once as its header says, are enough for watch mode, leader election included', async () => {
    const ns = await cluster.createNamespace('watch-deploy')
    const watched = await cluster.createNamespace('watch-deploy-apps')
    for (const file of ['serviceaccount.yaml', 'clusterrole.yaml', 'leader-election-role.yaml', 'digest-key-role.yaml']) {
      for (const object of manifests(file)) await objects.create(placed(object, ns, ns))
    }
    await cluster.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: KEY_SECRET, namespace: ns }, data: { key: randomBytes(32).toString('base64') } },
    })
    const token = await cluster.serviceAccountToken(ns, 'helmrelease-trigger-watch')
    await watchesAsDeployed(ns, await cluster.kubeconfigFor(token, 'watch-cluster'), watched)
  })

  it('role.yaml confines watch mode to the namespaces it is given; digest-key-create-role.yaml lets the first start create the key', async () => {
    const ns = await cluster.createNamespace('watch-deploy-ns')
    const watched = await cluster.createNamespace('watch-deploy-only')
    for (const file of ['serviceaccount.yaml', 'role.yaml', 'leader-election-role.yaml', 'digest-key-role.yaml', 'digest-key-create-role.yaml']) {
      for (const object of manifests(file)) await objects.create(placed(object, ns, ns, watched))
    }
    const token = await cluster.serviceAccountToken(ns, 'helmrelease-trigger-watch')
    const kubeconfigPath = await cluster.kubeconfigFor(token, 'watch-role')
    await watchesAsDeployed(ns, kubeconfigPath, watched)
    const key = await cluster.core.readNamespacedSecret({ namespace: ns, name: KEY_SECRET })
    expect(Buffer.from(key.data?.['key'] ?? '', 'base64')).toHaveLength(32)
    // Cluster-wide, the same identity is refused at the first list, in one sentence naming the rule.
    const w = startWatch({ kubeconfigPath, inputs: { 'digest-key-namespace': ns } })
    await expect(w.done).rejects.toThrow(
      /Forbidden: cannot list .* in all namespaces\. Grant the identity this RBAC rule: .*verbs: \["list"\] in a ClusterRole/,
    )
  })
})
