// Every output the action sets stays under GitHub's limit of 1 MB per output (a reusable
// workflow passes them on as job outputs) and stays valid JSON, saying what it cut: a pull request
// changing 5,000 labelled ConfigMaps, as the second audit's F7 left-over (a 2.3 MB `plan`).

import { afterAll, describe, expect, it } from 'vitest'
import { runAction } from '../../test/support/action.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo } from '../../test/support/repo.ts'

const repo = createRepo('hrt-outputs-')
afterAll(() => repo.cleanup())

/** 5,000 labelled ConfigMaps in 50 files, each naming the release `web`. */
function sources(level: number): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: 50 }, (_, f) => [
      `apps/bulk-${f}.yaml`,
      Array.from({ length: 100 }, (_, i) => triggerConfigMap({ name: `values-${f}-${i}`, namespace: 'apps', releases: 'web', values: `level: ${level}` })).join(
        '---\n',
      ),
    ]),
  )
}

describe('outputs under GitHub’s 1 MB limit', () => {
  it('a pull request of 5,000 changed sources: every output at most 1 MB, valid JSON, saying what it cut', async () => {
    repo.write(sources(1))
    const base = repo.commit('sources')
    repo.write(sources(2))
    const head = repo.commit('all of them')
    const run = await runAction({
      workspace: repo.dir,
      eventName: 'pull_request',
      event: { pull_request: { base: { sha: base, repo: { full_name: 'acme/fleet' } }, head: { sha: head, repo: { full_name: 'mallory/fleet' } } } },
      sha: head,
      inputs: {},
    })
    expect(run.exitCode, run.stderr).toBe(0)
    expect(Object.keys(run.outputs).sort()).toEqual(['diff', 'failed', 'plan', 'skipped', 'triggered'])
    for (const [name, value] of Object.entries(run.outputs)) {
      expect(Buffer.byteLength(value), name).toBeLessThanOrEqual(1_000_000)
      expect(() => JSON.parse(value), name).not.toThrow()
    }
    const plan = JSON.parse(run.outputs['plan'] ?? '') as { sources: unknown[]; truncated?: Record<string, number> }
    expect(plan.truncated?.['.sources']).toBeGreaterThan(0)
    expect(plan.sources.length - 1 + (plan.truncated?.['.sources'] ?? 0)).toBe(5_000)
    expect(plan.sources.at(-1)).toMatchObject({ truncated: plan.truncated?.['.sources'] })
  })
})
