// The packed package (npm pack, as users install it) runs on every supported Node major, and an
// older Node gets one line instead of a crash inside a bundled dependency. Node 22 and 24 come
// from the node@<version> npm packages that scripts/setup.sh caches under ~/.cache.

import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { nodeVersionProblem } from '../../src/entry/node-version.ts'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 })

const VERSIONS: string[] = JSON.parse(readFileSync(join(REPO_ROOT, 'test/support/node-versions.json'), 'utf8'))
const nodeOf = (version: string): string => join(homedir(), '.cache/helmrelease-trigger/node', version, 'node_modules/.bin/node')

let packed: string
let repo: Repo
beforeAll(() => {
  packed = mkdtempSync(join(tmpdir(), 'hrt-pack-'))
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', packed], { cwd: REPO_ROOT, encoding: 'utf8' }).trim().split('\n').pop() ?? ''
  execFileSync('tar', ['-xzf', join(packed, tarball), '-C', packed])
  repo = createRepo()
  repo.write({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: apps}\ndata: {k: v}\n' })
  repo.commit('one')
})
afterAll(() => {
  rmSync(packed, { recursive: true, force: true })
  repo.cleanup()
})

function cli(node: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(node, [join(packed, 'package/dist/cli.js'), ...args], {
    cwd: repo.dir,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', HOME: repo.dir },
  })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('the packed CLI', () => {
  it.each(VERSIONS)('runs on Node %s: plan reads a real repository', (version) => {
    const node = nodeOf(version)
    expect(existsSync(node), `Node ${version} is not installed: run scripts/setup.sh`).toBe(true)
    const plan = cli(node, ['plan', '--json'])
    expect(plan.stderr).toBe('')
    expect(plan.status).toBe(0)
    expect(JSON.parse(plan.stdout)).toMatchObject({ plan: { head: repo.git('rev-parse', 'HEAD') } })
  })

  it("on the machine's older Node: one line, no bundle dump", () => {
    const system = (process.env['PATH'] ?? '')
      .split(delimiter)
      .filter((dir) => !dir.includes('node_modules'))
      .map((dir) => join(dir, 'node'))
      .find((file) => existsSync(file))
    expect(system).toBeDefined()
    const version = execFileSync(system ?? 'node', ['--version'], { encoding: 'utf8' }).trim()
    const problem = nodeVersionProblem(version)
    if (problem === undefined) return // this machine's Node is new enough: nothing to refuse here
    const run = cli(system ?? 'node', ['plan'])
    expect(run).toEqual({ status: 1, stdout: '', stderr: `helmrelease-trigger needs Node.js 22 or newer (found ${version})\n` })
  })

  it('engines says the same as the check', () => {
    const pkg: { engines: { node: string } } = JSON.parse(readFileSync(join(packed, 'package/package.json'), 'utf8'))
    expect(pkg.engines.node).toBe('>=22.19.0')
  })
})

describe('nodeVersionProblem', () => {
  it.each([
    ['v20.20.2', 'helmrelease-trigger needs Node.js 22 or newer (found v20.20.2)'],
    ['v18.19.0', 'helmrelease-trigger needs Node.js 22 or newer (found v18.19.0)'],
    ['v22.11.0', 'helmrelease-trigger needs Node.js 22.19 or newer (found v22.11.0)'],
    ['v22.19.0', undefined],
    ['v22.23.3', undefined],
    ['v24.0.0', undefined],
    ['v25.1.0', undefined],
  ])('%s', (version, expected) => {
    expect(nodeVersionProblem(version)).toBe(expected)
  })
})
