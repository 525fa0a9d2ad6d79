// examples/scheduled-drift.yml, unmodified, on its schedule under a real Actions runner (act)
// against the local cluster's real helm-controller: a release as Helm deployed it passes; after
// an edit behind Helm's back the job fails (drift-action fail by default) and the example's
// failure step prints the drifted object from the action's `drift` output.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActRepo, runAct } from '../../test/support/act.ts'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { createNamespace } from '../../test/support/kube.ts'
import type { Repo } from '../../test/support/repo.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
// The example checks these namespaces and releases labelled environment=production.
const NAMESPACE = 'apps'

let api: GitHubApi
let repo: Repo

interface DriftOutput {
  readonly releases: readonly { namespace: string; name: string; state: string; drifted?: readonly { kind: string; name: string; state: string }[] }[]
}

const greeting = (value: string) =>
  cluster.core.patchNamespacedConfigMap(
    { namespace: NAMESPACE, name: 'web', body: { data: { greeting: value } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )

const drift = () =>
  runAct({
    repo: repo.dir,
    workflow: join(REPO_ROOT, 'examples', 'scheduled-drift.yml'),
    event: 'schedule',
    payload: { schedule: '17 * * * 1-5' },
    api,
    secrets: { KUBECONFIG: kubeconfig },
  })

beforeAll(async () => {
  api = await startGitHubApi()
  for (const name of [NAMESPACE, 'platform']) await createNamespace(cluster.kubeconfig, name)
  await cluster.applyHelmRepository(NAMESPACE)
  await cluster.applyHelmRelease({ namespace: NAMESPACE, name: 'web', labels: { environment: 'production' }, values: { greeting: 'hello' } })
  await cluster.waitForHelmReleaseReady(NAMESPACE, 'web')
  // The job checks nothing out; act still needs a repository to run in.
  repo = createActRepo(api)
  repo.commit('empty')
})

afterAll(async () => {
  // The example's namespaces are fixed: a cluster reused for another run must not start drifted.
  await greeting('hello')
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

describe('examples/scheduled-drift.yml under act, on the local cluster', () => {
  it('passes while the release is as Helm deployed it', async () => {
    const run = await drift()
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)
    expect(run.jobResults('drift')).toEqual(['success'])
    const output = JSON.parse(run.stepOutputs('drift', 'drift')['drift'] ?? '{}') as DriftOutput
    expect(output.releases).toEqual([expect.objectContaining({ namespace: NAMESPACE, name: 'web', state: 'InSync' })])
    // The failure step's `if: failure()` kept it from running: nothing printed the drift.
    expect(run.output('drift')).not.toContain('"release":')
  })

  it('fails after an edit behind Helm’s back, and the failure step prints the drifted object', async () => {
    // The demo chart renders the release's values into the ConfigMap `web`: edit one by hand.
    await greeting('tampered')
    const run = await drift()
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode).not.toBe(0)
    expect(run.jobResults('drift')).toEqual(['failure'])
    const output = JSON.parse(run.stepOutputs('drift', 'drift')['drift'] ?? '{}') as DriftOutput
    expect(output.releases).toEqual([
      expect.objectContaining({ namespace: NAMESPACE, name: 'web', state: 'Drifted', drifted: [expect.objectContaining({ kind: 'ConfigMap', name: 'web' })] }),
    ])
    const printed = run
      .output('drift')
      .split('\n')
      .filter((l) => l.startsWith('{"release":'))
    expect(printed.map((l) => JSON.parse(l) as unknown)).toEqual([
      { release: `${NAMESPACE}/web`, state: 'Drifted', drifted: [expect.stringMatching(/^ConfigMap\/web /)] },
    ])
    expect(workflowCommands(run.output('drift')).filter((c) => c.name === 'error')).not.toEqual([])
    expect(run.summaries('drift').join('\n')).toContain(
      '| <code>data.greeting</code> | <code>&#34;hello&#34;</code> → <code>&#34;tampered&#34;</code> | changed |',
    )
  })
})
