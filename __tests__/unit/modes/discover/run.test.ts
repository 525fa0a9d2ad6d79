// discover: labelAction, and runDiscover in the cluster and --from-git against fakes.
import { describe, expect, it } from 'vitest'
import { DISCOVER_RELEASE, discoverValues } from '../../../../test/support/manifests.ts'
import { labelAction, runDiscover } from '../../../../src/modes/discover/run.ts'
import { discoverFailure, discoverSummary } from '../../../../src/modes/discover/report.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { parseSettings } from '../../../../src/settings.ts'
import { FakeCluster, FakeGit } from '../../../../test/support/fakes.ts'
import { release, renderedSource, repo } from '../../../../test/support/rendered.ts'
import type { RenderCommit } from '../../../../src/modes/discover/run.ts'
import { planRendered } from '../../../../src/core/plan-rendered.ts'

const keys = keysFor('nebius.ai')
const LABEL = 'nebius.ai/helmrelease-trigger-operator'
const base = parseSettings(() => '')
const log = { info: () => undefined, warning: () => undefined }
const noGit = async () => Promise.reject(new Error('no git'))
const valuesFrom = (...names: string[]) => ({ valuesFrom: names.map((name) => ({ kind: 'ConfigMap', name })) })

describe('labelAction', () => {
  const hr = (spec: Record<string, unknown>, labels: Record<string, string> = {}) => toHelmRelease({ metadata: { namespace: 'a', name: 'r', labels }, spec })
  it('labels releases that use valuesFrom and unlabels only ours when they stop', () => {
    expect(labelAction(hr(valuesFrom('x')), keys)).toBe('add')
    expect(labelAction(hr(valuesFrom('x'), { [LABEL]: 'true' }), keys)).toBeUndefined()
    expect(labelAction(hr(valuesFrom('x'), { [LABEL]: 'false' }), keys)).toBe('add')
    expect(labelAction(hr({}, { [LABEL]: 'true', team: 'x' }), keys)).toBe('remove')
    expect(labelAction(hr({}, { team: 'x' }), keys)).toBeUndefined()
  })
})

describe('runDiscover against the fake cluster', () => {
  it('labels, unlabels with a null merge patch, and finds every kind of problem', async () => {
    const cluster = new FakeCluster()
      .addRelease('apps', 'reads', valuesFrom('covered', 'plain', 'gone'))
      .addRelease('apps', 'optional', { valuesFrom: [{ kind: 'Secret', name: 'maybe', optional: true }] }, { labels: { [LABEL]: 'true' } })
      .addRelease('apps', 'stopped', {}, { labels: { [LABEL]: 'true', team: 'web' } })
      .addRelease('flux-system', 'elsewhere', {})
      .setSource(
        { kind: 'ConfigMap', namespace: 'apps', name: 'covered' },
        {},
        { [LABEL]: 'true' },
        { 'nebius.ai/helmreleases-name': 'reads, nope', 'nebius.ai/helmreleases-namespace': 'apps' },
      )
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'plain' }, {})
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'cross' }, {}, { [LABEL]: 'true' }, { 'nebius.ai/helmreleases-name': 'elsewhere' })
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'misnamed' }, {}, { [LABEL]: 'true' }, { 'nebius.ai/helmreleases-name': 'reads' })
    const report = await runDiscover(base, 'HEAD', { git: noGit, connect: async () => cluster, log })
    expect(report.labels.map((l) => `${l.name}:${l.action}:${l.status}`).sort()).toEqual(['reads:add:done', 'stopped:remove:done'])
    expect(cluster.release('apps', 'reads').labels).toEqual({ [LABEL]: 'true' })
    expect(cluster.release('apps', 'stopped').labels).toEqual({ team: 'web' })
    expect(cluster.patches.find((p) => p.ref.name === 'stopped')?.patch.labels).toEqual({ [LABEL]: null })
    const codes = report.findings.map((f) => `${f.severity}:${f.code}:${f.source ?? ''}:${f.release ?? ''}`).sort()
    expect(codes).toEqual([
      'error:MissingRelease:ConfigMap/apps/covered:apps/nope',
      'error:MissingRelease:ConfigMap/apps/misnamed:flux-system/reads',
      'error:MissingSource:ConfigMap/apps/gone:apps/reads',
      'notice:MissingSource:Secret/apps/maybe:apps/optional',
      'warning:CrossNamespaceUnread:ConfigMap/apps/cross:flux-system/elsewhere',
      'warning:UncoveredSource:ConfigMap/apps/plain:',
    ])
    expect(report.findings.find((f) => f.source === 'ConfigMap/apps/misnamed')?.message).toContain(
      'HelmRelease apps/reads exists: set nebius.ai/helmreleases-namespace: apps',
    )
    expect(discoverFailure(report, 'error')).toMatch(/^3 problems/)
    expect(discoverFailure(report, 'never')).toBeUndefined()
    expect(discoverSummary(report)).toContain('| ❌ | MissingRelease |')
  })

  it('changes nothing on a dry run', async () => {
    const cluster = new FakeCluster().addRelease('apps', 'reads', valuesFrom('x'))
    const report = await runDiscover({ ...base, dryRun: true }, 'HEAD', { git: noGit, connect: async () => cluster, log })
    expect(report.labels).toEqual([expect.objectContaining({ status: 'dry-run' })])
    expect(cluster.release('apps', 'reads').labels).toEqual({})
  })
})

describe('runDiscover --from-git', () => {
  it('passes a correct repository and points at the line of a mistaken annotation', async () => {
    const git = new FakeGit()
      .commit('good', undefined, { 'apps/release.yaml': DISCOVER_RELEASE, 'apps/values.yaml': discoverValues('app') })
      .commit('bad', 'good', { 'apps/release.yaml': DISCOVER_RELEASE, 'apps/values.yaml': discoverValues('ap') })
    const deps = { git: async () => git, connect: () => Promise.reject(new Error('no cluster from git')), log }
    const good = await runDiscover({ ...base, fromGit: true }, 'good', deps)
    expect(good.findings).toEqual([])
    expect(discoverFailure(good, 'error')).toBeUndefined()
    const bad = await runDiscover({ ...base, fromGit: true }, 'bad', deps)
    expect(bad.findings).toEqual([expect.objectContaining({ severity: 'error', code: 'MissingRelease', file: 'apps/values.yaml', line: 10 })])
    expect(discoverFailure(bad, 'error')).toContain('apps/values.yaml:10: ConfigMap/apps/app-values: nebius.ai/helmreleases-name names HelmRelease apps/ap')
  })

  it('reports sources missing from the repository as warnings and manifest problems with their line', async () => {
    const git = new FakeGit().commit('c', undefined, {
      'apps/release.yaml': DISCOVER_RELEASE,
      'apps/broken.yaml': 'kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: x\ndata:\n  port: 5432\n',
    })
    const report = await runDiscover({ ...base, fromGit: true }, 'c', { git: async () => git, connect: () => Promise.reject(new Error('no')), log })
    expect(report.findings.map((f) => `${f.severity}:${f.code}:${f.file}:${f.line}`)).toEqual([
      'error:InvalidManifest:apps/broken.yaml:6',
      'warning:MissingSource:apps/release.yaml:1',
    ])
  })

  it('lints the rendered objects where Flux Kustomizations apply the repository: a generated source is no missing one', async () => {
    const git = new FakeGit().commit('c', undefined, {
      // The file-by-file view sees no ConfigMap named app-values-5tb6k2hm4f: only the generator does.
      'apps/app/release.yaml':
        'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: apps\nspec:\n  valuesFrom:\n    - kind: ConfigMap\n      name: app-values\n',
    })
    const generated = renderedSource({ name: 'app-values-5tb6k2hm4f', data: { 'values.yaml': 'a: 1' }, labels: { [LABEL]: 'true' } })
    const reads = (name: string) => release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name }] })
    const render =
      (objects: Parameters<typeof repo>[0], extra: Parameters<typeof repo>[1] = {}): RenderCommit =>
      async () =>
        repo(objects, extra)
    const deps = { git: async () => git, connect: () => Promise.reject(new Error('no')), log }
    const files = await runDiscover({ ...base, fromGit: true }, 'c', deps)
    expect(files.findings.map((f) => f.code)).toEqual(['MissingSource'])
    const rendered = await runDiscover({ ...base, fromGit: true }, 'c', { ...deps, render: render([generated, reads('app-values-5tb6k2hm4f')]) })
    expect(rendered.findings).toEqual([])
    expect(rendered.releases).toBe(1)
    // A Kustomization that failed to render may hold the source: reported itself, no "missing" guess.
    const failed = await runDiscover({ ...base, fromGit: true }, 'c', {
      ...deps,
      render: render([reads('other-values')], { problems: [{ kustomization: 'flux-system/apps', path: 'apps', message: 'kustomize build failed' }] }),
    })
    expect(failed.findings.map((f) => `${f.severity}:${f.code}:${f.file}`)).toEqual(['error:InvalidManifest:apps'])
    // No Flux Kustomization: the files, one by one.
    const none = await runDiscover({ ...base, fromGit: true }, 'c', { ...deps, render: render([], { kustomizations: [] }) })
    expect(none.findings.map((f) => f.code)).toEqual(['MissingSource'])
  })
  it('says of a rendered labelled source nothing reads what the rendered plan says, at the same file and line', async () => {
    const values = (a: string) =>
      renderedSource({
        name: 'lonely',
        data: { 'values.yaml': a },
        labels: { [LABEL]: 'true' },
        keyOrigins: { 'values.yaml': { file: 'apps/lonely/values.yaml', line: 1 } },
      })
    const reader = release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'other' }] })
    const options = { ...base, prefix: 'nebius.ai', discover: true, paths: ['**/*.yaml'] }
    const planned = planRendered({ base: repo([values('a: 1'), reader]), head: repo([values('a: 2'), reader]), fullSync: false, options })
    const render: RenderCommit = async () => repo([values('a: 2'), reader])
    const git = new FakeGit().commit('c', undefined, { 'apps/app/release.yaml': 'kind: ConfigMap\n' })
    const found = await runDiscover({ ...base, fromGit: true }, 'c', { git: async () => git, render, connect: () => Promise.reject(new Error('no')), log })
    const orphans = (xs: readonly { message: string; file?: string; line?: number }[]) =>
      xs.filter((x) => x.message.includes('triggers no HelmRelease')).map((x) => `${x.file}:${x.line}: ${x.message}`)
    expect(orphans(planned.problems)).toEqual([
      "apps/lonely/kustomization.yaml:4: ConfigMap/apps/lonely triggers no HelmRelease: name them in nebius.ai/helmreleases-name, or reference it from a HelmRelease's spec.valuesFrom",
    ])
    expect(orphans(found.findings)).toEqual(orphans(planned.problems))
  })
})
