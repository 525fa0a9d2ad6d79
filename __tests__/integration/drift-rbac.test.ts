// Least privilege for drift, proven against the real kube-apiserver (RBAC on):
// deploy/rbac/drift-clusterrole.yaml as it ships, bound to a fresh ServiceAccount, is enough
// to check a release of every kind the test chart renders and to correct it; without a
// rule, the message names the rule to grant.

import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1PolicyRule } from '@kubernetes/client-node'
import { beforeAll, describe, expect, it } from 'vitest'
import { connect, connectObjects } from '../../src/kube/connect.ts'
import { runDrift, ReleaseState, type DriftReport } from '../../src/modes/drift/run.ts'
import { createOutcomeWaiter } from '../../src/engine/outcome.ts'
import { parseSettings } from '../../src/settings.ts'
import { systemClock } from '../../src/engine/ports.ts'
import { useCluster } from '../../test/support/context.ts'
import { driftChart, driftChartObjects } from '../../test/support/drift-chart.ts'
import { grants, grantsInEffect, shipped, without, type RbacObject } from '../../test/support/rbac.ts'

const cluster = useCluster()
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api)
const CHART = `drift-rbac-${randomBytes(3).toString('hex')}`
const SA = 'helmrelease-trigger'

/** deploy/rbac/drift-clusterrole.yaml's ClusterRole and its binding. */
function shippedRole(): { role: RbacObject; binding: RbacObject } {
  return { role: shipped('rbac/drift-clusterrole.yaml', 'ClusterRole'), binding: shipped('rbac/drift-clusterrole.yaml', 'ClusterRoleBinding') }
}

let serial = 0

/** Binds the shipped ClusterRole (or `rules`) to a new ServiceAccount; returns its kubeconfig text once the grants are in effect. */
async function identity(namespace: string, rules?: V1PolicyRule[]): Promise<string> {
  const { role, binding } = shippedRole()
  const granted = rules ?? role.rules ?? []
  // A ServiceAccount per identity: bindings add up, so a reduced role needs an account of its own.
  const account = `${SA}-${serial}`
  const name = `${role.metadata.name}-${namespace}-${serial++}`
  await rbac.createClusterRole({ body: { metadata: { name }, rules: granted } })
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { ...(binding.roleRef ?? { apiGroup: '', kind: '', name: '' }), name },
      subjects: (binding.subjects ?? []).map((s) => ({ ...s, name: account, namespace })),
    },
  })
  const token = await cluster.serviceAccountToken(namespace, account)
  await grantsInEffect(cluster.kubeconfig, namespace, account, granted)
  return readFileSync(await cluster.kubeconfigFor(token, account), 'utf8')
}

const warnings: string[] = []
const log = { info: () => undefined, warning: (m: string) => void warnings.push(m) }

async function drift(namespace: string, kubeconfig: string, inputs: Record<string, string> = {}): Promise<DriftReport> {
  const settings = parseSettings((n) => ({ kubeconfig, namespaces: namespace, timeout: '120s', ...inputs })[n] ?? '')
  const options = { env: {}, mask: () => undefined }
  return runDrift(settings, {
    objects: async () => connectObjects(settings, options),
    connect: async () => connect(settings, options),
    clock: systemClock,
    log,
    outcome: createOutcomeWaiter({ clock: systemClock, log }),
  })
}

describe('deploy/rbac/drift-clusterrole.yaml', () => {
  let ns: string
  beforeAll(async () => {
    await cluster.publishChart(driftChart(CHART))
    ns = await cluster.createNamespace('drift-rbac')
    await cluster.applyHelmRepository(ns)
    await cluster.applyHelmRelease({ namespace: ns, name: 'app', chart: CHART, values: { greeting: 'hello' } })
    await cluster.waitForHelmReleaseReady(ns, 'app')
  })

  it('grants reads, the correction writes and nothing else; no wildcard', () => {
    const g = grants(shippedRole().role.rules ?? [])
    expect(g.filter((x) => !x.endsWith(':get'))).toEqual(
      [
        'autoscaling/horizontalpodautoscalers:list',
        'core/events:create',
        'core/secrets:list',
        'helm.toolkit.fluxcd.io/helmreleases:list',
        'helm.toolkit.fluxcd.io/helmreleases:patch',
        'helm.toolkit.fluxcd.io/helmreleases:watch',
      ].sort(),
    )
    expect(JSON.stringify(shippedRole().role.rules)).not.toContain('*')
    expect(shippedRole().binding.subjects).toEqual([{ kind: 'ServiceAccount', name: SA, namespace: 'flux-system' }])
  })

  it('is enough to check every object of the release and to correct it', async () => {
    const kubeconfig = await identity(ns)
    const clean = await drift(ns, kubeconfig, { 'drift-action': 'fail' })
    expect(clean.releases[0], JSON.stringify(clean)).toMatchObject({ state: ReleaseState.InSync, inSync: driftChartObjects('app').length })

    await cluster.core.patchNamespacedConfigMap(
      { namespace: ns, name: 'app', body: { data: { greeting: 'edited' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    const corrected = await drift(ns, kubeconfig, { 'drift-action': 'correct' })
    expect(corrected.releases[0], JSON.stringify(corrected)).toMatchObject({ state: ReleaseState.InSync, correction: { status: 'Upgraded' } })
    expect(warnings.join('\n')).not.toContain('Forbidden')
    expect((await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'app' })).data?.['greeting']).toBe('hello')
  })

  it('without list on secrets: the release is not checked, and the message names the rule', async () => {
    const kubeconfig = await identity(ns, without(shippedRole().role.rules ?? [], '', 'secrets', 'list'))
    const report = await drift(ns, kubeconfig, { 'drift-action': 'fail' })
    expect(report.releases[0]).toMatchObject({ state: ReleaseState.Error, reason: 'Forbidden' })
    expect(report.releases[0]?.message).toBe(
      `Forbidden: cannot list secrets in namespace ${ns}. Grant the identity this RBAC rule: apiGroups: [""], resources: ["secrets"], verbs: ["list"] in a Role in namespace ${ns} (or a ClusterRole).`,
    )
  })

  it('without get on a rendered kind: that object is not compared, naming the rule; the others are', async () => {
    const kubeconfig = await identity(ns, without(shippedRole().role.rules ?? [], '', 'services', 'get'))
    const report = await drift(ns, kubeconfig)
    const [release] = report.releases
    expect(release).toMatchObject({ state: ReleaseState.Error, inSync: driftChartObjects('app').length - 1 })
    expect(release?.drifted).toEqual([
      expect.objectContaining({
        kind: 'Service',
        name: 'app',
        state: 'error',
        message: expect.stringContaining('Forbidden: cannot get services app in namespace'),
      }),
    ])
    expect(release?.drifted[0]?.message).toContain('resources: ["services"], verbs: ["get"]')
  })
})
