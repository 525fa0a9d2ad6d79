// The trigger examples, unmodified, under a real Actions runner (act) against the local cluster's
// real helm-controller: a push runs examples/push-main.yml (the action as a step) and then
// examples/reusable-call.yml (.github/workflows/trigger.yml called as a reusable workflow, its
// outputs read by a later job); a manual run of examples/manual-dispatch.yml with dry-run sends
// the patch as a server-side dry run. Each time the cluster already holds the commit's values
// (as kustomize-controller would have applied them), so the run goes straight to the release.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActRepo, pushEvent, runAct } from '../../test/support/act.ts'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import type { Repo } from '../../test/support/repo.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')

let api: GitHubApi
let repo: Repo
let namespace: string

const manifest = (values: string): string => triggerConfigMap({ name: 'app-values', namespace, releases: 'app', values })

/** Commits new values and applies them to the cluster; returns before and after. */
async function change(greeting: string): Promise<{ before: string; after: string }> {
  const before = repo.git('rev-parse', 'HEAD')
  repo.write({ 'apps/values.yaml': manifest(`greeting: ${greeting}`) })
  const after = repo.commit(`greeting: ${greeting}`)
  await cluster.applyValues(namespace, `greeting: ${greeting}`)
  return { before, after }
}

const annotations = async (): Promise<Record<string, string>> => (await cluster.getHelmRelease(namespace, 'app')).metadata.annotations ?? {}

beforeAll(async () => {
  api = await startGitHubApi()
  namespace = await cluster.createNamespace('act')
  await cluster.applyHelmRepository(namespace)
  await cluster.applyValues(namespace, 'greeting: hello')
  await cluster.applyHelmRelease({ namespace, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
  await cluster.waitForHelmReleaseReady(namespace, 'app')
  repo = createActRepo(api)
  repo.write({ 'apps/values.yaml': manifest('greeting: hello') })
  repo.commit('initial')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

describe('the trigger examples under act, on the local cluster', () => {
  it('examples/push-main.yml: a push upgrades the release, with the job summary and a check run', async () => {
    const { before, after } = await change('bonjour')
    const run = await runAct({
      repo: repo.dir,
      workflow: join(REPO_ROOT, 'examples', 'push-main.yml'),
      event: 'push',
      payload: pushEvent(api, before, after),
      api,
      secrets: { KUBECONFIG: kubeconfig },
    })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)
    expect(run.jobResults('trigger')).toEqual(['success'])
    // The action step (no id: act numbers it 1) says what it triggered.
    const triggered = JSON.parse(run.stepOutputs('trigger', '1')['triggered'] ?? '[]') as { namespace: string; name: string; status: string }[]
    expect(triggered).toEqual([expect.objectContaining({ namespace, name: 'app', status: 'Upgraded' })])
    const summary = run.summaries('trigger').join('\n')
    expect(summary).toContain('## helmrelease-trigger: 1 triggered, 0 skipped, 0 failed')
    expect(summary).toMatch(/\| ✅ Upgraded \(UpgradeSucceeded\) \| (\d+) → (\d+) \|/)
    expect(api.checkRuns).toEqual([expect.objectContaining({ head_sha: after, status: 'completed', conclusion: 'success' })])
    expect((await annotations())['event.toolkit.fluxcd.io/commit']).toBe(after)
    // The kubeconfig's token was masked for the runner; no other line carries it.
    const output = run.output('trigger')
    expect(workflowCommands(output).map((c) => c.line)).toContain(`::add-mask::${cluster.adminToken}`)
    expect(output.split('\n').filter((l) => !l.startsWith('::add-mask::') && l.includes(cluster.adminToken))).toEqual([])
  })

  it('examples/reusable-call.yml: trigger.yml upgrades the release and the report job reads its outputs', async () => {
    const { before, after } = await change('hola')
    const run = await runAct({
      repo: repo.dir,
      workflow: join(REPO_ROOT, 'examples', 'reusable-call.yml'),
      event: 'push',
      payload: pushEvent(api, before, after),
      api,
      secrets: { KUBECONFIG: kubeconfig },
    })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)
    // act logs a called workflow's jobs by their own ids: trigger.yml's job is `trigger` too.
    expect(run.jobIds()).toEqual(['trigger', 'report'])
    expect(run.jobResults('trigger')).toEqual(['success'])
    expect(run.jobResults('report')).toEqual(['success'])
    const printed = run.output('report').split('\n')
    const triggered = JSON.parse(printed.find((l) => l.startsWith('triggered: '))?.slice('triggered: '.length) ?? '[]') as unknown[]
    expect(triggered).toEqual([expect.objectContaining({ namespace, name: 'app', status: 'Upgraded' })])
    expect(printed).toContain('failed: []')
    expect((await annotations())['event.toolkit.fluxcd.io/commit']).toBe(after)
    expect(api.checkRuns.filter((c) => c.head_sha === after)).toEqual([expect.objectContaining({ conclusion: 'success' })])
  })

  it('examples/manual-dispatch.yml: a dry run patches nothing and says so', async () => {
    const { after } = await change('ciao')
    const requestedBefore = (await annotations())['reconcile.fluxcd.io/requestedAt']
    const run = await runAct({
      repo: repo.dir,
      workflow: join(REPO_ROOT, 'examples', 'manual-dispatch.yml'),
      event: 'workflow_dispatch',
      // As GitHub sends them: workflow_dispatch inputs are strings in the payload, booleans too.
      payload: { ref: 'refs/heads/main', inputs: { 'dry-run': 'true', 'full-sync': 'false', force: 'false', base: '', head: '' } },
      api,
      secrets: { KUBECONFIG: kubeconfig },
    })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)
    const outputs = run.stepOutputs('trigger', 'trigger')
    expect(JSON.parse(outputs['plan'] ?? '{}')).toMatchObject({ head: after, releases: [{ namespace, name: 'app' }] })
    expect(JSON.parse(outputs['failed'] ?? '')).toEqual([])
    expect(JSON.parse(outputs['triggered'] ?? '[]')).toEqual([expect.objectContaining({ namespace, name: 'app', status: 'DryRun', reason: 'DryRun' })])
    expect(run.summaries('trigger').join('\n')).toContain('| 🧪 DryRun |')
    // The server-side dry run wrote nothing: the release still carries the previous request.
    expect((await annotations())['reconcile.fluxcd.io/requestedAt']).toBe(requestedBefore)
    // `failed` is [], so the example's step printing the failures is skipped.
    expect(run.output('trigger')).not.toContain('"release":')
  })
})
