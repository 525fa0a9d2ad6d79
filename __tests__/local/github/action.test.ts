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
