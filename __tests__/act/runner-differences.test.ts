// What the act tests rely on when they compare act with GitHub's runner: a `::` inside a
// command's data makes act read another command than the runner does, and the check every act
// test makes on its run (misreadCommands) finds exactly such a line and no other.

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActRepo, runAct } from '../../test/support/act.ts'
import { startGitHubApi, type GitHubApi } from '../../test/support/github-api.ts'
import type { Repo } from '../../test/support/repo.ts'

let api: GitHubApi
let repo: Repo

beforeAll(async () => {
  api = await startGitHubApi()
  repo = createActRepo(api)
  repo.commit('empty')
})

afterAll(async () => {
  await api.close()
  repo.cleanup()
})

describe('act and GitHub’s runner on workflow commands', () => {
  it('read `::warning::data` alike, and differently once the data holds `::`', async () => {
    const workflow = join(repo.dir, 'print.yml')
    writeFileSync(
      workflow,
      [
        'on: push',
        'jobs:',
        '  print:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - run: |',
        '          echo "::warning::plain"',
        '          echo "::warning::split::here"',
        '',
      ].join('\n'),
    )
    const run = await runAct({ repo: repo.dir, workflow, event: 'push', payload: {}, api })
    expect(run.exitCode, run.text).toBe(0)
    // GitHub's runner: both are warnings. act: the second is a command named `warning::split`.
    expect(run.misreadCommands()).toEqual(['::warning::split::here (act: warning::split, runner: warning)'])
  })
})
