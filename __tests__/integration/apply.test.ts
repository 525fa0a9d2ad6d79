// apply: true against the real apiserver (audit F2): on a push with an admin kubeconfig, a
// repository's service-account-token Secret is refused with one sentence and never created,
// only our own labels and annotations reach a ConfigMap, and a field another manager owns is
// never taken over (no force).

import { readFileSync } from 'node:fs'
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { afterAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))

async function push(files: Record<string, string>): Promise<ActionRun> {
  const repo = createRepo()
  repos.push(repo)
  repo.write({ 'README.md': 'fleet\n' })
  const before = repo.commit('base')
  repo.write(files)
  const after = repo.commit('change')
  return runAction({
    workspace: repo.dir,
    eventName: 'push',
    event: { before, after },
    sha: after,
    inputs: { kubeconfig, apply: 'true', wait: 'false', discover: 'false', timeout: '20s' },
  })
}

const log = (run: ActionRun): string => `${run.stdout}\n${run.stderr}`

describe('apply: true', () => {
  it('refuses a kubernetes.io/service-account-token Secret: one sentence, the Secret never created, the release not triggered', async () => {
    const ns = await cluster.createNamespace('apply-token')
    await cluster.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'deployer', namespace: ns } } })
    await cluster.applyHelmRelease({ namespace: ns, name: 'web', repository: 'absent', valuesFrom: [] })
    const run = await push({
      'token.yaml': `apiVersion: v1
kind: Secret
metadata:
  name: ci-cache
  namespace: ${ns}
  labels: {nebius.ai/helmrelease-trigger-operator: "true"}
  annotations:
    nebius.ai/helmreleases-name: web
    nebius.ai/helmreleases-namespace: ${ns}
    kubernetes.io/service-account.name: deployer
type: kubernetes.io/service-account-token
`,
    })
    expect(run.exitCode, log(run)).toBe(1)
    expect(run.stdout).toContain(
      `Secret/${ns}/ci-cache (token.yaml:1) is a Secret of type "kubernetes.io/service-account-token": apply: true applies only ConfigMaps and Opaque Secrets. Let kustomize-controller apply it (apply: false), or remove the type.`,
    )
    await expect(cluster.core.readNamespacedSecret({ namespace: ns, name: 'ci-cache' })).rejects.toThrow()
    const hr = await cluster.custom.getNamespacedCustomObject({
      group: 'helm.toolkit.fluxcd.io',
      version: 'v2',
      plural: 'helmreleases',
      namespace: ns,
      name: 'web',
    })
    expect(JSON.stringify(hr)).not.toContain('reconcile.fluxcd.io/requestedAt')
  })

  it('applies a ConfigMap with only its data and our own labels and annotations, and never takes over a field another manager owns', async () => {
    const ns = await cluster.createNamespace('apply-allow')
    await cluster.applyHelmRelease({ namespace: ns, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] })
    const manifest = (name: string, value: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
  namespace: ${ns}
  labels: {nebius.ai/helmrelease-trigger-operator: "true", team: payments}
  annotations:
    nebius.ai/helmreleases-name: web
    nebius.ai/helmreleases-namespace: ${ns}
    kubectl.kubernetes.io/last-applied-configuration: "{}"
data: {values.yaml: "${value}"}
`
    const applied = await push({ 'values.yaml': manifest('values', 'level: two') })
    expect(applied.exitCode, log(applied)).toBe(0)
    const live = await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'values' })
    expect(live.data).toEqual({ 'values.yaml': 'level: two' })
    expect(live.metadata?.labels).toEqual({ 'nebius.ai/helmrelease-trigger-operator': 'true' })
    expect(live.metadata?.annotations).toEqual({ 'nebius.ai/helmreleases-name': 'web', 'nebius.ai/helmreleases-namespace': ns })

    // kustomize-controller (another field manager) owns the value now: apply: true conflicts, never forces.
    await cluster.core.patchNamespacedConfigMap(
      {
        namespace: ns,
        name: 'values',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'values', namespace: ns }, data: { 'values.yaml': 'level: owned' } },
        fieldManager: 'kustomize-controller',
        force: true,
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )
    const conflicting = await push({ 'values.yaml': manifest('values', 'level: three') })
    expect(conflicting.exitCode, log(conflicting)).toBe(1)
    expect(conflicting.stdout).toContain(`ConfigMap/${ns}/values: another field manager owns fields this apply would change`)
    expect((await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'values' })).data).toEqual({ 'values.yaml': 'level: owned' })
  })
})
