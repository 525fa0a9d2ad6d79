// The fleet reports to GitHub once for every cluster: one check run on the commit and one
// sticky comment on its pull request, from the plan file and the clusters' result files, against
// the loopback API that validates every request against GitHub's REST description.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main, type CliIo } from '../../../src/entry/cli.ts'
import { controllerReason, Status } from '../../../src/engine/result.ts'
import { readPlanFile } from '../../../src/modes/fleet/fleet-plan.ts'
import { ClusterState, writeResultFile, type ClusterResult } from '../../../src/modes/fleet/fleet-result.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../../../test/support/fleet-repo.ts'
import { startGitHubApi, type GitHubApi } from '../../../test/support/github-api.ts'
import { kustomizeBinary } from '../../../test/support/kustomize.ts'
import { createRepo, type Repo } from '../../../test/support/repo.ts'
import { render } from '../../../test/support/markdown.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const specs: FleetClusterSpec[] = ['staging', 'prod-eu', 'prod-us'].map((name) => ({ name, namespace: 'apps', releases: ['web'] }))
let api: GitHubApi
let repo: Repo
let head: string
let kustomize: string
const dir = mkdtempSync(join(tmpdir(), 'hrt-fleet-github-'))

beforeAll(async () => {
  // The plan renders each cluster root: the pinned kustomize, not whatever is on PATH.
  kustomize = await kustomizeBinary()
  api = await startGitHubApi()
  repo = createRepo()
  repo.write(fleetRepoFiles(specs, () => 'one'))
  repo.commit('fleet')
  repo.write(fleetRepoFiles(specs, (c) => (c === 'prod-us' ? 'one' : 'two')))
  head = repo.commit('values')
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

function io(env: Record<string, string>): CliIo & { stdout: () => string } {
  const out: string[] = []
  return { out: (t) => void out.push(t), err: () => undefined, env, cwd: repo.dir, stdout: () => out.join('') }
}

/** What a cluster's matrix job leaves behind. */
function result(cluster: string, status: Status): ClusterResult {
  const failed = status === Status.Failed
  return {
    cluster,
    wave: 1,
    state: failed ? ClusterState.Failed : ClusterState.Succeeded,
    ...(failed ? { message: 'apps/web: Failed (UpgradeFailed)' } : {}),
    results: [
      {
        namespace: 'apps',
        name: 'web',
        sources: [],
        status,
        reason: controllerReason(failed ? 'UpgradeFailed' : 'UpgradeSucceeded'),
        message: failed ? 'Helm upgrade failed' : 'upgraded',
        durationMs: 900,
        severity: failed ? 'error' : 'none',
      },
    ],
    sources: [],
    problems: [],
    durationMs: 1000,
  }
}

describe('fleet-summary with a GitHub token', () => {
  it('writes one check for the fleet and one sticky comment on the pull request, naming every cluster', async () => {
    api.addPullRequest(head, 7)
    const planFile = join(dir, 'fleet-plan.json')
    expect(await main(['plan', '--clusters', 'discover', '--plan', planFile, '--kustomize-path', kustomize], io({}))).toBe(0)
    expect(readPlanFile(readFileSync(planFile, 'utf8'), planFile).range.head).toBe(head)
    const results = join(dir, 'results')
    mkdirSync(results)
    writeFileSync(join(results, 'result-staging.json'), writeResultFile(result('staging', Status.Upgraded)))
    writeFileSync(join(results, 'result-prod-eu.json'), writeResultFile(result('prod-eu', Status.Failed)))
    const env = { GITHUB_TOKEN: 'ghp_fleet', GITHUB_REPOSITORY: 'acme/fleet', GITHUB_API_URL: api.url }
    const run = io(env)
    expect(await main(['fleet-summary', '--plan', planFile, '--results', results, '--head', head, '--github-report', 'check,comment'], run)).toBe(1)

    expect(api.checkRuns).toHaveLength(1)
    const check = api.checkRuns[0]
    expect(check).toMatchObject({
      head_sha: head,
      name: 'helmrelease-trigger',
      conclusion: 'failure',
      output: { title: '2 of 3 clusters with work; 1 succeeded, 1 failed' },
    })
    expect(render(String(check?.output?.summary)).tables[0]?.rows).toContainEqual([
      'prod-eu',
      '1',
      'apps/web',
      '❌ Failed (UpgradeFailed)',
      '900ms',
      'Helm upgrade failed',
    ])
    const comments = api.comments(7)
    expect(comments).toHaveLength(1)
    const body = comments[0]?.body ?? ''
    expect(body).toContain('helmrelease-trigger fleet: 2 of 3 clusters with work; 1 succeeded, 1 failed')
    const rows = render(body).tables.flatMap((t) => t.rows.map((r) => r.slice(0, 4)))
    expect(rows).toContainEqual(['staging', '1', 'apps/web', '✅ Upgraded (UpgradeSucceeded)'])
    expect(rows).toContainEqual(['prod-us', '1', '—', '➖ NoWork'])

    // The next commit's fleet updates the same comment instead of adding one.
    expect(await main(['fleet-summary', '--plan', planFile, '--results', results, '--head', head, '--github-report', 'comment'], io(env))).toBe(1)
    expect(api.comments(7)).toHaveLength(1)
  })
})
