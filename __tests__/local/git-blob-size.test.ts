// Audit F8: a blob over the size limit is never read. The reader asks git for sizes first
// (`cat-file --batch-check`) and hands back only the size; a git wrapper records what was asked
// of `cat-file --batch`, so the test sees the big blobs were never requested.

import { chmod, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createGitReader } from '../../src/git/reader.ts'
import { parseManifestFile } from '../../src/core/manifest.ts'
import { createRepo } from '../../test/support/repo.ts'

vi.setConfig({ testTimeout: 60_000 })

const repo = createRepo()
afterAll(() => repo.cleanup())

describe('blobs over the limit', () => {
  it('three 3 MiB YAML files in one commit: each reported with its size, none read', async () => {
    const big = `a: "${'x'.repeat(3 * 1024 * 1024)}"\n`
    repo.write({ 'small.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n' })
    const base = repo.commit('base')
    repo.write({
      'big1.yaml': big,
      'big2.yaml': `${big}#2\n`,
      'big3.yaml': `${big}#3\n`,
      'small.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\n',
    })
    const head = repo.commit('huge files')
    const bigObjects = ['big1.yaml', 'big2.yaml', 'big3.yaml'].map((f) => repo.git('rev-parse', `${head}:${f}`))

    // A git that logs what `cat-file --batch` is asked for, then runs the real git.
    const log = join(repo.dir, '.git', 'batch-requests.log')
    const wrapper = join(repo.dir, '.git', 'git-logging')
    await writeFile(wrapper, `#!/bin/sh\nif [ "$1" = cat-file ] && [ "$2" = --batch ]; then tee -a "${log}" | git "$@"; else exec git "$@"; fi\n`)
    await chmod(wrapper, 0o755)
    await writeFile(log, '')

    const reader = await createGitReader({ cwd: repo.dir, git: wrapper })
    const all = (p: string) => p.endsWith('.yaml')
    const changes = await reader.changedFiles(base, head, all)
    const heads = await reader.headFiles(head, all)
    for (const file of ['big1.yaml', 'big2.yaml', 'big3.yaml']) {
      expect(changes.find((c) => c.path === file)?.after).toEqual({ type: 'oversized', size: expect.any(Number) })
      expect(heads.find((h) => h.path === file)?.content).toMatchObject({ type: 'oversized' })
    }
    expect(changes.find((c) => c.path === 'small.yaml')?.after).toMatchObject({ type: 'file' })
    const requested = await readFile(log, 'utf8')
    expect(requested).not.toBe('')
    for (const object of bigObjects) expect(requested).not.toContain(object)

    const content = heads.find((h) => h.path === 'big1.yaml')?.content
    expect(content && parseManifestFile('big1.yaml', content, { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true }).problems).toEqual(
      [{ severity: 'error', file: 'big1.yaml', message: 'file is larger than 1 MiB (3.0 MiB), skipped' }],
    )
  })
})
