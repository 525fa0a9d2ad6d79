// The demo: a local cluster with the real Flux controllers, a throwaway git repository
// holding a labelled ConfigMap and a HelmRelease, a commit that changes a value, and the
// bundled action run the way the Actions runner runs it. Prints the job summary.
//
//   npm run demo            (after scripts/setup.sh; scripts/demo.sh does both)

import { readFileSync } from 'node:fs'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { runAction } from '../test/support/action.ts'
import { startCluster } from '../test/support/cluster.ts'
import { HELM_RELEASE, HELM_REPOSITORY, helmRelease, helmRepository, isReady, type FluxObject } from '../test/support/flux.ts'
import { waitFor } from '../test/support/kube.ts'
import { triggerConfigMap } from '../test/support/manifests.ts'
import { createRepo } from '../test/support/repo.ts'

const NS = 'demo'

// A ConfigMap labelled to trigger the podinfo HelmRelease, as a user commits it.
const configMap = (greeting: string): string =>
  triggerConfigMap({ name: 'podinfo-values', namespace: NS, releases: 'podinfo', values: `greeting: ${greeting}\nreplicas: 2` })

function step(text: string): void {
  process.stdout.write(`\n▶ ${text}\n`)
}

const cluster = await startCluster({ flux: true, log: (line) => process.stderr.write(`  [cluster] ${line}\n`) })
const repo = createRepo('hrt-demo-')
try {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api)
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  const apply = (coords: { group: string; version: string; plural: string }, object: FluxObject) =>
    custom.patchNamespacedCustomObject(
      { ...coords, namespace: NS, name: object.metadata.name, body: object, fieldManager: 'demo', force: true },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )
  const applyValues = (greeting: string) =>
    core.replaceNamespacedConfigMap({
      namespace: NS,
      name: 'podinfo-values',
      body: { metadata: { name: 'podinfo-values', namespace: NS }, data: { 'values.yaml': `greeting: ${greeting}\nreplicas: 2\n` } },
    })

  step('Flux installs release "podinfo" with greeting=hello (revision 1)')
  await cluster.createNamespace(NS)
  await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'podinfo-values', namespace: NS }, data: { 'values.yaml': 'greeting: hello\nreplicas: 2\n' } },
  })
  await apply(HELM_REPOSITORY, helmRepository({ namespace: NS, url: cluster.chartRepoUrl }))
  await apply(HELM_RELEASE, helmRelease({ namespace: NS, name: 'podinfo', valuesFrom: [{ kind: 'ConfigMap', name: 'podinfo-values' }] }))
  await waitFor(async () => isReady((await custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace: NS, name: 'podinfo' })) as FluxObject), {
    timeoutMs: 120_000,
    message: 'podinfo Ready',
  })

  step('A commit changes greeting to "bonjour" in the labelled ConfigMap')
  repo.write({ 'clusters/demo/podinfo-values.yaml': configMap('hello') })
  const before = repo.commit('podinfo: initial values')
  repo.write({ 'clusters/demo/podinfo-values.yaml': configMap('bonjour') })
  const after = repo.commit('podinfo: say bonjour')
  process.stdout.write(repo.git('show', '--stat', '--format=  %h %s', after) + '\n')

  step('kustomize-controller would apply it shortly; the action waits for that, triggers, and waits for helm-controller')
  setTimeout(() => void applyValues('bonjour'), 2_000)
  const run = await runAction({
    workspace: repo.dir,
    eventName: 'push',
    event: { before, after, ref: 'refs/heads/main' },
    sha: after,
    inputs: { kubeconfig: readFileSync(cluster.kubeconfigPath, 'utf8'), timeout: '2m' },
  })

  step(`The job summary (exit code ${run.exitCode})`)
  process.stdout.write(run.summary)
  const rendered = await core.readNamespacedConfigMap({ namespace: NS, name: 'podinfo' })
  step(`What Helm deployed: greeting=${rendered.data?.['greeting'] ?? '?'}`)
  if (run.exitCode !== 0) {
    process.stderr.write(run.stdout)
    process.exitCode = 1
  }
} finally {
  repo.cleanup()
  await cluster.stop()
}
