// The GitOps loop the end-to-end tests drive: a repository on the loopback git server that
// the real source-controller fetches and the real kustomize-controller applies, bootstrapped
// as `flux bootstrap` would, and a push the bundled action runs on while Flux catches up.

import { expect } from 'vitest'
import { runAction, type ActionRun } from './action.ts'
import type { ClusterHandle } from './context.ts'
import { gitRevision, isAppliedAt } from './flux.ts'
import type { GitRemote } from './git-server.ts'
import { CLUSTER_ROOT, GIT_REPOSITORY_NAME } from './gitops.ts'

export interface Loop {
  readonly namespace: string
  readonly remote: GitRemote
  head: string
}

/**
 * Pushes the first commit and bootstraps Flux on it: the GitRepository and the root
 * Kustomization (path clusters/demo) are applied by hand, the rest comes from the repository.
 * Resolves when `release` (podinfo) is installed (revision 1).
 */
export async function bootstrap(
  cluster: ClusterHandle,
  prefix: string,
  files: (namespace: string) => Promise<Record<string, string>>,
  release = 'podinfo',
): Promise<Loop> {
  const namespace = await cluster.createNamespace(prefix)
  const remote = await cluster.createGitRemote()
  const head = await remote.push(await files(namespace), 'Add podinfo')
  await cluster.applyGitRepository({ namespace, name: GIT_REPOSITORY_NAME, url: remote.url })
  await cluster.applyKustomization({ namespace, name: 'flux-system', source: GIT_REPOSITORY_NAME, path: `./${CLUSTER_ROOT}` })
  await cluster.syncKustomization(namespace, 'flux-system', head, { source: GIT_REPOSITORY_NAME })
  await cluster.waitFor(async () => isAppliedAt(await cluster.getKustomization(namespace, 'apps'), gitRevision(head)), {
    timeoutMs: 120_000,
    message: `Kustomization ${namespace}/apps at ${head}`,
  })
  const installed = await cluster.waitForHelmReleaseReady(namespace, release)
  expect(installed.status?.history?.[0]).toMatchObject({ status: 'deployed' })
  return { namespace, remote, head }
}

/**
 * Pushes a commit and runs the action on that push at once; source-controller is asked to
 * fetch it (a push webhook's job) only after the action has started, so the action finds the
 * cluster still on the old commit and has to wait for kustomize-controller.
 */
export async function pushAndRun(
  cluster: ClusterHandle,
  loop: Loop,
  files: Record<string, string>,
  message: string,
  inputs: { readonly kubeconfig: string; readonly kustomize: string },
  /** Runs after the push and before the action: e.g. the pull request's plan of the same commits. */
  beforeRun?: (before: string, head: string) => Promise<void>,
): Promise<ActionRun> {
  const before = loop.head
  loop.head = await loop.remote.push(files, message)
  await beforeRun?.(before, loop.head)
  const run = runAction({
    workspace: loop.remote.work.dir,
    eventName: 'push',
    event: { before, after: loop.head, ref: 'refs/heads/main' },
    sha: loop.head,
    inputs: {
      kubeconfig: inputs.kubeconfig,
      timeout: '2m',
      'cluster-root': CLUSTER_ROOT,
      'git-repository': `${loop.namespace}/${GIT_REPOSITORY_NAME}`,
      'kustomize-path': inputs.kustomize,
    },
  })
  const synced = cluster.syncKustomization(loop.namespace, 'apps', loop.head, { source: GIT_REPOSITORY_NAME })
  const [result] = await Promise.all([run, synced])
  return result
}
