// The examples that run on a pull request, unmodified, under a real Actions runner (act): the plan
// job plans without a cluster, writes its job summary and outputs, comments the plan on the pull
// request and leaves a neutral check through the loopback GitHub API; the discover example lints
// the repository from git alone and fails on a warning with an annotation on the file.

import { join } from 'node:path'
import { cell } from '../../src/lib/text.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActRepo, pullRequestEvent, runAct } from '../../test/support/act.ts'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import type { Repo } from '../../test/support/repo.ts'
import { workflowCommands } from '../../test/support/workflow-commands.ts'

let api: GitHubApi
let repo: Repo
let base: string
let head: string

const values = (tag: string): string => triggerConfigMap({ name: 'web-values', namespace: 'apps', releases: 'web', values: `image:\n  tag: "${tag}"` })

beforeAll(async () => {
  api = await startGitHubApi()
  repo = createActRepo(api)
  repo.write({ 'apps/values.yaml': values('1.0') })
  base = repo.commit('values')
  repo.write({ 'apps/values.yaml': values('1.1') })
  head = repo.commit('bump the tag')
  api.addPullRequest(head, 7)
})

afterAll(async () => {
  expect(api.violations).toEqual([])
  await api.close()
  repo.cleanup()
})

describe('examples/pull-request-plan.yml under act', () => {
  it('plans the pull request: outputs, job summary, the comment and a neutral check, no cluster', async () => {
    const run = await runAct({
      repo: repo.dir,
      workflow: join(REPO_ROOT, 'examples', 'pull-request-plan.yml'),
      event: 'pull_request',
      payload: pullRequestEvent(api, 7, base, head),
      api,
    })
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).toBe(0)
    expect(run.jobResults('plan')).toEqual(['success'])

    const outputs = run.stepOutputs('plan', 'plan')
    const plan = JSON.parse(outputs['plan'] ?? '{}') as { base: string; head: string; releases: { namespace: string; name: string }[] }
    expect(plan).toMatchObject({ base, head, releases: [{ namespace: 'apps', name: 'web' }] })
    expect(JSON.parse(outputs['skipped'] ?? '[]')).toEqual([expect.objectContaining({ namespace: 'apps', name: 'web', reason: 'PlanOnly' })])
    // The example's own step read the plan output and printed it as JSON lines.
    expect(run.output('plan')).toContain('{"release":"apps/web","sources":["ConfigMap/apps/web-values"]}')

    const [summary] = run.summaries('plan')
    expect(summary).toContain('## helmrelease-trigger: plan: 1 release would be triggered')
    expect(summary).toContain('📝 Planned (PlanOnly)')

    const comments = api.comments(7)
    expect(comments).toHaveLength(1)
    expect(comments[0]?.body).toContain(cell('plan: 1 release would be triggered'))
    expect(api.checkRuns).toEqual([expect.objectContaining({ head_sha: head, conclusion: 'neutral' })])
    // Every request carried the job's token.
    expect(api.requests.length).toBeGreaterThan(0)
    // No workflow command but the ones the action means: groups and no error.
    expect(workflowCommands(run.output('plan')).filter((c) => c.name === 'error')).toEqual([])
  })
})

describe('examples/discover.yml under act', () => {
  it('on a pull request runs the lint job only, from git alone, and fails with an annotation on the file', async () => {
    const run = await runAct({
      repo: repo.dir,
      workflow: join(REPO_ROOT, 'examples', 'discover.yml'),
      event: 'pull_request',
      payload: pullRequestEvent(api, 7, base, head),
      api,
    })
    // The labelled ConfigMap names apps/web, which no manifest of the repository defines.
    expect(run.misreadCommands()).toEqual([])
    expect(run.exitCode, run.text).not.toBe(0)
    // act reports no result for a job whose `if:` is false (the scheduled label job): only lint ran.
    expect(run.jobIds()).toEqual(['lint'])
    expect(run.jobResults('lint')).toEqual(['failure'])
    // act names a step without an id by its index from 0: the action is step 1.
    const findings = JSON.parse(run.stepOutputs('lint', '1')['findings'] ?? '[]') as unknown[]
    expect(findings).toEqual([expect.objectContaining({ code: 'MissingRelease', file: 'apps/values.yaml', release: 'apps/web' })])
    const errors = workflowCommands(run.output('lint')).filter((c) => c.name === 'error')
    expect(errors.map((c) => c.line)).toEqual([
      expect.stringMatching(/^::error title=helmrelease-trigger MissingRelease,file=apps\/values\.yaml,line=\d+::ConfigMap\/apps\/web-values: /),
      expect.stringMatching(/^::error::1 problem \(fail-on: warning\)/),
    ])
    expect(run.summaries('lint').join('\n')).toContain('| ❌ | MissingRelease | <code>apps/values.yaml&#58;')
  })
})
