// The demo: the GitOps loop on a local cluster with the real Flux controllers. A Flux
// repository on the loopback git server (a HelmRelease reading values generated from
// values.yaml), bootstrapped as `flux bootstrap` would; then a commit that edits
// values.yaml is pushed, kustomize-controller applies it, and the bundled action, run the
// way the Actions runner runs it on that push, waits for the apply, triggers and reports
// helm-controller's upgrade. Prints the job summary.
//
//   npm run demo            (after scripts/setup.sh; scripts/demo.sh does both)

import { readFileSync } from 'node:fs'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { runAction } from '../test/support/action.ts'
import { startCluster } from '../test/support/cluster.ts'
import {
  GIT_REPOSITORY,
  HELM_RELEASE,
  KUSTOMIZATION,
  REQUESTED_AT,
  gitRepository,
  gitRevision,
  isAppliedAt,
  isReady,
  kustomization,
  type FluxObject,
} from '../test/support/flux.ts'
import { createGitRemote } from '../test/support/git-server.ts'
import { CLUSTER_ROOT, GIT_REPOSITORY_NAME, fluxTree, generatedValuesApp } from '../test/support/gitops.ts'
import { waitFor } from '../test/support/kube.ts'
import { kustomizeBinary } from '../test/support/kustomize.ts'

const NS = 'demo'
const values = (greeting: string): string => `replicas: 2\ngreeting: ${greeting}\n`

function step(text: string): void {
  process.stdout.write(`\n▶ ${text}\n`)
}

const cluster = await startCluster({ flux: true, log: (line) => process.stderr.write(`  [cluster] ${line}\n`) })
const kustomize = await kustomizeBinary((line) => process.stderr.write(`  [kustomize] ${line}\n`))
const remote = await createGitRemote(cluster.gitServerUrl, 'fleet')
try {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api)
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
  const apply = (coords: { group: string; version: string; plural: string }, object: FluxObject) =>
    custom.patchNamespacedCustomObject(
      { ...coords, namespace: NS, name: object.metadata.name, body: object, fieldManager: 'demo', force: true },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )
  const get = async (coords: { group: string; version: string; plural: string }, name: string) =>
    (await custom.getNamespacedCustomObject({ ...coords, namespace: NS, name })) as FluxObject
  // What a push webhook (Flux's Receiver) does: source-controller fetches now, not at its interval.
  const fetchNow = () =>
    custom.patchNamespacedCustomObject(
      { ...GIT_REPOSITORY, namespace: NS, name: GIT_REPOSITORY_NAME, body: { metadata: { annotations: { [REQUESTED_AT]: new Date().toISOString() } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
  const appliedAt = (sha: string, name = 'apps') =>
    waitFor(async () => isAppliedAt(await get(KUSTOMIZATION, name), gitRevision(sha)), { timeoutMs: 120_000, message: `Kustomization ${name} at ${sha}` })

  step(`A Flux repository on the loopback git server (${remote.url}); Flux bootstrapped on ${CLUSTER_ROOT}`)
  await cluster.createNamespace(NS)
  const first = await remote.push(
    { ...fluxTree({ namespace: NS, chartRepoUrl: cluster.chartRepoUrl }), ...generatedValuesApp(NS, values('hello')) },
    'podinfo: initial values',
  )
  process.stdout.write(remote.work.git('ls-files') + '\n')
  await apply(GIT_REPOSITORY, gitRepository({ namespace: NS, name: GIT_REPOSITORY_NAME, url: remote.url }))
  await apply(KUSTOMIZATION, kustomization({ namespace: NS, name: 'flux-system', source: GIT_REPOSITORY_NAME, path: `./${CLUSTER_ROOT}` }))
  await appliedAt(first, 'flux-system')
  await appliedAt(first)
  await waitFor(async () => isReady(await get(HELM_RELEASE, 'podinfo')), { timeoutMs: 120_000, message: 'podinfo Ready' })
  step('kustomize-controller applied it; helm-controller installed "podinfo" with greeting=hello (revision 1)')

  step('A commit changes greeting to "bonjour" in apps/podinfo/values.yaml and is pushed')
  const after = await remote.push({ 'apps/podinfo/values.yaml': values('bonjour') }, 'podinfo: say bonjour')
  process.stdout.write(remote.work.git('show', '--format=  %h %s', after) + '\n')

  step('The action runs on the push: it renders the repository as Flux applies it, waits for kustomize-controller, triggers, waits for helm-controller')
  const run = runAction({
    workspace: remote.work.dir,
    eventName: 'push',
    event: { before: first, after, ref: 'refs/heads/main' },
    sha: after,
    inputs: {
      kubeconfig: readFileSync(cluster.kubeconfigPath, 'utf8'),
      timeout: '2m',
      'cluster-root': CLUSTER_ROOT,
      'git-repository': `${NS}/${GIT_REPOSITORY_NAME}`,
      'kustomize-path': kustomize,
    },
  })
  await fetchNow()
  const [result] = await Promise.all([run, appliedAt(after)])

  step(`The job summary (exit code ${result.exitCode})`)
  process.stdout.write(result.summary)
  const rendered = await core.readNamespacedConfigMap({ namespace: NS, name: 'podinfo' })
  step(`What Helm deployed: greeting=${rendered.data?.['greeting'] ?? '?'}`)
  if (result.exitCode !== 0) {
    process.stderr.write(result.stdout)
    process.exitCode = 1
  }
} finally {
  remote.cleanup()
  await cluster.stop()
}
