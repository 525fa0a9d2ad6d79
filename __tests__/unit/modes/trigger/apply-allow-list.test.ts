// apply: true sends only what the plan accepted, reduced to an allow-list (audit F2, F6): the
// reproducers of the audit run through the real planner and engine, the cluster a fake that
// records what would have been server-side applied.

import { describe, expect, it } from 'vitest'
import { parseSettings } from '../../../../src/settings.ts'
import { runTrigger, type RunContext, type TriggerDeps } from '../../../../src/modes/trigger/pipeline.ts'
import { Status } from '../../../../src/engine/result.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../../test/support/fakes.ts'

// The reproducers' sources in apps name the release in flux-system (the default namespace of targets).
const settings = parseSettings(
  (name) => ({ apply: 'true', wait: 'false', discover: 'false', timeout: '1s', 'cross-namespace-targets': 'apps=flux-system' })[name] ?? '',
)
const push: RunContext = { eventName: 'push', event: { before: 'a', after: 'b' }, sha: 'b', runUrl: undefined, refused: undefined }

async function applyCommit(files: Record<string, string>, cluster = new FakeCluster().addRelease('flux-system', 'web').addRelease('apps', 'web')) {
  const git = new FakeGit().commit('a', undefined, {}).commit('b', 'a', files)
  const warnings: string[] = []
  const deps: TriggerDeps = { git, connect: async () => cluster, clock: new FakeClock(), log: { info: () => undefined, warning: (m) => warnings.push(m) } }
  const report = await runTrigger(settings, push, deps)
  return { report, cluster, warnings }
}

// The audit's F2 reproducer: a Secret asking the token controller for kustomize-controller's token.
const TOKEN_SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: ci-cache
  namespace: flux-system
  labels: {nebius.ai/helmrelease-trigger-operator: "true"}
  annotations:
    nebius.ai/helmreleases-name: web
    kubernetes.io/service-account.name: kustomize-controller
type: kubernetes.io/service-account-token
`

describe('F2: the apply allow-list', () => {
  it('refuses a service-account-token Secret with one sentence; nothing applied, its release not triggered and the run failed', async () => {
    const { report, cluster, warnings } = await applyCommit({ 'flux-system/token.yaml': TOKEN_SECRET })
    expect(cluster.applied).toEqual([])
    expect(cluster.patches).toEqual([])
    const refusal =
      'Secret/flux-system/ci-cache (flux-system/token.yaml:1) is a Secret of type "kubernetes.io/service-account-token": apply: true applies only ConfigMaps and Opaque Secrets. Let kustomize-controller apply it (apply: false), or remove the type.'
    expect(warnings).toContain(refusal)
    expect(report.sources).toMatchObject([{ id: 'Secret/flux-system/ci-cache', applied: false, message: refusal }])
    expect(report.results.map((r) => r.status)).toEqual([Status.Failed])
  })

  it.each(['kubernetes.io/dockerconfigjson', 'kubernetes.io/tls', 'bootstrap.kubernetes.io/token', 'Opaque2'])('refuses type %s', async (type) => {
    const { cluster } = await applyCommit({ 's.yaml': TOKEN_SECRET.replace('kubernetes.io/service-account-token', type) })
    expect(cluster.applied).toEqual([])
  })

  it('applies an Opaque Secret and a ConfigMap with only their data and our own labels and annotations', async () => {
    const extra = `    kubernetes.io/service-account.name: kustomize-controller
    kustomize.toolkit.fluxcd.io/reconcile: disabled
`
    const secret = TOKEN_SECRET.replace(
      'type: kubernetes.io/service-account-token',
      'type: Opaque\nimmutable: true\ndata: {pin: NDgzOTIw}\nstringData: {user: web}',
    )
    const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: values
  namespace: apps
  labels: {nebius.ai/helmrelease-trigger-operator: "true", app.kubernetes.io/managed-by: Helm}
  annotations:
    nebius.ai/helmreleases-name: web
${extra}  finalizers: [example.com/keep]
  ownerReferences: [{apiVersion: v1, kind: Namespace, name: apps, uid: x}]
data: {values.yaml: "replicas: 2"}
`
    const { cluster } = await applyCommit({ 's.yaml': secret, 'cm.yaml': configMap })
    expect(cluster.applied).toHaveLength(2)
    expect(cluster.applied).toContainEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'ci-cache',
        namespace: 'flux-system',
        labels: { 'nebius.ai/helmrelease-trigger-operator': 'true' },
        annotations: { 'nebius.ai/helmreleases-name': 'web' },
      },
      type: 'Opaque',
      data: { pin: 'NDgzOTIw' },
      stringData: { user: 'web' },
    })
    expect(cluster.applied).toContainEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'values',
        namespace: 'apps',
        labels: { 'nebius.ai/helmrelease-trigger-operator': 'true' },
        annotations: { 'nebius.ai/helmreleases-name': 'web' },
      },
      data: { 'values.yaml': 'replicas: 2' },
    })
  })
})

describe('F6: apply sends the document the plan digested', () => {
  const doc = (data: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: apps
  labels: {nebius.ai/helmrelease-trigger-operator: "true"}
  annotations: {nebius.ai/helmreleases-name: web}
data:
${data}`

  it('a rejected document with duplicate keys before its valid twin: the twin is applied, never the rejected value', async () => {
    const file = `${doc('  mode: "safe"\n  mode: "unreviewed-value"\n')}---\n${doc('  mode: "reviewed"\n')}`
    const { report, cluster } = await applyCommit({ 'app.yaml': file })
    expect(report.problems).toMatchObject([{ severity: 'error', file: 'app.yaml' }])
    expect(cluster.applied).toMatchObject([{ data: { mode: 'reviewed' } }])
    expect(JSON.stringify(cluster.applied)).not.toContain('unreviewed-value')
  })

  it('an alias bomb before a valid twin does not abort the run', async () => {
    const bomb = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: apps
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]
`
    const { report, cluster } = await applyCommit({ 'app.yaml': `${bomb}---\n${doc('  mode: "reviewed"\n')}` })
    expect(cluster.applied).toMatchObject([{ data: { mode: 'reviewed' } }])
    expect(report.results.map((r) => r.name)).toEqual(['web'])
  })
})
