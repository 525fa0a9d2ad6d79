// The npm package is what `npx helmrelease-trigger` runs: packed, installed with no network
// and no dependencies to fetch (the bundle inlines them), its bin must work.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const scratch = mkdtempSync(join(tmpdir(), 'hrt-pack-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const npm = (args: string[], cwd: string): string =>
  execFileSync('npm', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
  })

describe('the npm package', () => {
  it('installs offline from its tarball and runs the CLI through its bin', () => {
    const packed: unknown = JSON.parse(npm(['pack', '--json', '--pack-destination', scratch], root))
    const [info] = packed as { filename: string; files: { path: string }[] }[]
    const files = (info?.files ?? []).map((f) => f.path).sort()
    expect(files).toEqual([
      'LICENSE',
      'README.md',
      'action.yml',
      'dist/THIRD-PARTY-NOTICES.txt',
      'dist/cli.js',
      'dist/index.js',
      'dist/parse-worker.js',
      'package.json',
    ])

    const app = join(scratch, 'app')
    mkdirSync(app)
    writeFileSync(join(app, 'package.json'), '{"name":"consumer","private":true}\n')
    npm(['install', '--offline', '--no-save', join(scratch, info?.filename ?? '')], app)
    const help = execFileSync(join(app, 'node_modules', '.bin', 'helmrelease-trigger'), ['--help'], { encoding: 'utf8' })
    expect(help).toMatch(/^Usage: helmrelease-trigger /)
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules', 'helmrelease-trigger', 'package.json'), 'utf8')) as { engines?: { node?: string } }
    expect(manifest.engines?.node).toBe('>=22.19.0')
  }, 120_000)
})
