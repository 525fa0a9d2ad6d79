// The GitHub reporter against a loopback API that validates every request and answer
// against GitHub's published REST description: checks, statuses, the sticky comment,
// deployments, and what happens when GitHub refuses.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createGitHubClient } from '../../../src/github/client.ts'
import { commentMarker, createGitHubReporter, type GitHubScope, type Verdict } from '../../../src/github/reporter.ts'
import { startGitHubApi, type GitHubApi } from '../../../test/support/github-api.ts'

// The first test compiles the validators of GitHub's description: generous on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const SHA = 'a'.repeat(40)

let api: GitHubApi
let warnings: string[]
let infos: string[]
let waits: number[]

beforeEach(async () => {
  api = await startGitHubApi()
  warnings = []
  infos = []
  waits = []
})

afterEach(async () => {
  expect(api.violations).toEqual([])
  await api.close()
})

function reporter(scope: Partial<GitHubScope> = {}) {
  const log = { info: (m: string) => void infos.push(m), warning: (m: string) => void warnings.push(m) }
  const client = createGitHubClient({
    token: 'ghs_test',
    baseUrl: api.url,
    sleep: async (ms) => void waits.push(ms),
    warn: log.warning,
    retryBaseMs: 0,
    writeSpacingMs: 0,
  })
  return createGitHubReporter(
    {
      owner: 'acme',
      repo: 'fleet',
      sha: SHA,
      checkName: 'helmrelease-trigger',
      runUrl: 'https://github.example/acme/fleet/actions/runs/4242',
      pullRequest: undefined,
      fromFork: false,
      checks: true,
      comment: true,
      deploymentEnvironment: undefined,
      ...scope,
    },
    { client, now: () => Date.UTC(2026, 10, 25, 9), log },
  )
}

function verdict(over: Partial<Verdict> = {}): Verdict {
  return {
    conclusion: 'success',
    title: '1 upgraded',
    summary: '| Release | Result |\n| --- | --- |\n| `apps/web` | ✅ Upgraded |\n',
    text: '',
    annotations: [{ path: 'apps/values.yaml', startLine: 3, level: 'notice', title: 'ConfigMap/apps/web-values changed', message: 'triggers apps/web' }],
    comment: '### helmrelease-trigger: 1 upgraded\n',
    ...over,
  }
}

describe('check run', () => {
  it('is created in progress, completed, and updated in place by a re-run', async () => {
    const first = reporter()
    await first.start()
    expect(api.checkRuns).toHaveLength(1)
    expect(api.checkRuns[0]?.status).toBe('in_progress')
    await first.finish(verdict())
    expect(api.checkRuns[0]).toMatchObject({ status: 'completed', conclusion: 'success', head_sha: SHA, output: { title: '1 upgraded' } })
    expect(api.checkRuns[0]?.annotations).toHaveLength(1)

    const rerun = reporter()
    await rerun.start()
    await rerun.finish(verdict({ conclusion: 'failure', title: '1 failed' }))
    expect(api.checkRuns).toHaveLength(1)
    expect(api.checkRuns[0]).toMatchObject({ conclusion: 'failure', output: { title: '1 failed' } })
    // Annotations are appended by GitHub on update: a re-run must not repeat them.
    expect(api.checkRuns[0]?.annotations).toHaveLength(1)
    expect(warnings).toEqual([])
  })

  it('sends annotations 50 per request', async () => {
    const annotations = Array.from({ length: 120 }, (_, i) => ({
      path: `apps/${i}.yaml`,
      startLine: i + 1,
      level: 'notice' as const,
      title: 't',
      message: 'm',
    }))
    await reporter({ comment: false }).finish(verdict({ annotations }))
    expect(api.checkRuns[0]?.annotations).toHaveLength(120)
    const writes = api.requests.filter((r) => r.operationId === 'checks/create' || r.operationId === 'checks/update')
    expect(writes).toHaveLength(3)
  })

  it('falls back to a commit status when checks cannot be written, with one warning naming the permission', async () => {
    api.fault({ operationId: 'checks/create', status: 403 })
    const r = reporter({ comment: false })
    await r.start()
    await r.finish(verdict({ conclusion: 'failure', title: '1 failed' }))
    expect(api.checkRuns).toEqual([])
    expect(api.statuses.map((s) => [s.state, s.context])).toEqual([
      ['pending', 'helmrelease-trigger'],
      ['failure', 'helmrelease-trigger'],
    ])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('`checks: write`')
    expect(api.faulted('checks/create')).toBe(1)
  })

  it('a 422 is a warning, not a failure', async () => {
    api.fault({ operationId: 'checks/create', status: 422 })
    await reporter({ comment: false, checks: true }).finish(verdict())
    expect(warnings.some((w) => w.includes('422'))).toBe(true)
  })

  it('honours Retry-After of a secondary rate limit through the injected clock', async () => {
    api.fault({ operationId: 'checks/create', status: 403, retryAfter: 7, times: 2 })
    await reporter({ comment: false }).finish(verdict())
    expect(waits).toEqual([7000, 7000])
    expect(api.faulted('checks/create')).toBe(2)
    expect(api.checkRuns).toHaveLength(1)
    expect(warnings).toEqual([])
  })
})

describe('sticky comment', () => {
  it('is found among 250 other comments and edited in place, never duplicated', async () => {
    api.addPullRequest(SHA, 7)
    api.addComments(
      7,
      Array.from({ length: 250 }, (_, i) => `comment ${i}`),
    )
    await reporter({ checks: false }).finish(verdict({ comment: 'first' }))
    api.addComments(
      7,
      Array.from({ length: 30 }, (_, i) => `later ${i}`),
    )
    await reporter({ checks: false }).finish(verdict({ comment: 'second' }))
    const ours = api.comments(7).filter((c) => c.body.startsWith(commentMarker('helmrelease-trigger')))
    expect(ours).toHaveLength(1)
    expect(ours[0]?.body).toContain('second')
    expect(api.comments(7)).toHaveLength(281)
    const listed = api.requests.filter((r) => r.operationId === 'issues/list-comments')
    expect(listed.length).toBe(3 + 3)
  })

  it('one comment per check name, so a matrix of clusters keeps one each', async () => {
    api.addPullRequest(SHA, 7)
    await reporter({ checks: false, checkName: 'deploy / prod' }).finish(verdict())
    await reporter({ checks: false, checkName: 'deploy / staging' }).finish(verdict())
    await reporter({ checks: false, checkName: 'deploy / prod' }).finish(verdict())
    expect(api.comments(7)).toHaveLength(2)
  })

  it('a commit without a pull request gets no comment, and says so', async () => {
    await reporter({ checks: false }).finish(verdict())
    expect(api.requests.map((r) => r.operationId)).toEqual(['repos/list-pull-requests-associated-with-commit'])
    expect(infos.some((m) => m.includes('has no pull request of this repository'))).toBe(true)
    expect(warnings).toEqual([])
  })

  it('a 403 names pull-requests: write', async () => {
    api.addPullRequest(SHA, 7)
    api.fault({ operationId: 'issues/create-comment', status: 403 })
    await reporter({ checks: false }).finish(verdict())
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('`pull-requests: write`')
  })

  it("S4: a comment someone planted with the marker is never edited; the token's own is written beside it and kept", async () => {
    api.addPullRequest(SHA, 7)
    const planted = `${commentMarker('helmrelease-trigger')}\n### ✅ helmrelease-trigger: all checks passed, safe to merge`
    api.addComments(7, ['LGTM', planted], 'mallory')
    await reporter({ checks: false }).finish(verdict({ comment: 'first' }))
    await reporter({ checks: false }).finish(verdict({ comment: 'second' }))
    const comments = api.comments(7)
    expect(comments.find((c) => c.user === 'mallory' && c.body === planted)).toBeDefined()
    const ours = comments.filter((c) => c.user === 'github-actions[bot]')
    expect(ours).toHaveLength(1)
    expect(ours[0]?.body).toContain('second')
    const plantedId = comments.find((c) => c.body === planted)?.id
    expect(api.requests.filter((r) => r.operationId === 'issues/update-comment' && r.path.endsWith(`/${plantedId}`))).toEqual([])
    expect(infos.some((m) => m.includes(`comment ${plantedId}`) && m.includes('not written by github-actions[bot]'))).toBe(true)
    expect(warnings).toEqual([])
  })

  it("knows its own comments by the identity the token writes as: a GitHub App's bot, from the check run it wrote", async () => {
    await api.close()
    api = await startGitHubApi({ login: 'deployer[bot]' })
    api.addPullRequest(SHA, 7)
    api.addComments(7, [`${commentMarker('helmrelease-trigger')}\nold`], 'github-actions[bot]')
    const r = reporter()
    await r.start()
    await r.finish(verdict({ comment: 'by the app' }))
    await reporter().finish(verdict({ comment: 'by the app, again' }))
    const ours = api.comments(7).filter((c) => c.user === 'deployer[bot]')
    expect(ours.map((c) => c.body.split('\n')[1])).toEqual(['by the app, again'])
    expect(api.comments(7).find((c) => c.user === 'github-actions[bot]')?.body).toContain('old')
    expect(api.requests.some((r) => r.operationId === 'users/get-authenticated')).toBe(false)
  })

  it('knows a user token by GET /user, once per run', async () => {
    await api.close()
    api = await startGitHubApi({ login: 'release-bot-user' })
    api.addPullRequest(SHA, 7)
    api.addComments(7, [`${commentMarker('helmrelease-trigger')}\nplanted`], 'mallory')
    await reporter({ checks: false }).finish(verdict({ comment: 'one' }))
    await reporter({ checks: false }).finish(verdict({ comment: 'two' }))
    expect(
      api
        .comments(7)
        .filter((c) => c.user === 'release-bot-user')
        .map((c) => c.body.split('\n')[1]),
    ).toEqual(['two'])
    expect(api.requests.filter((r) => r.operationId === 'users/get-authenticated')).toHaveLength(2)
  })

  it("I2: a push's commit comments only on a pull request of this repository merged as it, or whose head it is here, never a fork's", async () => {
    // GitHub lists open pull requests that contain the commit too: here a fork's, whose head is this commit.
    api.addPullRequest(SHA, 11, { fromFork: true })
    await reporter({ checks: false }).finish(verdict())
    expect(api.comments(11)).toEqual([])
    expect(infos.some((m) => m.includes('has no pull request of this repository'))).toBe(true)
    api.addPullRequest(SHA, 12, { merged: true })
    await reporter({ checks: false }).finish(verdict())
    expect(api.comments(11)).toEqual([])
    expect(api.comments(12)).toHaveLength(1)
  })

  it('a fork pull request gets nothing written at all', async () => {
    api.addPullRequest(SHA, 9, { fromFork: true })
    const r = reporter({ fromFork: true, pullRequest: 9, deploymentEnvironment: 'production' })
    await r.start()
    await r.finish(verdict())
    expect(api.requests).toEqual([])
  })
})

describe('deployment', () => {
  it('one per run and environment: in_progress, then success with the run as log_url', async () => {
    const r = reporter({ checks: false, comment: false, deploymentEnvironment: 'production' })
    await r.start()
    await r.finish(verdict())
    expect(api.deployments).toHaveLength(1)
    expect(api.deployments[0]).toMatchObject({ sha: SHA, environment: 'production' })
    expect(api.deployments[0]?.statuses.map((s) => s.state)).toEqual(['in_progress', 'success'])
    expect(api.deployments[0]?.statuses[1]?.log_url).toBe('https://github.example/acme/fleet/actions/runs/4242')
  })

  it('failure, and a 403 names deployments: write', async () => {
    await reporter({ checks: false, comment: false, deploymentEnvironment: 'production' }).finish(verdict({ conclusion: 'failure' }))
    expect(api.deployments[0]?.statuses.map((s) => s.state)).toEqual(['in_progress', 'failure'])
    api.fault({ operationId: 'repos/create-deployment', status: 403 })
    await reporter({ checks: false, comment: false, deploymentEnvironment: 'production' }).finish(verdict())
    expect(api.deployments).toHaveLength(1)
    expect(warnings[0]).toContain('`deployments: write`')
  })
})

describe('the loopback API', () => {
  it('refuses what GitHub would refuse, and says why', async () => {
    const client = createGitHubClient({ token: 't', baseUrl: api.url, sleep: async () => undefined, warn: () => undefined, retryBaseMs: 0, writeSpacingMs: 0 })
    const bad = client.request({ method: 'POST', url: '/repos/acme/fleet/check-runs', name: 'x', head_sha: SHA, status: 'done' })
    await expect(bad).rejects.toMatchObject({ status: 422 })
    const missing = client.request({ method: 'POST', url: `/repos/acme/fleet/statuses/${SHA}`, description: 'no state' })
    await expect(missing).rejects.toMatchObject({ status: 422 })
    const long = client.rest.repos.createCommitStatus({ owner: 'acme', repo: 'fleet', sha: SHA, state: 'success', description: 'x'.repeat(141) })
    await expect(long).rejects.toMatchObject({ status: 422 })
    const unknown = client.request('GET /repos/{owner}/{repo}/pulls', { owner: 'acme', repo: 'fleet' })
    await expect(unknown).rejects.toMatchObject({ status: 404 })
    const taken = api.takeViolations()
    expect(taken).toHaveLength(4)
    expect(taken[0]).toContain('checks/create')
    expect(taken[1]).toContain("required property 'state'")
    expect(taken[2]).toContain('140')
    expect(taken[3]).toContain('no such operation')
  })
})
