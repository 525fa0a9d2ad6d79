// Audit F7: one file of a fork's pull request (990 KB of duplicate keys) gave 110,000 problems,
// annotations, a 6.6 MB summary and 11 MB of outputs. Problems are now capped per file and per
// run, each cap saying how many were left out, so the summary and outputs stay bounded.

import { describe, expect, it } from 'vitest'
import { parseManifestFile } from '../../../src/core/manifest.ts'
import { capProblems, MAX_PROBLEMS_PER_FILE, MAX_PROBLEMS_PER_RUN } from '../../../src/core/problem-caps.ts'
import { parseSettings } from '../../../src/settings.ts'
import { runTrigger } from '../../../src/modes/trigger/pipeline.ts'
import { outputsOf, summaryMarkdown } from '../../../src/modes/trigger/report.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../test/support/fakes.ts'
import { clusterRefused } from '../../../src/github/policy.ts'

const options = { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true }
const bytes = (text: string) => ({ type: 'file' as const, bytes: new TextEncoder().encode(text) })

/** The audit's file: ~990 KB, one document per duplicate-key pair, each a problem of its own. */
const duplicateKeys = (docs: number) => Array.from({ length: docs }, (_, i) => `a${i}: 1\na${i}: 2\n`).join('---\n')

describe('problem caps', () => {
  it('one file: the first 50 problems and one "…and N more"', () => {
    const file = duplicateKeys(40_000)
    expect(file.length).toBeGreaterThan(500_000)
    const { problems } = parseManifestFile('big.yaml', bytes(file), options)
    expect(problems).toHaveLength(MAX_PROBLEMS_PER_FILE + 1)
    expect(problems.at(-1)).toEqual({
      severity: 'error',
      file: 'big.yaml',
      line: problems[50 - 1] === undefined ? undefined : expect.any(Number),
      message: `…and ${40_000 - 50} more problems in this file (the first 50 are shown)`,
    })
  })

  it('a run: at most 500 problems and one "…and N more" with the worst severity left out', () => {
    const many = Array.from({ length: 700 }, (_, i) => ({ severity: i === 650 ? ('error' as const) : ('warning' as const), file: `f${i}.yaml`, message: 'x' }))
    const capped = capProblems(many, MAX_PROBLEMS_PER_RUN, 'run')
    expect(capped).toHaveLength(501)
    expect(capped.at(-1)).toMatchObject({ severity: 'error', file: 'f500.yaml', message: '…and 200 more problems in 200 files (the first 500 are shown)' })
  })

  it('the audit reproducer through the engine: summary under 1 MiB, outputs bounded and valid JSON', async () => {
    const files = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}.yaml`, duplicateKeys(2_000)]))
    const git = new FakeGit().commit('a', undefined, {}).commit('b', 'a', files)
    const event = { pull_request: { base: { sha: 'a' }, head: { sha: 'b' }, fromFork: true } }
    const report = await runTrigger(
      parseSettings(() => ''),
      { eventName: 'pull_request', event, sha: 'b', runUrl: undefined, refused: clusterRefused('pull_request', event, false) },
      { git, connect: async () => new FakeCluster(), clock: new FakeClock(), log: { info: () => undefined, warning: () => undefined } },
    )
    expect(report.problems).toHaveLength(MAX_PROBLEMS_PER_RUN + 1)
    expect(report.problems.at(-1)?.message).toMatch(/^…and \d+ more problems in \d+ files \(the first 500 are shown\)$/)
    expect(Buffer.byteLength(summaryMarkdown(report))).toBeLessThan(1024 * 1024)
    const plan = JSON.stringify(outputsOf(report).plan)
    expect(Buffer.byteLength(plan)).toBeLessThan(1024 * 1024)
    expect(JSON.parse(plan)).toMatchObject({ problems: expect.any(Array) })
  })
})
