// The import rules of `npm run lint`: the layer direction (scripts/lint/layers.mjs, an ESLint
// rule) refuses a wrong-way import and accepts the allowed ones, and the cycle check
// (scripts/lint/cycles.mjs) finds a circular import, type imports included.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ESLint } from 'eslint'
import { afterAll, describe, expect, it } from 'vitest'
import { findCycles, importGraph } from '../../scripts/lint/cycles.mjs'

const root = join(import.meta.dirname, '..', '..')
const eslint = new ESLint({ cwd: root })

/** The layer rule's messages for `code` saved as `file` (nothing is written: ESLint lints the text). */
async function layerMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) })
  return (result?.messages ?? []).filter((m) => m.ruleId === 'layers/direction').map((m) => m.message)
}

describe('the layer rule', () => {
  it.each([
    ['src/lib/bad.ts', "import { keysFor } from '../core/keys.ts'\nexport const k = keysFor", 'lib may not import core'],
    ['src/core/bad.ts', "import type { Clock } from '../engine/ports.ts'\nexport type C = Clock", 'core may not import engine'],
    ['src/core/bad.ts', "import type { Settings } from '../settings.ts'\nexport type S = Settings", 'core may not import settings'],
    ['src/kube/bad.ts', "export { systemClock } from '../engine/ports.ts'", 'kube may not import engine'],
    ['src/git/bad.ts', "import type { Settings } from '../settings.ts'\nexport type S = Settings", 'git may not import settings'],
    ['src/render/bad.ts', "import type { ClusterClient } from '../kube/cluster.ts'\nexport type C = ClusterClient", 'render may not import kube'],
    ['src/engine/bad.ts', "import { runTrigger } from '../modes/trigger/pipeline.ts'\nexport const r = runTrigger", 'engine may not import modes/trigger'],
    ['src/modes/drift/bad.ts', "export const m = () => import('../trigger/action.ts')", 'modes/drift may not import modes/trigger'],
    ['src/modes/recover/bad.ts', "import { run } from '../../entry/action.ts'\nexport const r = run", 'modes/recover may not import entry'],
  ])('refuses %s importing the wrong way (%s)', async (file, code, message) => {
    const messages = await layerMessages(file, code)
    expect(messages).toHaveLength(1)
    expect(messages[0]).toContain(message)
  })

  it.each([
    ['src/core/ok.ts', "import { ConfigurationError } from '../lib/errors.ts'\nexport const e = ConfigurationError"],
    ['src/kube/ok.ts', "import type { HelmRelease } from '../core/helmrelease.ts'\nexport type H = HelmRelease"],
    ['src/render/ok.ts', "import type { GitReader } from '../git/reader.ts'\nexport type G = GitReader"],
    ['src/engine/ok.ts', "import type { ClusterClient } from '../kube/cluster.ts'\nexport type C = ClusterClient"],
    ['src/modes/drift/ok.ts', "import { newToken } from '../../engine/tokens.ts'\nexport const t = newToken"],
    ['src/modes/watch/ok.ts', "import { decide } from '../trigger/action.ts'\nexport const d = decide"],
    ['src/entry/ok.ts', "import { runTrigger } from '../modes/trigger/pipeline.ts'\nexport const r = runTrigger"],
  ])('accepts %s', async (file, code) => {
    expect(await layerMessages(file, code)).toEqual([])
  })
})

describe('the cycle check', () => {
  const dirs: string[] = []
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })

  async function tree(files: Record<string, string>): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'hrt-cycles-'))
    dirs.push(dir)
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true })
      await writeFile(join(dir, path), text)
    }
    return dir
  }

  it('finds a cycle made of a type import and a value import, and names its files in order', async () => {
    const dir = await tree({
      'a/one.ts': "import type { Two } from '../b/two.ts'\nexport type One = Two\n",
      'b/two.ts': "import { three } from './three.ts'\nexport type Two = string\nexport const t = three\n",
      'b/three.ts': "import type { One } from '../a/one.ts'\nexport const three: One = ''\n",
      'c/free.ts': "import type { One } from '../a/one.ts'\nexport type F = One\n",
    })
    const cycles = findCycles(importGraph(dir)).map((cycle) => cycle.map((f) => f.slice(dir.length + 1)))
    expect(cycles).toEqual([['a/one.ts', 'b/two.ts', 'b/three.ts', 'a/one.ts']])
  })

  it('finds none in src/', () => {
    expect(findCycles(importGraph(join(root, 'src')))).toEqual([])
  })
})
