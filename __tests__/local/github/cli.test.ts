// The CLI reports to GitHub as the action does, with --github-token or GITHUB_TOKEN, against
// the loopback API that validates every request against GitHub's REST description.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main, type CliIo } from '../../../src/entry/cli.ts'
import { startGitHubApi, type GitHubApi } from '../../../test/support/github-api.ts'
import { createRepo, type Repo } from '../../../test/support/repo.ts'
import { triggerConfigMap } from '../../../test/support/manifests.ts'

// Real git and GitHub's own spacing between writes (a second): generous limits.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

let api: GitHubApi
let repo: Repo
let head: string

beforeAll(async () => {
  api = await startGitHubApi()
  repo = createRepo()
  repo.write({ 'apps/values.yaml': triggerConfigMap({ name: 'app-values', namespace: 'apps', releases: 'app', values: 'replicas: 1' }) })
  repo.commit('values')
  repo.write({ 'README.md': 'docs only\n' })
  head = repo.commit('docs')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

function io(env: Record<string, string>): CliIo & { stderr: () => string } {
  const err: string[] = []
  return { out: () => undefined, err: (t) => void err.push(t), env, cwd: repo.dir, stderr: () => err.join('') }
}

describe('helmrelease-trigger trigger with a GitHub token', () => {
  it('takes GITHUB_TOKEN from the environment and writes the check on the head commit', async () => {
    const run = io({ GITHUB_TOKEN: 'ghp_from_env', GITHUB_REPOSITORY: 'acme/fleet', GITHUB_API_URL: api.url })
    expect(await main(['trigger', '--github-report', 'check'], run)).toBe(0)
    expect(api.checkRuns).toHaveLength(1)
    expect(api.checkRuns[0]).toMatchObject({ head_sha: head, name: 'helmrelease-trigger', conclusion: 'success', output: { title: 'nothing to trigger' } })
    expect(run.stderr()).not.toContain('ghp_from_env')
  })

  it('takes --github-token and --github-repository, and updates the same check on a re-run', async () => {
    const run = io({ GITHUB_API_URL: api.url })
    expect(await main(['trigger', '--github-token', 'ghp_flag', '--github-repository', 'acme/fleet', '--github-report', 'check'], run)).toBe(0)
    expect(api.checkRuns).toHaveLength(1)
    expect(api.requests.filter((r) => r.operationId === 'checks/update').length).toBeGreaterThanOrEqual(2)
  })

  it('a 403 is a warning that names the permission; the exit code stays 0', async () => {
    api.fault({ operationId: 'repos/list-pull-requests-associated-with-commit', status: 403, times: 1 })
    const run = io({ GITHUB_TOKEN: 't', GITHUB_REPOSITORY: 'acme/fleet', GITHUB_API_URL: api.url })
    expect(await main(['trigger', '--github-report', 'comment'], run)).toBe(0)
    expect(run.stderr()).toContain('Add `pull-requests: write`')
  })

  it('without a token nothing is sent, and --github-report none needs none', async () => {
    const before = api.requests.length
    expect(await main(['trigger'], io({ GITHUB_REPOSITORY: 'acme/fleet', GITHUB_API_URL: api.url }))).toBe(0)
    expect(await main(['trigger', '--github-report', 'none'], io({ GITHUB_TOKEN: 't', GITHUB_REPOSITORY: 'acme/fleet', GITHUB_API_URL: api.url }))).toBe(0)
    expect(api.requests.length).toBe(before)
  })
})
