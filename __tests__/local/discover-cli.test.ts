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

describe('discover --from-git and the plan of one commit (CLI)', () => {
  // A labelled ConfigMap and Secret that no HelmRelease reads or is named by, beside one that is read.
  const orphanFiles = {
    'apps/release.yaml': DISCOVER_RELEASE,
    'apps/read.yaml': discoverValues('app'),
    'apps/orphans.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: lonely-values
  namespace: apps
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
data:
  a: "1"
---
apiVersion: v1
kind: Secret
metadata:
  name: lonely-secret
  namespace: apps
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
stringData:
  password: hunter2
`,
  }

  it('report the same orphans, with the same wording, file and line', async () => {
    const repo = createRepo()
    try {
      repo.write({ 'apps/release.yaml': DISCOVER_RELEASE })
      const base = repo.commit('release')
      repo.write(orphanFiles)
      const head = repo.commit('orphans')
      const run = async (argv: string[]): Promise<unknown> => {
        let out = ''
        const io = { out: (t: string) => void (out += t), err: () => undefined, env: {}, cwd: repo.dir }
        await main(argv, io)
        return JSON.parse(out)
      }
      const orphan = (x: { message: string; file?: string; line?: number }) => x.message.includes('triggers no HelmRelease')
      const where = (x: { message: string; file?: string; line?: number }) => `${x.file}:${x.line}: ${x.message}`
      const { plan } = (await run(['plan', '--base', base, '--head', head, '--json'])) as {
        plan: { problems: { message: string; file: string; line?: number }[] }
      }
      const discover = (await run(['discover', '--from-git', '--json'])) as { findings: { message: string; file?: string; line?: number }[] }
      const planned = plan.problems.filter(orphan).map(where).sort()
      expect(planned).toEqual([
        "apps/orphans.yaml:11: Secret/apps/lonely-secret triggers no HelmRelease: name them in nebius.ai/helmreleases-name, or reference it from a HelmRelease's spec.valuesFrom",
        "apps/orphans.yaml:1: ConfigMap/apps/lonely-values triggers no HelmRelease: name them in nebius.ai/helmreleases-name, or reference it from a HelmRelease's spec.valuesFrom",
      ])
      expect(discover.findings.filter(orphan).map(where).sort()).toEqual(planned)
    } finally {
      repo.cleanup()
    }
  })
})
