// End to end with the real helm-controller and the bundled action: the run posts a check run
// whose table is the job summary's, a sticky comment on the commit's pull request and a
// deployment, to the loopback GitHub API that validates every request against GitHub's REST
// description; the upgraded HelmRelease carries the commit for Flux's notification-controller.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAction } from '../../test/support/action.ts'
import { code } from '../../src/lib/text.ts'
import { useCluster } from '../../test/support/context.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')

let api: GitHubApi
let repo: Repo
let namespace: string

const manifest = (values: string): string => triggerConfigMap({ name: 'app-values', namespace, releases: 'app', values })

beforeAll(async () => {
  api = await startGitHubApi()
  namespace = await cluster.createNamespace('e2e-github')
  await cluster.applyHelmRepository(namespace)
  await cluster.applyValues(namespace, 'greeting: hello')
  await cluster.applyHelmRelease({ namespace, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
  await cluster.waitForHelmReleaseReady(namespace, 'app')
  repo = createRepo()
  repo.write({ 'apps/values.yaml': manifest('greeting: hello') })
  repo.commit('initial')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

/** The table under `### Releases`, row by row. */
function releaseTable(markdown: string): string[] {
  const lines = markdown.split('\n')
  const start = lines.indexOf('### Releases')
  const end = lines.findIndex((l, i) => i > start + 1 && !l.startsWith('|') && l !== '')
  return lines.slice(start, end === -1 ? undefined : end).filter((l) => l.startsWith('|'))
}

describe('the GitHub report of a real upgrade', () => {
  it('posts a check whose table matches the job summary, comments on the pull request, and stamps the commit on the release', async () => {
    const before = repo.git('rev-parse', 'HEAD')
    repo.write({ 'apps/values.yaml': manifest('greeting: bonjour') })
    const head = repo.commit('change values')
    api.addPullRequest(head, 42)
    const applied = new Promise<void>((resolve, reject) => setTimeout(() => cluster.applyValues(namespace, 'greeting: bonjour').then(resolve, reject), 2_000))
    const run = await runAction({
      workspace: repo.dir,
      eventName: 'push',
      event: { before, after: head, ref: 'refs/heads/main' },
      sha: head,
      inputs: { kubeconfig, timeout: '90s', 'github-token': 'ghs_e2e', 'deployment-environment': 'production' },
      env: { GITHUB_API_URL: api.url },
    })
    await applied
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    // The runner hides the token once told to (::add-mask::); nothing else may print it.
    const printed = (run.stdout + run.stderr).split('\n').filter((l) => !l.startsWith('::add-mask::'))
    expect(printed.join('\n')).not.toContain('ghs_e2e')

    expect(api.checkRuns).toHaveLength(1)
    const check = api.checkRuns[0]
    expect(check).toMatchObject({ head_sha: head, name: 'helmrelease-trigger', status: 'completed', conclusion: 'success', output: { title: '1 upgraded' } })
    const table = releaseTable(run.summary)
    expect(table.length).toBeGreaterThan(2)
    expect(releaseTable(check?.output.summary ?? '')).toEqual(table)
    expect(check?.annotations).toEqual([expect.objectContaining({ path: 'apps/values.yaml', annotation_level: 'notice' })])

    const comments = api.comments(42)
    expect(comments).toHaveLength(1)
    expect(releaseTable(comments[0]?.body ?? '')).toEqual(table)
    expect(comments[0]?.body).toContain(`${code('values.yaml')} → ${code('greeting')}`)

    expect(api.deployments).toHaveLength(1)
    expect(api.deployments[0]?.statuses.map((s) => s.state)).toEqual(['in_progress', 'success'])

    const annotations = (await cluster.getHelmRelease(namespace, 'app')).metadata.annotations ?? {}
    expect(annotations['event.toolkit.fluxcd.io/commit']).toBe(head)
    expect(annotations['event.toolkit.fluxcd.io/change_request']).toBe('42')
  })
})
