// The npm package is what `npx helmrelease-trigger` runs: packed, installed with no network
// and no dependencies to fetch (the bundle inlines them, the renderer ships in it), its bin must
// work, and plan a Flux repository with no kustomize on the machine.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { bootstrapText, repositoryKustomization } from '../../test/support/flux.ts'
import { createRepo } from '../../test/support/repo.ts'

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
      'dist/renderer.wasm.br',
      'dist/sandbox-worker.js',
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

    // A Flux repository planned as Flux applies it, by the installed package alone: PATH holds git and node only.
    const repo = createRepo('hrt-pack-repo-')
    try {
      repo.write({
        'clusters/prod/flux-system/gotk-sync.yaml': bootstrapText('https://github.com/acme/fleet', './clusters/prod'),
        'clusters/prod/apps.yaml': repositoryKustomization('apps', './apps', { targetNamespace: 'web' }),
        'apps/kustomization.yaml':
          'resources: [release.yaml]\nconfigMapGenerator: [{name: web-values, files: [values.yaml], options: {disableNameSuffixHash: true}}]\n',
        'apps/release.yaml':
          'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web}\nspec:\n  valuesFrom: [{kind: ConfigMap, name: web-values}]\n',
        'apps/values.yaml': 'replicas: 1\n',
      })
      const base = repo.commit('fleet')
      repo.write({ 'apps/values.yaml': 'replicas: 2\n' })
      const head = repo.commit('two replicas')
      const path = [join(process.execPath, '..'), '/usr/bin', '/bin'].join(':')
      const plan = execFileSync(
        join(app, 'node_modules', '.bin', 'helmrelease-trigger'),
        ['plan', '--base', base, '--head', head, '--github-repository', 'acme/fleet', '--json'],
        { cwd: repo.dir, encoding: 'utf8', env: { PATH: path, HOME: scratch } },
      )
      const releases = (JSON.parse(plan) as { plan: { releases: { namespace: string; name: string }[] } }).plan.releases
      expect(releases.map((r) => `${r.namespace}/${r.name}`)).toEqual(['web/web'])
    } finally {
      repo.cleanup()
    }
  }, 120_000)
})
