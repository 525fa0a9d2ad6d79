// A trigger run against one live cluster, in a repository holding two clusters' trees with the
// same Flux names (clusters/eu and clusters/us, each a flux-system and an apps Kustomization) and
// no cluster-root: the run reads the cluster's own Flux bootstrap (flux-system/flux-system: its
// spec.path and its GitRepository's URL) and patches only the releases of that tree, naming the
// cluster. Without the right to read the bootstrap it fails in one sentence listing the trees and
// patches nothing. Through the bundled action, against the real apiserver (RBAC on).

import { readFileSync } from 'node:fs'
import { RbacAuthorizationV1Api } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAction } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../../test/support/fleet-repo.ts'
import { grantsInEffect } from '../../test/support/rbac.ts'
import { createRepo } from '../../test/support/repo.ts'

const cluster = useCluster()
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api)
const repo = createRepo('hrt-own-cluster-')
const BOOTSTRAP = { namespace: 'flux-system', name: 'flux-system' }
const REQUESTED = 'reconcile.fluxcd.io/requestedAt'

let ns: string
let push: { workspace: string; eventName: string; event: { before: string; after: string }; sha: string }

/** Flux bootstrap's sync as `flux bootstrap` writes it into the cluster, suspended: no controller acts on it. */
async function bootstrap(path: string, url: string): Promise<void> {
  await cluster.custom.createNamespacedCustomObject({
    group: 'source.toolkit.fluxcd.io',
    version: 'v1',
    plural: 'gitrepositories',
    namespace: BOOTSTRAP.namespace,
    body: {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata: BOOTSTRAP,
      spec: { url, interval: '1m', ref: { branch: 'main' }, suspend: true },
    },
  })
  await cluster.custom.createNamespacedCustomObject({
    group: 'kustomize.toolkit.fluxcd.io',
    version: 'v1',
    plural: 'kustomizations',
    namespace: BOOTSTRAP.namespace,
    body: {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: BOOTSTRAP,
      spec: { path, interval: '10m', prune: true, sourceRef: { kind: 'GitRepository', name: 'flux-system' }, suspend: true },
    },
  })
}

beforeAll(async () => {
  ns = await cluster.createNamespace('own-cluster')
  // eu runs web, us runs api; this apiserver is eu, yet holds an `api` release too (so a merged plan would patch it).
  const specs: FleetClusterSpec[] = [
    { name: 'eu', namespace: ns, releases: ['web'] },
    { name: 'us', namespace: ns, releases: ['api'] },
  ]
  for (const r of ['web', 'api']) {
    await cluster.applyHelmRelease({ namespace: ns, name: r, repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: `${r}-values` }] })
  }
  repo.write(fleetRepoFiles(specs, () => 'one'))
  const before = repo.commit('two clusters')
  repo.write(fleetRepoFiles(specs, () => 'two'))
  const after = repo.commit('values of both clusters')
  push = { workspace: repo.dir, eventName: 'push', event: { before, after }, sha: after }
  // runAction's GITHUB_SERVER_URL and GITHUB_REPOSITORY: the bootstrap reads this repository.
  await bootstrap('./clusters/eu', 'https://github.example/acme/fleet.git')
})

afterAll(async () => {
  repo.cleanup()
  for (const [group, plural] of [
    ['kustomize.toolkit.fluxcd.io', 'kustomizations'],
    ['source.toolkit.fluxcd.io', 'gitrepositories'],
  ] as const) {
    await cluster.custom.deleteNamespacedCustomObject({ group, version: 'v1', plural, ...BOOTSTRAP }).catch(() => undefined)
  }
})

async function requestedAt(name: string): Promise<string | undefined> {
  return (await cluster.getHelmRelease(ns, name)).metadata.annotations?.[REQUESTED]
}

describe('a trigger run in a repository of two cluster trees, without cluster-root', () => {
  it('patches only the releases of the tree the live bootstrap applies, and names that cluster', async () => {
    const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
    const run = await runAction({ ...push, inputs: { kubeconfig, wait: 'false', timeout: '30s', 'wait-for-apply': 'false' } })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(JSON.parse(run.outputs['triggered'] ?? '[]')).toMatchObject([{ cluster: 'eu', namespace: ns, name: 'web', status: 'Triggered' }])
    expect(await requestedAt('web')).toBeDefined()
    expect(await requestedAt('api')).toBeUndefined()
    expect(run.stdout).toContain("The cluster's Flux bootstrap (flux-system/flux-system) applies 'clusters/eu': only cluster 'eu' is planned.")
    expect(run.summary).toContain('### Cluster <code>eu</code>')
  })

  it('without get on the bootstrap, fails in one sentence listing the trees and patches nothing', async () => {
    const sa = 'no-bootstrap'
    const rules = [
      { apiGroups: ['helm.toolkit.fluxcd.io'], resources: ['helmreleases'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]
    await rbac.createClusterRole({ body: { metadata: { name: `${ns}-${sa}` }, rules } })
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `${ns}-${sa}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${ns}-${sa}` },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }],
      },
    })
    const token = await cluster.serviceAccountToken(ns, sa)
    await grantsInEffect(cluster.kubeconfig, ns, sa, rules)
    const kubeconfig = readFileSync(await cluster.kubeconfigFor(token, sa), 'utf8')
    const api = await requestedAt('api')
    const run = await runAction({ ...push, inputs: { kubeconfig, wait: 'false', timeout: '30s', 'wait-for-apply': 'false' } })
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toMatch(
      /This repository holds 2 cluster trees \('clusters\/eu', 'clusters\/us'\) and the cluster's Flux bootstrap \(Kustomization and GitRepository flux-system\/flux-system\) could not be read \(Forbidden: cannot get kustomizations.*\): grant get on them, or set the cluster-root input/,
    )
    expect(await requestedAt('api')).toBe(api)
  })
})
