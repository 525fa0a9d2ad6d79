// The bundled action on a pull_request event, run as the runner runs it: no cluster is touched,
// the pull request gets the plan in its sticky comment and a neutral check on its head; a fork's
// pull request gets nothing written. Against the loopback API that validates every request
// against GitHub's REST description.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runAction } from '../../../test/support/action.ts'
import { cell, code } from '../../../src/lib/text.ts'
import { startGitHubApi, type GitHubApi } from '../../../test/support/github-api.ts'
import { createRepo, type Repo } from '../../../test/support/repo.ts'
import { triggerConfigMap } from '../../../test/support/manifests.ts'

// The bundle, real git and GitHub's own spacing between writes: generous limits.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

let api: GitHubApi
let repo: Repo
let base: string
let head: string

beforeAll(async () => {
  api = await startGitHubApi()
  repo = createRepo()
  repo.write({ 'apps/values.yaml': triggerConfigMap({ name: 'web-values', namespace: 'apps', releases: 'web', values: 'image:\n  tag: "1.0"' }) })
  base = repo.commit('values')
  repo.write({ 'apps/values.yaml': triggerConfigMap({ name: 'web-values', namespace: 'apps', releases: 'web', values: 'image:\n  tag: "1.1"' }) })
  head = repo.commit('bump the tag')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

function pullRequestEvent(number: number, headRepo: string) {
  return {
    number,
    pull_request: { number, base: { sha: base, repo: { full_name: 'acme/fleet' } }, head: { sha: head, repo: { full_name: headRepo } } },
  }
}

describe('a pull request', () => {
  it('gets the plan in one sticky comment and a neutral check, and the re-run edits them', async () => {
    api.addPullRequest(head, 5)
    for (let i = 0; i < 2; i++) {
      const run = await runAction({
        workspace: repo.dir,
        eventName: 'pull_request',
        event: pullRequestEvent(5, 'acme/fleet'),
        sha: head,
        inputs: { 'github-token': 'ghs_pr' },
        env: { GITHUB_API_URL: api.url },
      })
      expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    }
    const comments = api.comments(5)
    expect(comments).toHaveLength(1)
    expect(comments[0]?.body).toContain(cell('plan: 1 release would be triggered'))
    expect(comments[0]?.body).toContain(
      `| ${code('apps/web')} | ${code('ConfigMap/apps/web-values')} | modified | named by the source | ${code('apps/values.yaml:1')} |`,
    )
    expect(comments[0]?.body).toContain(
      `| ${code('ConfigMap/apps/web-values')} | ${code('values.yaml')} → ${code('image.tag')} | modified | ${code('"1.0"')} | ${code('"1.1"')} |`,
    )
    expect(api.checkRuns).toHaveLength(1)
    expect(api.checkRuns[0]).toMatchObject({ head_sha: head, conclusion: 'neutral', output: { title: 'plan: 1 release would be triggered' } })
    expect(api.deployments).toEqual([])
  })

  it('from a fork gets nothing written', async () => {
    const before = api.requests.length
    const run = await runAction({
      workspace: repo.dir,
      eventName: 'pull_request',
      event: pullRequestEvent(6, 'someone/fleet'),
      sha: head,
      inputs: { 'github-token': 'ghs_fork', 'deployment-environment': 'production' },
      env: { GITHUB_API_URL: api.url },
    })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(api.requests.length).toBe(before)
    expect(run.stdout).toContain('a pull request from a fork gets nothing written')
  })
})

describe('what others put on the pull request', () => {
  it('S4: a comment planted with the report marker is left alone; the action writes its own and keeps it', async () => {
    api.addPullRequest(head, 21)
    const planted = '<!-- helmrelease-trigger: helmrelease-trigger -->\n### ✅ helmrelease-trigger: all checks passed, safe to merge'
    api.addComments(21, ['LGTM', planted], 'mallory')
    for (let i = 0; i < 2; i++) {
      const run = await runAction({
        workspace: repo.dir,
        eventName: 'pull_request',
        event: pullRequestEvent(21, 'acme/fleet'),
        sha: head,
        inputs: { 'github-token': 'ghs_pr' },
        env: { GITHUB_API_URL: api.url },
      })
      expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    }
    const comments = api.comments(21)
    expect(comments.find((c) => c.user === 'mallory' && c.body.startsWith('<!--'))?.body).toBe(planted)
    expect(comments.filter((c) => c.user === 'github-actions[bot]')).toHaveLength(1)
    expect(api.requests.filter((r) => r.operationId === 'issues/update-comment' && r.path.endsWith(`/${comments[1]?.id}`))).toEqual([])
  })

  it("I2: a push whose commit heads a fork's open pull request comments nowhere", async () => {
    // A commit that triggers nothing: the run reports without a cluster.
    repo.write({ 'README.md': 'docs\n' })
    const docs = repo.commit('docs only')
    api.addPullRequest(docs, 22, { fromFork: true })
    const run = await runAction({
      workspace: repo.dir,
      eventName: 'push',
      event: { before: head, after: docs, ref: 'refs/heads/release' },
      sha: docs,
      inputs: { 'github-token': 'ghs_push' },
      env: { GITHUB_API_URL: api.url },
    })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(run.stdout + run.stderr).toContain('has no pull request of this repository')
    expect(api.comments(22)).toEqual([])
    expect(api.checkRuns.some((c) => c.head_sha === docs)).toBe(true)
  })
})
