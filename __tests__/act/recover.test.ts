// examples/scheduled-recover.yml, unmodified, on its schedule under a real Actions runner (act)
// against the local cluster's real helm-controller: a release in one of the example's namespaces
// failed on a transient-looking error (the demo chart's `fail`); once the cause is gone the
// scheduled job re-triggers it and it is Ready again.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActRepo, runAct } from '../../test/support/act.ts'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { useCluster } from '../../test/support/context.ts'
import { condition } from '../../test/support/flux.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { createNamespace } from '../../test/support/kube.ts'
import type { Repo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
// One of the namespaces the example scans (apps, platform).
const NAMESPACE = 'platform'
const MESSAGE = 'context deadline exceeded'

let api: GitHubApi
let repo: Repo

beforeAll(async () => {
  api = await startGitHubApi()
  await createNamespace(cluster.kubeconfig, NAMESPACE)
  await cluster.applyHelmRepository(NAMESPACE)
  await cluster.applyValues(NAMESPACE, `fail: "${MESSAGE}"`)
  await cluster.applyHelmRelease({ namespace: NAMESPACE, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
  // Failed, and failed again, so helm-controller's own retry has backed off: the recovery is the job's.
  await cluster.waitFor(
    async () => {
      const release = await cluster.getHelmRelease(NAMESPACE, 'app')
      return (condition(release, 'Ready')?.message?.includes(MESSAGE) ?? false) && Number(release.status?.['failures'] ?? 0) >= 4
    },
    { timeoutMs: 180_000, message: `${NAMESPACE}/app failed on "${MESSAGE}" four times` },
  )
  await cluster.applyValues(NAMESPACE, 'greeting: back')
  // The job checks nothing out; act still needs a repository to run in.
  repo = createActRepo(api)
  repo.commit('empty')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

describe('examples/scheduled-recover.yml under act, on the local cluster', () => {
  it('re-triggers the release that failed on a transient error, and it is Ready again', async () => {
    const run = await runAct({
      repo: repo.dir,
      workflow: join(REPO_ROOT, 'examples', 'scheduled-recover.yml'),
      event: 'schedule',
      payload: { schedule: '*/15 * * * *' },
      api,
      secrets: { KUBECONFIG: kubeconfig },
    })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)
    expect(run.jobResults('recover')).toEqual(['success'])
    // The action step (no id: act numbers it 0) reports the recovery in its outputs.
    const triggered = JSON.parse(run.stepOutputs('recover', '0')['triggered'] ?? '[]') as unknown[]
    expect(triggered).toEqual([expect.objectContaining({ namespace: NAMESPACE, name: 'app', status: 'Upgraded' })])
    const live = await cluster.getHelmRelease(NAMESPACE, 'app')
    expect(condition(live, 'Ready')?.status).toBe('True')
    expect(live.metadata.annotations?.['nebius.ai/recover-attempts']).toBe('1')
    expect(run.summaries('recover').join('\n')).toContain(`<code>${NAMESPACE}/app</code>`)
  })
})
