// Mode discover against the real kube-apiserver: labels added and removed by merge patch,
// 1,000 releases listed over several pages, every lint finding from a fixture, and the
// bundled action's from-git lint failing on a mistaken annotation.

import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { runDiscover } from '../../src/modes/discover/run.ts'
import { createClusterClient } from '../../src/kube/cluster.ts'
import { parseSettings } from '../../src/settings.ts'
import { mapLimit } from '../../src/lib/concurrency.ts'
import { runAction } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { HELM_RELEASE, helmRelease } from '../../test/support/flux.ts'
import { createRepo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const LABEL = 'nebius.ai/helmrelease-trigger-operator'
const log = { info: () => undefined, warning: () => undefined }
const noGit = () => Promise.reject(new Error('no git in cluster mode'))

function settings(inputs: Record<string, string>) {
  return parseSettings((n) => inputs[n] ?? '')
}

/** Suspended releases: helm-controller leaves them alone, the API still lists them. */
async function createRelease(
  namespace: string,
  name: string,
  extra: { valuesFrom?: { kind: 'ConfigMap' | 'Secret'; name: string; optional?: boolean }[]; labels?: Record<string, string> } = {},
) {
  const body = helmRelease({
    namespace,
    name,
    spec: { suspend: true },
    ...(extra.valuesFrom ? { valuesFrom: extra.valuesFrom } : {}),
    ...(extra.labels ? { labels: extra.labels } : {}),
  })
  await cluster.custom.createNamespacedCustomObject({ ...HELM_RELEASE, namespace, body })
}

async function configMap(namespace: string, name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}) {
  await cluster.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, namespace, labels, annotations }, data: { a: '1' } } })
}

describe('discover in the cluster', () => {
  it('labels releases that use valuesFrom, removes only our label from those that stopped, and lints', async () => {
    const ns = await cluster.createNamespace('discover')
    const other = await cluster.createNamespace('discover-other')
    await createRelease(ns, 'reads', {
      valuesFrom: [
        { kind: 'ConfigMap', name: 'covered' },
        { kind: 'ConfigMap', name: 'plain' },
        { kind: 'ConfigMap', name: 'gone' },
      ],
    })
    await createRelease(ns, 'optional', { valuesFrom: [{ kind: 'Secret', name: 'maybe', optional: true }], labels: { [LABEL]: 'true' } })
    await createRelease(ns, 'stopped', { labels: { [LABEL]: 'true', team: 'web' } })
    await createRelease(other, 'elsewhere')
    await configMap(ns, 'covered', { [LABEL]: 'true' }, { 'nebius.ai/helmreleases-name': 'reads, nope', 'nebius.ai/helmreleases-namespace': ns })
    await configMap(ns, 'plain')
    await configMap(ns, 'cross', { [LABEL]: 'true' }, { 'nebius.ai/helmreleases-name': 'elsewhere', 'nebius.ai/helmreleases-namespace': other })

    const report = await runDiscover(settings({ kubeconfig, namespaces: ns }), 'HEAD', {
      git: noGit,
      connect: async () => createClusterClient(cluster.kubeconfig, cluster.server),
      log,
    })

    expect(report.labels.map((l) => `${l.name}:${l.action}:${l.status}`).sort()).toEqual(['reads:add:done', 'stopped:remove:done'])
    expect((await cluster.getHelmRelease(ns, 'reads')).metadata.labels).toEqual({ [LABEL]: 'true' })
    expect((await cluster.getHelmRelease(ns, 'stopped')).metadata.labels).toEqual({ team: 'web' })
    expect((await cluster.getHelmRelease(ns, 'optional')).metadata.labels).toEqual({ [LABEL]: 'true' })
    expect(report.findings.map((f) => `${f.severity}:${f.code}:${f.source}`).sort()).toEqual([
      `error:MissingRelease:ConfigMap/${ns}/covered`,
      `error:MissingSource:ConfigMap/${ns}/gone`,
      `notice:MissingSource:Secret/${ns}/maybe`,
      `warning:CrossNamespaceUnread:ConfigMap/${ns}/cross`,
      `warning:UncoveredSource:ConfigMap/${ns}/plain`,
    ])

    // A second run has nothing left to change.
    const again = await runDiscover(settings({ kubeconfig, namespaces: ns }), 'HEAD', {
      git: noGit,
      connect: async () => createClusterClient(cluster.kubeconfig, cluster.server),
      log,
    })
    expect(again.labels).toEqual([])
  })

  it('lists 1,000 releases over several pages and labels every one that uses valuesFrom', async () => {
    const ns = await cluster.createNamespace('discover-many')
    const names = Array.from({ length: 1000 }, (_, i) => `r-${String(i).padStart(4, '0')}`)
    await mapLimit(names, 25, (name, i) =>
      createRelease(ns, name, i % 2 === 0 ? { valuesFrom: [{ kind: 'ConfigMap', name: 'shared' }] } : { labels: { [LABEL]: 'true' } }),
    )
    await configMap(ns, 'shared', { [LABEL]: 'true' })
    // Pages of 100: the listing must follow `continue` ten times.
    const client = createClusterClient(cluster.kubeconfig, cluster.server, { pageSize: 100 })
    const report = await runDiscover(settings({ kubeconfig, namespaces: ns, 'max-concurrency': '20' }), 'HEAD', {
      git: noGit,
      connect: async () => client,
      log,
    })
    expect(report.releases).toBe(1000)
    expect(report.labels.filter((l) => l.action === 'add' && l.status === 'done')).toHaveLength(500)
    expect(report.labels.filter((l) => l.action === 'remove' && l.status === 'done')).toHaveLength(500)
    expect(report.findings).toEqual([])
    const listed = await client.listReleases(ns)
    expect(listed.filter((r) => r.labels[LABEL] === 'true').map((r) => r.name)).toEqual(names.filter((_, i) => i % 2 === 0))
  })
})

describe('discover --from-git through the bundled action', () => {
  const repo = createRepo()
  afterAll(() => repo.cleanup())

  it('fails the pull request on a mistaken annotation, naming the file and line', async () => {
    repo.write({
      'apps/release.yaml':
        'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: apps\nspec:\n  valuesFrom:\n    - kind: ConfigMap\n      name: app-values\n',
      'apps/values.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-values\n  namespace: apps\n  labels:\n    nebius.ai/helmrelease-trigger-operator: "true"\n  annotations:\n    nebius.ai/helmreleases-name: app\ndata:\n  a: "1"\n',
    })
    const sha = repo.commit('annotation forgets the namespace')
    const run = await runAction({ workspace: repo.dir, eventName: 'pull_request', event: {}, sha, inputs: { mode: 'discover', 'from-git': 'true' } })
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain('::error title=helmrelease-trigger MissingRelease,file=apps/values.yaml,line=9::')
    expect(run.stdout).toContain(
      'names HelmRelease flux-system/app, which does not exist in the repository; HelmRelease apps/app exists: set nebius.ai/helmreleases-namespace: apps',
    )
    expect(JSON.parse(run.outputs['findings'] ?? '[]')).toEqual([expect.objectContaining({ code: 'MissingRelease', file: 'apps/values.yaml', line: 9 })])
    expect(run.summary).toContain('helmrelease-trigger discover')

    repo.write({
      'apps/values.yaml': readFileSync(`${repo.dir}/apps/values.yaml`, 'utf8').replace(
        '  annotations:\n',
        '  annotations:\n    nebius.ai/helmreleases-namespace: apps\n',
      ),
    })
    const fixed = repo.commit('fix')
    const ok = await runAction({ workspace: repo.dir, eventName: 'pull_request', event: {}, sha: fixed, inputs: { mode: 'discover', 'from-git': 'true' } })
    expect(ok.exitCode).toBe(0)
    expect(JSON.parse(ok.outputs['findings'] ?? 'null')).toEqual([])
  })
})
