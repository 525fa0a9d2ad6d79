// The plan on rendered objects: hand-built base and head repositories (no kustomize) → the
// sources whose read keys changed, the releases they trigger, spec changes, provenance, problems.

import { describe, expect, it } from 'vitest'
import { changedFields, planRendered, renderedReleaseKeys, specHolds } from '../../../src/core/plan-rendered.ts'
import type { Provenance, RenderedObject, RenderedRepository } from '../../../src/core/rendered.ts'
import type { Plan } from '../../../src/core/model.ts'
import { ociRepository, release, renderedSource as source, repo, type ReleaseSpec, type SourceSpec } from '../../../test/support/rendered.ts'
import { chartChange } from '../../../test/support/reports.ts'

const options = { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, crossNamespaceTargets: [] as readonly string[] }
const b64 = (text: string): string => Buffer.from(text).toString('base64')

function plan(
  base: readonly RenderedObject[],
  head: readonly RenderedObject[],
  more: { fullSync?: boolean; discover?: boolean; head?: Partial<RenderedRepository> } = {},
): Plan {
  return planRendered({
    base: repo(base),
    head: repo(head, more.head),
    fullSync: more.fullSync ?? false,
    options: { ...options, discover: more.discover ?? true },
  })
}

const triggered = (p: Plan): string[] => p.releases.filter((r) => r.sources.length > 0).map((r) => `${r.namespace}/${r.name}`)
const specChanged = (p: Plan): string[] => p.releases.filter((r) => r.spec !== undefined).map((r) => `${r.namespace}/${r.name}`)

const valuesOrigin = (name: string): Record<string, Provenance> => ({ 'values.yaml': { file: `apps/${name}/values.yaml`, line: 1 } })
const generated = (name: string, values: string, more: Partial<SourceSpec> = {}): RenderedObject =>
  source({ name: `${name}-values`, data: { 'values.yaml': values }, keyOrigins: valuesOrigin(name), ...more })
const reader = (name: string, more: Partial<ReleaseSpec> = {}): RenderedObject =>
  release({ name, valuesFrom: [{ kind: 'ConfigMap', name: `${name}-values` }], ...more })

describe('planRendered: which releases a changed source triggers', () => {
  it('a generated values ConfigMap triggers the release reading it, at the edited line of values.yaml', () => {
    const p = plan(
      [generated('atuin', 'replicas: 1\nimage:\n  tag: v1\n'), reader('atuin')],
      [generated('atuin', 'replicas: 1\nimage:\n  tag: v2\n'), reader('atuin')],
    )
    expect(triggered(p)).toEqual(['apps/atuin'])
    expect(specChanged(p)).toEqual([])
    const [s] = p.sources
    expect(s).toMatchObject({ id: 'ConfigMap/apps/atuin-values', change: 'modified', origin: { file: 'apps/atuin/values.yaml', line: 3 } })
    expect(s?.targets).toEqual([{ namespace: 'apps', name: 'atuin', reasons: ['valuesFrom'] }])
    expect(s?.edits).toEqual([{ key: 'values.yaml', file: 'apps/atuin/values.yaml', line: 3 }])
    expect(p.releases[0]?.sources[0]?.origin).toEqual({ file: 'apps/atuin/values.yaml', line: 3 })
    expect(p.problems).toEqual([])
  })

  it('a change to a key the release does not read triggers nothing, and says so', () => {
    const before = source({ name: 'app-values', data: { 'values.yaml': 'a: 1\n', 'other.yaml': 'x: 1\n' } })
    const after = source({ name: 'app-values', data: { 'values.yaml': 'a: 1\n', 'other.yaml': 'x: 2\n' } })
    const p = plan([before, reader('app')], [after, reader('app')])
    expect(p.releases).toEqual([])
    expect(p.sources.map((s) => s.targets)).toEqual([[]])
    expect(p.problems).toEqual([
      expect.objectContaining({
        severity: 'notice',
        message: 'ConfigMap/apps/app-values changed only keys no HelmRelease reads (other.yaml); nothing to trigger',
      }),
    ])
  })

  it('valuesKey picks the key: only a change there triggers', () => {
    const rel = release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'cfg', valuesKey: 'prod.yaml' }] })
    const cm = (prod: string, values: string) => source({ name: 'cfg', data: { 'prod.yaml': prod, 'values.yaml': values } })
    expect(triggered(plan([cm('a: 1', 'b: 1'), rel], [cm('a: 1', 'b: 2'), rel]))).toEqual([])
    expect(triggered(plan([cm('a: 1', 'b: 1'), rel], [cm('a: 2', 'b: 1'), rel]))).toEqual(['apps/app'])
  })

  it('a value merged as YAML compares semantically; one placed at a targetPath compares as the string it is', () => {
    const merged = release({ name: 'merged', valuesFrom: [{ kind: 'ConfigMap', name: 'cfg', valuesKey: 'v' }] })
    const placed = release({ name: 'placed', valuesFrom: [{ kind: 'ConfigMap', name: 'cfg', valuesKey: 'v', targetPath: 'a.b' }] })
    const cm = (v: string, other: string) => source({ name: 'cfg', data: { v, other } })
    // v reformatted only (and another key changed): the same values for a merge, another string at a targetPath.
    const p = plan([cm('{x: 1, y: 2}', '1'), merged, placed], [cm('y: 2\nx: 1\n', '2'), merged, placed])
    expect(triggered(p)).toEqual(['apps/placed'])
  })

  it('an optional reference whose key appears triggers; one whose key stays absent does not', () => {
    const rel = release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'cfg', valuesKey: 'extra.yaml', optional: true }] })
    expect(triggered(plan([source({ name: 'cfg', data: { a: '1' } }), rel], [source({ name: 'cfg', data: { a: '2' } }), rel]))).toEqual([])
    expect(triggered(plan([source({ name: 'cfg', data: { a: '1' } }), rel], [source({ name: 'cfg', data: { a: '1', 'extra.yaml': 'x: 1' } }), rel]))).toEqual([
      'apps/app',
    ])
  })

  it('a Secret read key compares decoded: data and stringData of the same text are equal', () => {
    const rel = release({ name: 'app', valuesFrom: [{ kind: 'Secret', name: 'creds' }] })
    const s = (more: Partial<SourceSpec>) => source({ name: 'creds', kind: 'Secret', ...more })
    expect(triggered(plan([s({ data: { 'values.yaml': b64('pw: a') } }), rel], [s({ data: { 'values.yaml': b64('pw: b') } }), rel]))).toEqual(['apps/app'])
    const same = plan([s({ data: { 'values.yaml': b64('pw: a') } }), rel], [s({ stringData: { 'values.yaml': 'pw: a' } }), rel])
    expect(same.sources).toEqual([])
  })

  it('a comment-only edit changes no digest: nothing planned', () => {
    const p = plan([generated('app', 'a: 1\n'), reader('app')], [generated('app', '# why\na: 1\n'), reader('app')])
    expect(p.sources).toEqual([])
    expect(p.releases).toEqual([])
  })

  it('one release reading two changed sources is one entry with both, each with its own edit', () => {
    const rel = release({
      name: 'app',
      valuesFrom: [
        { kind: 'ConfigMap', name: 'a' },
        { kind: 'ConfigMap', name: 'b' },
      ],
    })
    const cm = (name: string, v: string) => source({ name, data: { 'values.yaml': v }, keyOrigins: { 'values.yaml': { file: `apps/${name}.yaml`, line: 5 } } })
    const p = plan([cm('a', 'x: 1'), cm('b', 'y: 1'), rel], [cm('a', 'x: 2'), cm('b', 'y: 2'), rel])
    expect(p.releases).toHaveLength(1)
    expect(p.releases[0]?.sources.map((s) => [s.id, s.origin?.file, s.origin?.line])).toEqual([
      ['ConfigMap/apps/a', 'apps/a.yaml', 5],
      ['ConfigMap/apps/b', 'apps/b.yaml', 5],
    ])
  })

  it('a source in another namespace does not reach a release (valuesFrom reads its own namespace)', () => {
    const cm = (v: string) => source({ name: 'app-values', namespace: 'other', data: { 'values.yaml': v } })
    const p = plan([cm('a: 1'), reader('app')], [cm('a: 2'), reader('app')])
    expect(p.releases).toEqual([])
  })
})

describe('planRendered: labelled sources and annotation targets', () => {
  const labels = { 'nebius.ai/helmrelease-trigger-operator': 'true' }
  const annotations = { 'nebius.ai/helmreleases-name': 'app, other', 'nebius.ai/helmreleases-namespace': 'apps' }

  it('an annotated target that does not read the source triggers on any change; one that reads it follows the key rule', () => {
    const cm = (v: string, w: string) => source({ name: 'cfg', labels, annotations, data: { 'values.yaml': v, 'w.yaml': w } })
    const rel = release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'cfg' }] })
    const p = plan([cm('a: 1', 'w: 1'), rel], [cm('a: 1', 'w: 2'), rel])
    expect(p.sources[0]?.targets).toEqual([{ namespace: 'apps', name: 'other', reasons: ['annotation'] }])
    const q = plan([cm('a: 1', 'w: 1'), rel], [cm('a: 2', 'w: 1'), rel])
    expect(q.sources[0]?.targets).toEqual([
      { namespace: 'apps', name: 'app', reasons: ['annotation', 'valuesFrom'] },
      { namespace: 'apps', name: 'other', reasons: ['annotation'] },
    ])
  })

  it('with discover off an unlabelled source is not planned, and a labelled one without annotations warns', () => {
    const plain = (v: string) => source({ name: 'app-values', data: { 'values.yaml': v } })
    expect(plan([plain('a: 1'), reader('app')], [plain('a: 2'), reader('app')], { discover: false }).sources).toEqual([])
    const marked = (v: string) => source({ name: 'app-values', labels, data: { 'values.yaml': v } })
    const p = plan([marked('a: 1'), reader('app')], [marked('a: 2'), reader('app')], { discover: false })
    expect(p.releases).toEqual([])
    expect(p.problems.map((x) => [x.severity, x.message])).toEqual([
      [
        'warning',
        'ConfigMap/apps/app-values triggers no HelmRelease: name them in nebius.ai/helmreleases-name (discover is off, so spec.valuesFrom is not searched)',
      ],
    ])
  })

  it('an invalid target name is an error at the source; the valid ones still trigger', () => {
    const cm = (v: string) =>
      source({ name: 'cfg', labels, annotations: { 'nebius.ai/helmreleases-name': 'Bad_Name, good', 'nebius.ai/helmreleases-namespace': 'apps' }, data: { v } })
    const p = plan([cm('1')], [cm('2')])
    expect(triggered(p)).toEqual(['apps/good'])
    expect(p.problems).toEqual([
      expect.objectContaining({ severity: 'error', file: 'apps/cfg/kustomization.yaml', line: 4, message: expect.stringContaining("'Bad_Name'") }),
    ])
  })

  it('full sync plans every labelled source at head and no spec changes', () => {
    const cm = source({ name: 'cfg', labels, annotations, data: { v: '1' } })
    const p = plan([], [cm, source({ name: 'unlabelled', data: { v: '1' } }), release({ name: 'app' })], { fullSync: true })
    expect(p.sources.map((s) => [s.id, s.change, s.previousDigest])).toEqual([['ConfigMap/apps/cfg', 'modified', undefined]])
    expect(triggered(p)).toEqual(['apps/app', 'apps/other'])
    expect(specChanged(p)).toEqual([])
  })
})

describe('planRendered: hash-suffixed names and spec changes', () => {
  it('a generated name whose hash changed pairs with its base name; the release is triggered and its spec changed', () => {
    const cm = (name: string, v: string) => source({ name, data: { 'values.yaml': v }, keyOrigins: valuesOrigin('app') })
    const rel = (cmName: string) => release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: cmName }] })
    const p = plan([cm('app-values-5tb6k2hm4f', 'a: 1'), rel('app-values-5tb6k2hm4f')], [cm('app-values-c8h9b7t2g6', 'a: 2'), rel('app-values-c8h9b7t2g6')])
    expect(p.sources.map((s) => [s.id, s.change, s.renamedFrom])).toEqual([
      ['ConfigMap/apps/app-values-c8h9b7t2g6', 'modified', 'ConfigMap/apps/app-values-5tb6k2hm4f'],
    ])
    expect(p.releases).toHaveLength(1)
    expect(p.releases[0]).toMatchObject({ name: 'app', sources: [{ id: 'ConfigMap/apps/app-values-c8h9b7t2g6' }] })
    expect(p.releases[0]?.spec?.fields).toEqual(['spec.valuesFrom'])
  })

  it('a rename whose read key kept its value changes the spec only', () => {
    const cm = (name: string, other: string) => source({ name, data: { 'values.yaml': 'a: 1', other } })
    const rel = (cmName: string) => release({ name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: cmName }] })
    const p = plan([cm('app-values-5tb6k2hm4f', '1'), rel('app-values-5tb6k2hm4f')], [cm('app-values-c8h9b7t2g6', '2'), rel('app-values-c8h9b7t2g6')])
    expect(triggered(p)).toEqual([])
    expect(specChanged(p)).toEqual(['apps/app'])
  })

  it('a chart version bump is a spec change at the release document, with nothing to patch', () => {
    const p = plan([reader('app')], [reader('app', { version: '1.1.0', origin: { file: 'apps/app/release.yaml', line: 7 } })])
    expect(p.sources).toEqual([])
    expect(p.releases).toEqual([
      {
        namespace: 'apps',
        name: 'app',
        sources: [],
        spec: {
          change: 'modified',
          origin: { file: 'apps/app/release.yaml', line: 7 },
          fields: ['spec.chart.spec.version'],
          expect: [{ path: ['chart', 'spec', 'version'], value: '1.1.0' }],
        },
      },
    ])
  })

  it('a spec change points at the line of the field edited, the nearest written one for a field added, the document otherwise', () => {
    const file = 'apps/app/release.yaml'
    const lines = {
      '["chart"]': { file, line: 8 },
      '["chart","spec"]': { file, line: 9 },
      '["chart","spec","version"]': { file: 'apps/app/patch.yaml', line: 11 },
      '["values"]': { file, line: 14 },
    }
    const at = (o: RenderedObject, specOrigins: Record<string, Provenance>): RenderedObject => ({ ...o, origin: { file, line: 3 }, specOrigins })
    const bumped = plan([reader('app')], [at(reader('app', { version: '1.1.0' }), lines)])
    expect(bumped.releases[0]?.spec?.origin).toEqual({ file: 'apps/app/patch.yaml', line: 11 })
    const added = plan([reader('app')], [at(reader('app', { values: { replicas: 2, image: { tag: 'v2' } } }), { '["values"]': { file, line: 14 } })])
    expect(added.releases[0]?.spec?.origin).toEqual({ file: 'apps/app/release.yaml', line: 14 })
    const unknown = plan([reader('app')], [at(reader('app', { version: '1.1.0' }), {})])
    expect(unknown.releases[0]?.spec?.origin).toEqual({ file: 'apps/app/release.yaml', line: 3 })
  })

  it('the values diff shows a ConfigMap key old → new by leaf, a Secret key by name only', () => {
    const p = plan(
      [generated('atuin', 'replicas: 1\nimage:\n  tag: v1\n'), reader('atuin'), source({ kind: 'Secret', name: 's', data: { token: b64('old') } })],
      [generated('atuin', 'replicas: 1\nimage:\n  tag: v2\n'), reader('atuin'), source({ kind: 'Secret', name: 's', data: { token: b64('new') } })],
    )
    const byId = new Map(p.sources.map((s) => [s.id, s]))
    expect(byId.get('ConfigMap/apps/atuin-values')?.keyChanges).toEqual([
      { key: 'values.yaml', path: 'image.tag', change: 'modified', before: '"v1"', after: '"v2"' },
    ])
    expect(byId.get('Secret/apps/s')?.keyChanges).toEqual([{ key: 'token', change: 'modified' }])
    expect(JSON.stringify(p)).not.toContain('old')
  })

  it('changes applied by a suspended Kustomization are planned but neither trigger nor are waited for, and a note says why', () => {
    const held = { kustomization: 'flux-system/held' }
    const p = plan(
      [generated('atuin', 'a: 1\n', held), reader('atuin'), reader('loki', held), generated('grafana', 'g: 1\n'), reader('grafana')],
      [generated('atuin', 'a: 2\n', held), reader('atuin'), reader('loki', { ...held, version: '2.0.0' }), generated('grafana', 'g: 2\n'), reader('grafana')],
      { head: { suspended: ['flux-system/held'] } },
    )
    expect(p.sources.map((s) => [s.id, s.targets.length, s.suspended])).toEqual([
      ['ConfigMap/apps/atuin-values', 0, 'flux-system/held'],
      ['ConfigMap/apps/grafana-values', 1, undefined],
    ])
    expect(triggered(p)).toEqual(['apps/grafana'])
    expect(specChanged(p)).toEqual([])
    expect(p.notes).toEqual([
      'Flux Kustomization flux-system/held is suspended (spec.suspend: true): kustomize-controller applies none of its changes until it is resumed, so ConfigMap/apps/atuin-values, HelmRelease/apps/loki are planned without a trigger or a wait',
    ])
    expect(p.problems).toEqual([])
  })

  it('a release whose spec and read source both changed is one entry holding both', () => {
    const p = plan(
      [generated('app', 'a: 1'), reader('app', { values: { replicas: 1 } })],
      [generated('app', 'a: 2'), reader('app', { values: { replicas: 2 } })],
    )
    expect(p.releases).toHaveLength(1)
    expect(p.releases[0]?.sources.map((s) => s.id)).toEqual(['ConfigMap/apps/app-values'])
    expect(p.releases[0]?.spec?.fields).toEqual(['spec.values.replicas'])
  })

  it('a new release is planned as added; a metadata-only change is not a spec change', () => {
    const p = plan([reader('old')], [reader('old', { labels: { team: 'a' } }), reader('new')])
    expect(p.releases.map((r) => [r.name, r.spec?.change])).toEqual([['new', 'added']])
  })

  it('renderedReleaseKeys names the head releases', () => {
    expect([...renderedReleaseKeys(repo([reader('a'), generated('a', 'x')]))]).toEqual(['apps/a'])
  })
})

describe('planRendered: chart sources', () => {
  const chartRef = { kind: 'OCIRepository', name: 'demo' }
  const oci = (tag: string, more: Partial<Parameters<typeof ociRepository>[0]> = {}): RenderedObject => ociRepository({ name: 'demo', tag, ...more })
  const tagLine = { '["ref","tag"]': { file: 'apps/demo/repository.yaml', line: 9 } }

  it('a tag bump of an OCIRepository plans each release whose chartRef names it, at the edited line, with nothing to patch', () => {
    const p = plan(
      [oci('0.1.0'), reader('app', { chartRef }), reader('other')],
      [oci('0.2.0', { specOrigins: tagLine }), reader('app', { chartRef }), reader('other')],
    )
    expect(p.sources).toEqual([])
    expect(p.releases).toEqual([
      {
        namespace: 'apps',
        name: 'app',
        sources: [],
        chart: chartChange('0.2.0'),
      },
    ])
  })

  it('a version bump of a HelmChart plans the releases whose chartRef names it', () => {
    const chart = (version: string): RenderedObject => ({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'HelmChart',
      namespace: 'apps',
      name: 'shared',
      object: { spec: { chart: 'demo', version, interval: '10m', sourceRef: { kind: 'HelmRepository', name: 'charts' } } },
      origin: { file: 'apps/shared/chart.yaml', line: 1 },
      keyOrigins: {},
      specOrigins: { '["version"]': { file: 'apps/shared/chart.yaml', line: 8 } },
      kustomization: 'flux-system/apps',
    })
    const ref = { kind: 'HelmChart', name: 'shared' }
    const p = plan([chart('1.0.0'), reader('app', { chartRef: ref })], [chart('1.1.0'), reader('app', { chartRef: ref })])
    expect(p.releases.map((r) => [r.name, r.chart])).toEqual([
      [
        'app',
        chartChange('1.1.0', {
          kind: 'HelmChart',
          name: 'shared',
          origin: { file: 'apps/shared/chart.yaml', line: 8 },
          fields: ['spec.version'],
          expect: [{ path: ['version'], value: '1.1.0' }],
        }),
      ],
    ])
  })

  it('chartRef.namespace names a repository in another namespace; a release reading its namesake elsewhere is not planned', () => {
    const shared = (tag: string) => oci(tag, { namespace: 'charts' })
    const p = plan(
      [shared('1'), reader('remote', { chartRef: { ...chartRef, namespace: 'charts' } }), reader('local', { chartRef })],
      [shared('2'), reader('remote', { chartRef: { ...chartRef, namespace: 'charts' } }), reader('local', { chartRef })],
    )
    expect(p.releases.map((r) => [r.name, r.chart?.namespace])).toEqual([['remote', 'charts']])
  })

  it('a chart bump and a values change in one commit are one entry holding both', () => {
    const p = plan([oci('0.1.0'), generated('app', 'a: 1'), reader('app', { chartRef })], [oci('0.2.0'), generated('app', 'a: 2'), reader('app', { chartRef })])
    expect(p.releases).toHaveLength(1)
    expect(p.releases[0]?.sources.map((s) => s.id)).toEqual(['ConfigMap/apps/app-values'])
    expect(p.releases[0]?.chart?.fields).toEqual(['spec.ref.tag'])
  })

  it('an interval change fetches no other chart; a new repository is reached only through a spec change; full sync plans none', () => {
    expect(plan([oci('1'), reader('app', { chartRef })], [oci('1', { interval: '1m' }), reader('app', { chartRef })]).releases).toEqual([])
    expect(plan([reader('app', { chartRef })], [oci('1'), reader('app', { chartRef })]).releases).toEqual([])
    expect(plan([oci('1'), reader('app', { chartRef })], [oci('2'), reader('app', { chartRef })], { fullSync: true }).releases).toEqual([])
  })

  it('a suspended repository or Kustomization is planned without a wait, and a note says why', () => {
    const suspended = plan([oci('1'), reader('app', { chartRef })], [oci('2', { suspend: true }), reader('app', { chartRef })])
    expect(suspended.releases).toEqual([])
    expect(suspended.notes).toEqual([
      'OCIRepository/apps/demo changed but is suspended (spec.suspend: true): source-controller fetches nothing until it is resumed, so it is planned without a wait',
    ])
    const held = { kustomization: 'flux-system/held' }
    const p = plan([oci('1', held), reader('app', { chartRef })], [oci('2', held), reader('app', { chartRef })], { head: { suspended: ['flux-system/held'] } })
    expect(p.releases).toEqual([])
    expect(p.notes?.[0]).toContain('so OCIRepository/apps/demo is planned without a trigger or a wait')
  })
})

describe('planRendered: problems and notes', () => {
  it('an object applied by two Kustomizations is a warning (one cluster: they fight; several: set cluster-root); the first one counts', () => {
    const a = generated('app', 'a: 1', { kustomization: 'flux-system/one' })
    const b = generated('app', 'a: 9', { kustomization: 'flux-system/two', origin: { file: 'clusters/two/app.yaml', line: 3 } })
    const p = plan([a, reader('app')], [generated('app', 'a: 2', { kustomization: 'flux-system/one' }), b, reader('app')])
    expect(triggered(p)).toEqual(['apps/app'])
    expect(p.problems).toEqual([
      expect.objectContaining({
        severity: 'warning',
        file: 'clusters/two/app.yaml',
        line: 3,
        message: expect.stringContaining('flux-system/two and also by flux-system/one'),
      }),
    ])
  })

  it('render problems are errors with their file, not-rendered Kustomizations are notes', () => {
    const p = plan([], [], {
      head: {
        problems: [
          {
            kustomization: 'flux-system/apps',
            path: 'apps/prod',
            message: 'accumulating resources: missing.yaml not found',
            file: 'apps/prod/kustomization.yaml',
            line: 3,
          },
        ],
        notRendered: [{ kustomization: 'flux-system/remote', reason: 'a remote base is not fetched in plan-only runs' }],
      },
    })
    expect(p.problems).toEqual([
      {
        severity: 'error',
        file: 'apps/prod/kustomization.yaml',
        line: 3,
        message: 'Flux Kustomization flux-system/apps (apps/prod) could not be rendered: accumulating resources: missing.yaml not found',
      },
    ])
    expect(p.notes).toEqual(['Flux Kustomization flux-system/remote was not rendered: a remote base is not fetched in plan-only runs'])
  })

  it('a source of a Kustomization whose build fails at head is not deleted: the build problem is what is reported', () => {
    const failed = { kustomization: 'flux-system/staging', path: 'apps/staging', message: 'accumulating resources: missing.yaml not found' }
    const staging = { kustomization: 'flux-system/staging', namespace: 'staging' }
    const p = plan(
      [generated('app', 'a: 1', staging), reader('app', staging), generated('web', 'a: 1'), reader('web')],
      [generated('web', 'a: 2'), reader('web')],
      { head: { problems: [failed] } },
    )
    expect(p.sources.map((s) => `${s.id} ${s.change}`)).toEqual(['ConfigMap/apps/web-values modified'])
    expect(p.problems.map((x) => x.message)).toEqual([`Flux Kustomization flux-system/staging (apps/staging) could not be rendered: ${failed.message}`])
  })

  it('a deleted source a release still reads is a warning at the release', () => {
    const p = plan([generated('app', 'a: 1'), reader('app')], [reader('app')])
    expect(p.sources.map((s) => s.change)).toEqual(['deleted'])
    expect(p.problems).toEqual([
      expect.objectContaining({
        severity: 'warning',
        file: 'apps/app/release.yaml',
        message: expect.stringContaining('is deleted but HelmRelease apps/app still reads it'),
      }),
    ])
  })

  it('a non-string data value is an error and the source is skipped', () => {
    const bad: RenderedObject = { ...source({ name: 'cfg' }), object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { port: 5432 } } }
    const p = plan([], [bad])
    expect(p.sources).toEqual([])
    expect(p.problems[0]?.message).toContain('data.port is not a string')
  })

  it('a SOPS-encrypted Secret is planned as encrypted (waited for by revision)', () => {
    const s = (v: string) => source({ name: 'creds', kind: 'Secret', sops: true, data: { 'values.yaml': `ENC[AES256_GCM,data:${v}]` } })
    const rel = release({ name: 'app', valuesFrom: [{ kind: 'Secret', name: 'creds' }] })
    const p = plan([s('a'), rel], [s('b'), rel])
    expect(p.sources[0]?.encrypted).toBe(true)
    expect(p.releases[0]?.sources[0]?.encrypted).toBe(true)
  })
})

describe('changedFields and specHolds', () => {
  it('lists changed leaves under spec, lists compared whole, many folded to top-level fields', () => {
    expect(changedFields({ a: { b: 1, c: [1, 2] } }, { a: { b: 2, c: [1, 2] }, d: true })).toEqual([
      { path: ['a', 'b'], value: 2 },
      { path: ['d'], value: true },
    ])
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, i]))
    expect(changedFields({}, { values: many, interval: '1m' })).toEqual([
      { path: ['interval'], value: '1m' },
      { path: ['values'], value: many },
    ])
  })

  it('holds when every expected field is live, defaults aside; a removed field must be gone', () => {
    const expect1 = [{ path: ['chart', 'spec'], value: { version: '2.0.0' } }]
    expect(specHolds({ chart: { spec: { version: '2.0.0', reconcileStrategy: 'ChartVersion' } } }, expect1)).toBe(true)
    expect(specHolds({ chart: { spec: { version: '1.0.0' } } }, expect1)).toBe(false)
    expect(specHolds({ values: { a: 1 } }, [{ path: ['values'], value: undefined }])).toBe(false)
    expect(specHolds({}, [{ path: ['values'], value: undefined }])).toBe(true)
    expect(
      specHolds({ valuesFrom: [{ kind: 'ConfigMap', name: 'a', optional: false }] }, [{ path: ['valuesFrom'], value: [{ kind: 'ConfigMap', name: 'a' }] }]),
    ).toBe(true)
  })
})
