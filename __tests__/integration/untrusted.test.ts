// A fork's pull request never gets cluster writes, whatever the inputs: the bundled action,
// given an admin kubeconfig and every input that asks for writes, on pull_request_target
// (the event that runs with the base repository's secrets) from a fork.

import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { render } from '../../test/support/markdown.ts'

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

describe("a fork's content reaching the cluster through another event (audit F4)", () => {
  /** The same fork commit, now given as `head:` to a run started by workflow_run or issue_comment. */
  async function started(eventName: string, payload: (head: string) => unknown): Promise<{ namespace: string; run: ActionRun }> {
    const namespace = await cluster.createNamespace('fork-via')
    await cluster.applyHelmRelease({ namespace, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: 'settings' }] })
    const repo = createRepo()
    repos.push(repo)
    repo.write({ 'cm.yaml': manifest(namespace, 'one') })
    const base = repo.commit('base')
    repo.write({ 'cm.yaml': manifest(namespace, 'two') })
    const head = repo.commit('from the fork')
    const inputs = { kubeconfig, head, base, apply: 'true', wait: 'false' }
    return { namespace, run: await runAction({ workspace: repo.dir, eventName, event: payload(head), sha: base, inputs }) }
  }

  it("workflow_run after a fork pull request's run, with head: the fork commit and apply: plans only, nothing written", async () => {
    const { namespace, run } = await started('workflow_run', (head) => ({
      workflow_run: { event: 'pull_request', head_sha: head, head_repository: { full_name: 'evil/app' } },
      repository: { full_name: 'acme/app' },
    }))
    expect(run.exitCode, run.stdout).toBe(0)
    expect(render(run.summary).lines.join('\n')).toContain('workflow_run event after a pull_request run from a fork (or of unknown origin): plan only')
    expect(run.stdout).toContain('Planned (PlanOnly)')
    await untouched(namespace)
  })

  it('issue_comment on a pull request: plans only, nothing written', async () => {
    const { namespace, run } = await started('issue_comment', () => ({
      issue: { number: 7, pull_request: { url: 'https://api.github.example/repos/acme/app/pulls/7' } },
      comment: { body: '/deploy', author_association: 'NONE' },
      repository: { full_name: 'acme/app' },
    }))
    expect(run.exitCode, run.stdout).toBe(0)
    expect(render(run.summary).lines.join('\n')).toContain('issue_comment event on a pull request from a fork (or of unknown origin): plan only')
    expect(run.stdout).toContain('Planned (PlanOnly)')
    await untouched(namespace)
  })
})
