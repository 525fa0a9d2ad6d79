// discover --from-git through the CLI, on a real repository with real commits (no cluster).
import { describe, expect, it } from 'vitest'
import { DISCOVER_RELEASE, discoverValues } from '../../test/support/manifests.ts'
import { main } from '../../src/entry/cli.ts'
import { createRepo } from '../../test/support/repo.ts'

describe('helmrelease-trigger discover --from-git (CLI)', () => {
  it('exits 1 on an error finding and names the file and line, 0 once fixed', async () => {
    const repo = createRepo()
    try {
      repo.write({ 'apps/release.yaml': DISCOVER_RELEASE, 'apps/values.yaml': discoverValues('ap') })
      repo.commit('typo')
      let out = ''
      let err = ''
      const io = { out: (t: string) => void (out += t), err: (t: string) => void (err += t), env: {}, cwd: repo.dir }
      expect(await main(['discover', '--from-git'], io)).toBe(1)
      expect(out).toContain('error: MissingRelease: apps/values.yaml:10:')
      expect(err).toContain('1 problem (fail-on: error)')
      repo.write({ 'apps/values.yaml': discoverValues('app') })
      repo.commit('fix')
      expect(await main(['discover', '--from-git', '--json'], io)).toBe(0)
    } finally {
      repo.cleanup()
    }
  })
})
