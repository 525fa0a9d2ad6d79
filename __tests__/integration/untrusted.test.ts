// A fork's pull request never gets cluster writes, whatever the inputs: the bundled action,
// given an admin kubeconfig and every input that asks for writes, on pull_request_target
// (the event that runs with the base repository's secrets) from a fork.

import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))

function manifest(namespace: string, level: string): string {
  return triggerConfigMap({ name: 'settings', namespace, releases: 'web', values: `level: ${level}` })
}

/** A fork's pull request changing the ConfigMap of a namespace whose release `web` exists. */
async function forkPullRequest(): Promise<{ namespace: string; run: (inputs: Record<string, string>) => Promise<ActionRun> }> {
  const namespace = await cluster.createNamespace('fork-pr')
  await cluster.applyHelmRelease({ namespace, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: 'settings' }] })
  const repo = createRepo()
  repos.push(repo)
  repo.write({ 'cm.yaml': manifest(namespace, 'one') })
  const base = repo.commit('base')
  repo.write({ 'cm.yaml': manifest(namespace, 'two') })
  const head = repo.commit('from the fork')
  const event = {
    pull_request: {
      base: { sha: base, repo: { full_name: 'acme/fleet' } },
      head: { sha: head, repo: { full_name: 'mallory/fleet' } },
    },
  }
  return {
    namespace,
    run: (inputs) => runAction({ workspace: repo.dir, eventName: 'pull_request_target', event, sha: base, inputs: { kubeconfig, ...inputs } }),
  }
}

const writeEverything = { 'allow-pull-requests': 'true', apply: 'true', force: 'true', reset: 'true', 'full-sync': 'true', wait: 'false' }

async function untouched(namespace: string): Promise<void> {
  const release = await cluster.getHelmRelease(namespace, 'web')
  expect(Object.keys(release.metadata.annotations ?? {}).filter((k) => k.startsWith('reconcile.fluxcd.io/') || k.startsWith('nebius.ai/'))).toEqual([])
  expect(release.metadata.labels?.['nebius.ai/helmrelease-trigger-operator']).toBeUndefined()
  await expect(cluster.core.readNamespacedConfigMap({ namespace, name: 'settings' })).rejects.toThrow()
  const events = await cluster.core.listNamespacedEvent({ namespace })
  expect(events.items.filter((e) => e.source?.component === 'helmrelease-trigger')).toEqual([])
}

describe('a fork pull request with an admin kubeconfig and every write input set', () => {
  it('trigger: plans only; nothing applied, patched or recorded', async () => {
    const pr = await forkPullRequest()
    const run = await pr.run(writeEverything)
    expect(run.exitCode, run.stdout).toBe(0)
    expect(`${run.stdout}\n${run.summary}`).toContain('a fork never gets cluster writes')
    expect(JSON.parse(run.outputs['plan'] ?? '{}')).toMatchObject({ releases: [expect.objectContaining({ namespace: pr.namespace, name: 'web' })] })
    await untouched(pr.namespace)
  })

  it.each(['recover', 'discover', 'drift', 'watch'])('mode %s: refused before connecting, naming the reason', async (mode) => {
    const pr = await forkPullRequest()
    const run = await pr.run({ ...writeEverything, mode, namespaces: pr.namespace, 'drift-action': 'correct', 'recover-patterns': '.' })
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain(`::error::mode '${mode}' needs the cluster, refused: pull_request_target event from a fork`)
    await untouched(pr.namespace)
  })

  it('discover from git alone still runs (it reads only the repository)', async () => {
    const pr = await forkPullRequest()
    const run = await pr.run({ mode: 'discover', 'from-git': 'true' })
    expect(run.stdout).not.toContain('refused')
    await untouched(pr.namespace)
  })
})
