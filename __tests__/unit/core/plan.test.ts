// The pure plan: changed files + head files + settings → sources, targets, releases, problems.

import { posix } from 'node:path'
import { describe, expect, it } from 'vitest'
import { digestOf, contentOfSecret } from '../../../src/core/digest.ts'
import type { FileChange, FileContent, HeadFile, Plan, ReleaseManifest } from '../../../src/core/model.ts'
import { compileGlob, pathFilter, planChanges, retarget } from '../../../src/core/plan.ts'
import type { PlanOptions } from '../../../src/core/plan.ts'

const defaults: PlanOptions = {
  prefix: 'nebius.ai',
  defaultNamespace: 'flux-system',
  semanticDigest: true,
  discover: true,
  paths: ['**/*.yaml', '**/*.yml'],
  crossNamespaceTargets: [],
}
const file = (text: string): FileContent => ({ type: 'file', bytes: new TextEncoder().encode(text) })
const b64 = (text: string): string => Buffer.from(text).toString('base64')

interface ConfigMapSpec {
  readonly name: string
  readonly namespace?: string
  readonly labelled?: boolean
  readonly watch?: boolean
  readonly targets?: string
  readonly targetNamespace?: string
  readonly data?: Readonly<Record<string, string>>
  readonly kind?: 'ConfigMap' | 'Secret'
}

function configMap(spec: ConfigMapSpec): string {
  const labels = [
    spec.labelled === true ? '    nebius.ai/helmrelease-trigger-operator: "true"' : '',
    spec.watch === true ? '    reconcile.fluxcd.io/watch: Enabled' : '',
  ].filter((l) => l !== '')
  const annotations = [
    spec.targets === undefined ? '' : `    nebius.ai/helmreleases-name: ${JSON.stringify(spec.targets)}`,
    spec.targetNamespace === undefined ? '' : `    nebius.ai/helmreleases-namespace: ${spec.targetNamespace}`,
  ].filter((l) => l !== '')
  const kind = spec.kind ?? 'ConfigMap'
  const data = Object.entries(spec.data ?? { 'values.yaml': 'replicas: 1\n' }).map(([k, v]) =>
    kind === 'Secret' ? `  ${k}: ${b64(v)}` : `  ${k}: ${JSON.stringify(v)}`,
  )
  return [
    'apiVersion: v1',
    `kind: ${kind}`,
    'metadata:',
    `  name: ${spec.name}`,
    ...(spec.namespace === undefined ? [] : [`  namespace: ${spec.namespace}`]),
    ...(labels.length > 0 ? ['  labels:', ...labels] : []),
    ...(annotations.length > 0 ? ['  annotations:', ...annotations] : []),
    'data:',
    ...data,
    '',
  ].join('\n')
}

function helmRelease(name: string, namespace: string | undefined, valuesFrom: readonly string[]): string {
  return [
    'apiVersion: helm.toolkit.fluxcd.io/v2',
    'kind: HelmRelease',
    'metadata:',
    `  name: ${name}`,
    ...(namespace === undefined ? [] : [`  namespace: ${namespace}`]),
    'spec:',
    '  valuesFrom:',
    ...valuesFrom.flatMap((ref) => {
      const [kind, refName, optional] = ref.split('/')
      return [`    - kind: ${kind}`, `      name: ${refName}`, ...(optional === 'optional' ? ['      optional: true'] : [])]
    }),
    '',
  ].join('\n')
}

const modified = (path: string, before: string, after: string): FileChange => ({ path, status: 'modified', before: file(before), after: file(after) })
const added = (path: string, after: string): FileChange => ({ path, status: 'added', after: file(after) })
const deleted = (path: string, before: string): FileChange => ({ path, status: 'deleted', before: file(before) })
const head = (path: string, text: string): HeadFile => ({ path, content: file(text) })

/** Head files = the given unchanged files plus the head content of every change. */
function plan(changes: readonly FileChange[], unchanged: readonly HeadFile[] = [], options: Partial<PlanOptions> = {}, fullSync = false): Plan {
  const changedHead = changes.flatMap((c) => (c.after === undefined ? [] : [{ path: c.path, content: c.after }]))
  return planChanges({ changes, headFiles: [...unchanged, ...changedHead], fullSync, options: { ...defaults, ...options } })
}

const digestOfValues = (values: string) => digestOf({ data: { 'values.yaml': values } }, { semantic: true })

describe('changed sources', () => {
  const before = configMap({ name: 'web-values', namespace: 'apps', labelled: true, targets: 'web', targetNamespace: 'apps' })
  const after = before.replace('replicas: 1', 'replicas: 3')

  it('plans a modified labelled source for its annotated target', () => {
    const result = plan([modified('apps/web.yaml', before, after)])
    expect(result.problems).toEqual([])
    expect(result.sources).toEqual([
      {
        kind: 'ConfigMap',
        namespace: 'apps',
        name: 'web-values',
        id: 'ConfigMap/apps/web-values',
        change: 'modified',
        digest: digestOfValues('replicas: 3\n'),
        previousDigest: digestOfValues('replicas: 1\n'),
        encrypted: false,
        origin: { file: 'apps/web.yaml', line: 1 },
        targets: [{ namespace: 'apps', name: 'web', reasons: ['annotation'] }],
        keyChanges: [{ key: 'values.yaml', path: 'replicas', change: 'modified', before: '1', after: '3' }],
      },
    ])
    expect(result.releases).toEqual([
      { namespace: 'apps', name: 'web', sources: [{ id: 'ConfigMap/apps/web-values', digest: digestOfValues('replicas: 3\n'), encrypted: false }] },
    ])
  })

  it('plans nothing for a comment-only or formatting-only edit', () => {
    const edited = before.replace('"replicas: 1\\n"', '"# tuned\\nreplicas:    1\\n"')
    expect(edited).not.toBe(before)
    expect(plan([modified('apps/web.yaml', before, edited)])).toEqual({ sources: [], releases: [], problems: [] })
  })

  it('plans nothing when only the line endings change', () => {
    expect(plan([modified('apps/web.yaml', before, before.replace(/\n/g, '\r\n'))]).sources).toEqual([])
  })

  it('plans a formatting-only edit when the digest is not semantic', () => {
    const edited = before.replace('"replicas: 1\\n"', '"replicas:  1\\n"')
    expect(plan([modified('apps/web.yaml', before, edited)], [], { semanticDigest: false }).sources.map((s) => s.change)).toEqual(['modified'])
  })

  it('plans an added source without a previous digest', () => {
    const result = plan([added('apps/web.yaml', after)])
    expect(result.sources).toHaveLength(1)
    expect(result.sources[0]).toMatchObject({ change: 'added', digest: digestOfValues('replicas: 3\n') })
    expect(result.sources[0] && 'previousDigest' in result.sources[0]).toBe(false)
    expect(result.releases.map((r) => r.name)).toEqual(['web'])
  })

  it('reports a deleted source without triggering anything', () => {
    const result = plan([deleted('apps/web.yaml', before)])
    expect(result.sources).toEqual([
      {
        kind: 'ConfigMap',
        namespace: 'apps',
        name: 'web-values',
        id: 'ConfigMap/apps/web-values',
        change: 'deleted',
        previousDigest: digestOfValues('replicas: 1\n'),
        encrypted: false,
        origin: { file: 'apps/web.yaml', line: 1 },
        targets: [],
      },
    ])
    expect(result.releases).toEqual([])
    expect(result.problems).toEqual([])
  })

  it('warns when a deleted source is still read by a release (not optional)', () => {
    const release = helmRelease('web', 'apps', ['ConfigMap/web-values'])
    const result = plan([deleted('apps/web.yaml', before)], [head('apps/release.yaml', release)])
    expect(result.problems).toEqual([
      {
        severity: 'warning',
        file: 'apps/release.yaml',
        line: 1,
        message: 'ConfigMap/apps/web-values is deleted but HelmRelease apps/web still reads it (spec.valuesFrom, not optional)',
      },
    ])
    const optional = plan([deleted('apps/web.yaml', before)], [head('apps/release.yaml', helmRelease('web', 'apps', ['ConfigMap/web-values/optional']))])
    expect(optional.problems).toEqual([])
  })

  it('treats a renamed file with the same content as unchanged', () => {
    const rename = [deleted('apps/old/web.yaml', before), added('apps/new/web.yaml', before)]
    expect(plan(rename)).toEqual({ sources: [], releases: [], problems: [] })
  })

  it('plans a renamed file whose content changed as modified, with its new origin', () => {
    const result = plan([deleted('apps/old/web.yaml', before), added('apps/new/web.yaml', after)])
    expect(result.sources.map((s) => [s.change, s.origin.file])).toEqual([['modified', 'apps/new/web.yaml']])
  })

  it('treats a source moved into another multi-document file as unchanged', () => {
    const other = configMap({ name: 'other', namespace: 'apps' })
    const result = plan([
      modified('apps/web.yaml', `${before}---\n${other}`, other),
      modified('apps/all.yaml', other.replace('other', 'third'), `${other.replace('other', 'third')}---\n${before}`),
    ])
    expect(result.sources).toEqual([])
  })

  it('plans a changed Secret written with stringData by the digest of its live form', () => {
    const secret = (password: string) =>
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: apps\n  labels: {nebius.ai/helmrelease-trigger-operator: "true"}\n  annotations: {nebius.ai/helmreleases-name: api, nebius.ai/helmreleases-namespace: apps}\nstringData:\n  password: ${password}\n`
    const result = plan([modified('apps/secret.yaml', secret('old'), secret('new'))])
    const live = digestOf(contentOfSecret({ data: { password: b64('new') } }), { semantic: true })
    expect(result.sources.map((s) => [s.id, s.change, s.digest])).toEqual([['Secret/apps/db', 'modified', live]])
    // The unkeyed digest stays in memory (wait-for-apply); a release's read of a Secret has no digest until the run holds the key.
    expect(result.releases).toEqual([{ namespace: 'apps', name: 'api', sources: [{ id: 'Secret/apps/db', encrypted: false }] }])
  })

  it('flags encrypted sources in the plan and in each release', () => {
    const sops = (cipher: string) =>
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: apps\n  labels: {nebius.ai/helmrelease-trigger-operator: "true"}\n  annotations: {nebius.ai/helmreleases-name: api, nebius.ai/helmreleases-namespace: apps}\ndata:\n  password: ENC[AES256_GCM,data:${cipher},type:str]\nsops:\n  version: 3.9.0\n`
    const result = plan([modified('apps/secret.yaml', sops('aaaa'), sops('bbbb'))])
    expect(result.sources.map((s) => s.encrypted)).toEqual([true])
    expect(result.releases[0]?.sources.map((s) => s.encrypted)).toEqual([true])
  })

  it('treats the watch label as a label', () => {
    const watched = (n: number) => configMap({ name: 'cfg', namespace: 'apps', watch: true, targets: 'web', targetNamespace: 'apps', data: { a: String(n) } })
    const result = plan([modified('apps/cfg.yaml', watched(1), watched(2))], [], { discover: false })
    expect(result.releases.map((r) => `${r.namespace}/${r.name}`)).toEqual(['apps/web'])
  })
})

describe('targets', () => {
  const source = (n: number, spec: Partial<ConfigMapSpec> = {}) =>
    configMap({ name: 'shared', namespace: 'apps', data: { 'values.yaml': `replicas: ${n}\n` }, ...spec })

  it('I1: follows an annotation into another namespace only where cross-namespace-targets allows it, and says so where not', () => {
    const change = modified(
      'a.yaml',
      source(1, { labelled: true, targets: 'x', targetNamespace: 'team-b' }),
      source(2, { labelled: true, targets: 'x', targetNamespace: 'team-b' }),
    )
    const refused = plan([change])
    expect(refused.releases).toEqual([])
    expect(refused.problems.map((p) => `${p.severity} ${p.file}:${p.line} ${p.message}`)).toEqual([
      'warning a.yaml:1 ConfigMap/apps/shared names the HelmRelease team-b/x, outside its own namespace apps: not triggered; to allow it, add apps=team-b (or *=team-b) to cross-namespace-targets',
    ])
    for (const allowed of [['*'], ['apps=team-b'], ['*=team-b'], ['apps=*']]) {
      const crossNamespace = plan([change], [], { crossNamespaceTargets: allowed })
      expect(
        crossNamespace.releases.map((r) => [r.namespace, r.name]),
        allowed.join(),
      ).toEqual([['team-b', 'x']])
      expect(crossNamespace.problems).toEqual([])
    }
    expect(plan([change], [], { crossNamespaceTargets: ['apps=team-c', 'other=team-b'] }).releases).toEqual([])
    // Without the namespace annotation a target is in default-namespace (flux-system): another namespace too.
    const defaulted = plan([modified('a.yaml', source(1, { labelled: true, targets: 'x' }), source(2, { labelled: true, targets: 'x' }))], [], {
      crossNamespaceTargets: ['apps=flux-system'],
    })
    expect(defaulted.releases.map((r) => [r.namespace, r.name])).toEqual([['flux-system', 'x']])
  })

  it('discovers releases that read an unlabelled source through valuesFrom', () => {
    const releases = [
      head('apps/a.yaml', helmRelease('reader', 'apps', ['ConfigMap/shared'])),
      head('apps/b.yaml', helmRelease('other-namespace', 'team-b', ['ConfigMap/shared'])),
      head('apps/c.yaml', helmRelease('other-kind', 'apps', ['Secret/shared'])),
      head('apps/d.yaml', helmRelease('other-name', 'apps', ['ConfigMap/unrelated'])),
    ]
    const result = plan([modified('apps/cm.yaml', source(1), source(2))], releases)
    expect(result.problems).toEqual([])
    expect(result.sources.map((s) => [s.id, s.targets])).toEqual([['ConfigMap/apps/shared', [{ namespace: 'apps', name: 'reader', reasons: ['valuesFrom'] }]]])
    expect(result.releases.map((r) => r.name)).toEqual(['reader'])
  })

  it('merges annotation and valuesFrom reasons for the same release', () => {
    const spec = { labelled: true, targets: 'reader', targetNamespace: 'apps' }
    const result = plan(
      [modified('apps/cm.yaml', source(1, spec), source(2, spec))],
      [head('apps/hr.yaml', helmRelease('reader', 'apps', ['ConfigMap/shared']))],
    )
    expect(result.sources[0]?.targets).toEqual([{ namespace: 'apps', name: 'reader', reasons: ['annotation', 'valuesFrom'] }])
    expect(result.releases).toHaveLength(1)
  })

  it('with discover off, ignores unlabelled sources and valuesFrom', () => {
    const releases = [head('apps/hr.yaml', helmRelease('reader', 'apps', ['ConfigMap/shared']))]
    const unlabelled = plan([modified('apps/cm.yaml', source(1), source(2))], releases, { discover: false })
    expect(unlabelled).toEqual({ sources: [], releases: [], problems: [] })
    const labelled = plan([modified('apps/cm.yaml', source(1, { labelled: true }), source(2, { labelled: true }))], releases, { discover: false })
    expect(labelled.releases).toEqual([])
    expect(labelled.problems).toEqual([
      expect.objectContaining({
        severity: 'warning',
        file: 'apps/cm.yaml',
        line: 1,
        message: expect.stringMatching(/^ConfigMap\/apps\/shared triggers no HelmRelease: .*discover is off/),
      }),
    ])
  })

  it('keeps a changed unlabelled source without targets in the plan under discovery (the cluster may read it)', () => {
    const result = plan([modified('apps/cm.yaml', source(1), source(2))])
    expect(result.sources.map((s) => [s.id, s.targets])).toEqual([['ConfigMap/apps/shared', []]])
    expect(result.releases).toEqual([])
    expect(result.problems).toEqual([])
  })

  it('warns about a labelled source that targets nothing', () => {
    const result = plan([modified('apps/cm.yaml', source(1, { labelled: true }), source(2, { labelled: true }))])
    expect(result.problems).toEqual([
      {
        severity: 'warning',
        file: 'apps/cm.yaml',
        line: 1,
        message:
          "ConfigMap/apps/shared triggers no HelmRelease: name them in nebius.ai/helmreleases-name, or reference it from a HelmRelease's spec.valuesFrom",
      },
    ])
  })

  it('merges every changed source of a release into one entry, sorted', () => {
    const spec = (name: string) => ({ name, namespace: 'apps', labelled: true, targets: 'web, api', targetNamespace: 'apps' })
    const changes = ['b-values', 'a-values'].map((name) =>
      modified(`apps/${name}.yaml`, configMap({ ...spec(name), data: { v: '1' } }), configMap({ ...spec(name), data: { v: '2' } })),
    )
    const result = plan(changes)
    expect(result.releases.map((r) => [r.name, r.sources.map((s) => s.id)])).toEqual([
      ['api', ['ConfigMap/apps/a-values', 'ConfigMap/apps/b-values']],
      ['web', ['ConfigMap/apps/a-values', 'ConfigMap/apps/b-values']],
    ])
  })

  it('does not list a deleted source in a release entry', () => {
    const spec = { namespace: 'apps', labelled: true, targets: 'web', targetNamespace: 'apps' }
    const gone = configMap({ name: 'gone', ...spec })
    const kept = (n: string) => configMap({ name: 'kept', ...spec, data: { v: n } })
    const result = plan([deleted('apps/gone.yaml', gone), modified('apps/kept.yaml', kept('1'), kept('2'))])
    expect(result.sources.map((s) => [s.name, s.change])).toEqual([
      ['gone', 'deleted'],
      ['kept', 'modified'],
    ])
    expect(result.releases).toEqual([{ namespace: 'apps', name: 'web', sources: [expect.objectContaining({ id: 'ConfigMap/apps/kept' })] }])
  })
})

describe('namespaces', () => {
  const kustomization = (namespace: string) => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: ${namespace}\nresources: []\n`
  const cm = (n: number) => configMap({ name: 'cfg', data: { v: String(n) } })

  it('takes a missing metadata.namespace from the nearest kustomization', () => {
    const result = plan(
      [modified('clusters/prod/apps/web/cfg.yaml', cm(1), cm(2))],
      [head('clusters/prod/apps/kustomization.yaml', kustomization('apps')), head('clusters/prod/kustomization.yaml', kustomization('ignored-further-up'))],
    )
    expect(result.sources.map((s) => s.id)).toEqual(['ConfigMap/apps/cfg'])
  })

  it('skips kustomizations without a namespace on the way up, then falls back to default', () => {
    const result = plan(
      [modified('a/b/cfg.yaml', cm(1), cm(2))],
      [head('a/b/kustomization.yml', 'resources: [cfg.yaml]\n'), head('a/kustomization.yaml', kustomization('outer'))],
    )
    expect(result.sources.map((s) => s.id)).toEqual(['ConfigMap/outer/cfg'])
    expect(plan([modified('x/cfg.yaml', cm(1), cm(2))]).sources.map((s) => s.id)).toEqual(['ConfigMap/default/cfg'])
  })

  it('uses a kustomization outside `paths` (it only decides namespaces)', () => {
    const result = plan([modified('deploy/cfg.yml', cm(1), cm(2))], [head('deploy/kustomization.yaml', kustomization('team'))], { paths: ['deploy/**/*.yml'] })
    expect(result.sources.map((s) => s.id)).toEqual(['ConfigMap/team/cfg'])
  })

  it('resolves releases the same way, so valuesFrom matches in the resolved namespace', () => {
    const result = plan(
      [modified('team/cfg.yaml', cm(1), cm(2))],
      [head('team/kustomization.yaml', kustomization('team')), head('team/hr.yaml', helmRelease('web', undefined, ['ConfigMap/cfg']))],
    )
    expect(result.releases.map((r) => [r.namespace, r.name, r.sources.map((s) => s.id)])).toEqual([['team', 'web', ['ConfigMap/team/cfg']]])
  })

  it('keeps an explicit metadata.namespace', () => {
    const explicit = (n: number) => configMap({ name: 'cfg', namespace: 'mine', data: { v: String(n) } })
    const result = plan([modified('team/cfg.yaml', explicit(1), explicit(2))], [head('team/kustomization.yaml', kustomization('team'))])
    expect(result.sources.map((s) => s.id)).toEqual(['ConfigMap/mine/cfg'])
  })
})

describe('full sync', () => {
  it('plans every labelled source at head, unchanged ones as modified without a previous digest', () => {
    const labelled = configMap({ name: 'a', namespace: 'apps', labelled: true, targets: 'web', targetNamespace: 'apps' })
    const unlabelled = configMap({ name: 'b', namespace: 'apps' })
    const result = planChanges({ changes: [], headFiles: [head('apps/a.yaml', labelled), head('apps/b.yaml', unlabelled)], fullSync: true, options: defaults })
    expect(result.sources.map((s) => [s.id, s.change, 'previousDigest' in s])).toEqual([['ConfigMap/apps/a', 'modified', false]])
    expect(result.releases.map((r) => r.name)).toEqual(['web'])
  })

  it('reports the problems of every head file', () => {
    const bad = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata:\n  port: 5432\n'
    const result = planChanges({ changes: [], headFiles: [head('x/bad.yaml', bad)], fullSync: true, options: defaults })
    expect(result.problems).toEqual([expect.objectContaining({ file: 'x/bad.yaml', line: 5, severity: 'error' })])
  })
})

describe('problems', () => {
  it('reports problems of head content, not of base content', () => {
    const bad = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  port: 5432\n'
    const good = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  port: "5432"\n'
    expect(plan([modified('fixed.yaml', bad, good)]).problems).toEqual([])
    expect(plan([modified('broke.yaml', good, bad)]).problems).toEqual([expect.objectContaining({ file: 'broke.yaml', line: 5 })])
    expect(plan([deleted('gone.yaml', bad)]).problems).toEqual([])
  })

  it('keeps going after a bad file and sorts problems by file and line', () => {
    const good = (n: number) => configMap({ name: 'ok', namespace: 'apps', data: { v: String(n) } })
    const changes = [
      added('z.yaml', 'kind: ConfigMap\nmetadata: {name: a}\n---\n{broken'),
      modified('m.yaml', good(1), good(2)),
      added('a.yaml', '- not a mapping\n'),
    ]
    const result = plan(changes)
    expect(result.sources.map((s) => s.id)).toEqual(['ConfigMap/apps/ok'])
    expect(result.problems.map((p) => [p.file, p.line])).toEqual([
      ['a.yaml', 1],
      ['z.yaml', 1],
      ['z.yaml', 4],
    ])
  })

  it('reports a source defined twice at head; the first definition (by path) wins', () => {
    const one = configMap({ name: 'dup', namespace: 'apps', labelled: true, targets: 'a', targetNamespace: 'apps', data: { v: '1' } })
    const two = configMap({ name: 'dup', namespace: 'apps', labelled: true, targets: 'b', targetNamespace: 'apps', data: { v: '2' } })
    const result = plan([added('clusters/staging/dup.yaml', two), added('clusters/prod/dup.yaml', one)])
    expect(result.sources.map((s) => [s.origin.file, s.targets.map((t) => t.name)])).toEqual([['clusters/prod/dup.yaml', ['a']]])
    expect(result.problems).toEqual([
      {
        severity: 'error',
        file: 'clusters/staging/dup.yaml',
        line: 1,
        message: expect.stringMatching(/^ConfigMap\/apps\/dup is defined more than once \(first at clusters\/prod\/dup\.yaml:1\)/),
      },
    ])
  })

  it('finds a duplicate in an unchanged file too', () => {
    const cm = (v: string) => configMap({ name: 'dup', namespace: 'apps', data: { v } })
    const result = plan([modified('b.yaml', cm('1'), cm('2'))], [head('a.yaml', cm('0'))])
    expect(result.problems.map((p) => [p.severity, p.file])).toEqual([['error', 'b.yaml']])
    // a.yaml wins and did not change: nothing to trigger
    expect(result.sources).toEqual([])
  })

  it('does not report duplicates among files nobody changed', () => {
    const cm = configMap({ name: 'dup', namespace: 'apps' })
    const other = (v: string) => configMap({ name: 'other', namespace: 'apps', data: { v } })
    expect(plan([modified('c.yaml', other('1'), other('2'))], [head('a.yaml', cm), head('b.yaml', cm)]).problems).toEqual([])
  })
})

describe('paths', () => {
  const cm = (n: number) => configMap({ name: 'cfg', namespace: 'apps', labelled: true, targets: 'web', targetNamespace: 'apps', data: { v: String(n) } })

  it('only considers changed files matching `paths`', () => {
    const changes = [modified('deploy/prod/cfg.yml', cm(1), cm(2)), modified('docs/cfg.yml', cm(1), cm(2).replace('name: cfg', 'name: docs'))]
    const result = plan(changes, [], { paths: ['deploy/**/*.yml'] })
    expect(result.sources.map((s) => s.origin.file)).toEqual(['deploy/prod/cfg.yml'])
  })

  it('only reads HelmReleases from head files matching `paths`', () => {
    const unlabelled = (n: number) => configMap({ name: 'cfg', namespace: 'apps', data: { v: String(n) } })
    const releases = [
      head('deploy/hr.yaml', helmRelease('in', 'apps', ['ConfigMap/cfg'])),
      head('other/hr.yaml', helmRelease('out', 'apps', ['ConfigMap/cfg'])),
    ]
    const result = plan([modified('deploy/cfg.yaml', unlabelled(1), unlabelled(2))], releases, { paths: ['deploy/**'] })
    expect(result.releases.map((r) => r.name)).toEqual(['in'])
  })

  it('excludes with a leading !', () => {
    const filter = pathFilter(['**/*.yaml', '!**/templates/**'])
    expect(filter('charts/app/values.yaml')).toBe(true)
    expect(filter('charts/app/templates/cm.yaml')).toBe(false)
  })

  it.each([
    ['**/*.yaml', 'a.yaml', true],
    ['**/*.yaml', 'a/b/c.yaml', true],
    ['**/*.yaml', 'a/b/c.yml', false],
    ['*.yaml', 'a.yaml', true],
    ['*.yaml', 'a/b.yaml', false],
    ['deploy/**/*.yml', 'deploy/x.yml', true],
    ['deploy/**/*.yml', 'deploy/a/b/x.yml', true],
    ['deploy/**/*.yml', 'other/deploy/x.yml', false],
    ['deploy/**', 'deploy/a/b.txt', true],
    ['deploy/', 'deploy/a/b.txt', true],
    ['./deploy/*.yaml', 'deploy/a.yaml', true],
    ['app?.yaml', 'app1.yaml', true],
    ['app?.yaml', 'app12.yaml', false],
    ['app?.yaml', 'app/.yaml', false],
    ['**/*.{yaml,yml}', 'x/y.yml', true],
    ['**/*.{yaml,yml}', 'x/y.json', false],
    ['{apps,infra}/**/*.yaml', 'infra/a/b.yaml', true],
    ['{apps,infra}/**/*.yaml', 'other/a.yaml', false],
    ['{a,b{c,d}}.yaml', 'bd.yaml', true],
    ['{a,b{c,d}}.yaml', 'b.yaml', false],
    ['file[0-9].yaml', 'file7.yaml', true],
    ['file[!0-9].yaml', 'file7.yaml', false],
    ['file[!0-9].yaml', 'filex.yaml', true],
    ['a+b(c).yaml', 'a+b(c).yaml', true],
    ['{unclosed.yaml', '{unclosed.yaml', true],
    ['a/**/b/*.yaml', 'a/b/c.yaml', true],
    ['a/**/b/*.yaml', 'a/x/y/b/c.yaml', true],
  ])('glob %s matches %s: %s', (glob, path, expected) => {
    expect(compileGlob(glob).test(path)).toBe(expected)
    // Same answer as Node's own glob matcher where it has the feature.
    if (!glob.startsWith('./') && !glob.endsWith('/') && !glob.startsWith('{unclosed')) expect(posix.matchesGlob(path, glob)).toBe(expected)
  })

  it('matches nothing without a positive pattern', () => {
    expect(pathFilter([])('a.yaml')).toBe(false)
    expect(pathFilter(['!b.yaml'])('a.yaml')).toBe(false)
  })
})

describe('retarget', () => {
  const cm = (n: number, labelled = false) =>
    configMap({
      name: 'cfg',
      namespace: 'apps',
      labelled,
      targets: labelled ? 'repo-release' : undefined,
      targetNamespace: labelled ? 'apps' : undefined,
      data: { v: String(n) },
    })
  const cluster = (name: string, namespace: string, refs: ReleaseManifest['valuesFrom']): ReleaseManifest => ({ name, namespace, valuesFrom: refs })

  it('adds releases found in the cluster, merged with the repository ones', () => {
    const repo = [head('apps/hr.yaml', helmRelease('repo-release', 'apps', ['ConfigMap/cfg']))]
    const initial = plan([modified('apps/cfg.yaml', cm(1, true), cm(2, true)), deleted('apps/gone.yaml', configMap({ name: 'gone', namespace: 'apps' }))], repo)
    const result = retarget(initial, [
      cluster('live-only', 'apps', [{ kind: 'ConfigMap', name: 'cfg', optional: false }]),
      cluster('repo-release', 'apps', [{ kind: 'ConfigMap', name: 'cfg', optional: false }]),
      cluster('wrong-namespace', 'other', [{ kind: 'ConfigMap', name: 'cfg', optional: false }]),
      cluster('reads-deleted', 'apps', [{ kind: 'ConfigMap', name: 'gone', optional: true }]),
    ])
    const cfg = result.sources.find((s) => s.name === 'cfg')
    expect(cfg?.targets).toEqual([
      { namespace: 'apps', name: 'live-only', reasons: ['valuesFrom'] },
      { namespace: 'apps', name: 'repo-release', reasons: ['annotation', 'valuesFrom'] },
    ])
    expect(result.sources.find((s) => s.name === 'gone')?.targets).toEqual([])
    expect(result.releases.map((r) => [r.name, r.sources.map((s) => s.id)])).toEqual([
      ['live-only', ['ConfigMap/apps/cfg']],
      ['repo-release', ['ConfigMap/apps/cfg']],
    ])
  })

  it('drops the "targets nothing" warning once the cluster supplies a target', () => {
    const labelledNoTarget = (n: number) => configMap({ name: 'cfg', namespace: 'apps', labelled: true, data: { v: String(n) } })
    const initial = plan([modified('apps/cfg.yaml', labelledNoTarget(1), labelledNoTarget(2))])
    expect(initial.problems).toHaveLength(1)
    const result = retarget(initial, [cluster('live', 'apps', [{ kind: 'ConfigMap', name: 'cfg', optional: false }])])
    expect(result.problems).toEqual([])
    expect(result.releases.map((r) => r.name)).toEqual(['live'])
    expect(retarget(initial, []).problems).toEqual(initial.problems)
  })

  it('gives an unlabelled changed source its cluster consumers', () => {
    const result = retarget(plan([modified('apps/cfg.yaml', cm(1), cm(2))]), [cluster('live', 'apps', [{ kind: 'ConfigMap', name: 'cfg', optional: false }])])
    expect(result.releases).toEqual([{ namespace: 'apps', name: 'live', sources: [expect.objectContaining({ id: 'ConfigMap/apps/cfg' })] }])
  })
})

describe('determinism and scale', () => {
  it('gives the same plan whatever the order of the changes and head files', () => {
    const changes = Array.from({ length: 20 }, (_, i) => {
      const spec = {
        name: `cfg-${i}`,
        namespace: `ns-${i % 3}`,
        labelled: i % 2 === 0,
        targets: `r-${i % 4}, r-${(i + 1) % 4}`,
        targetNamespace: `ns-${i % 3}`,
      }
      return modified(`d/${i}.yaml`, configMap({ ...spec, data: { v: '1' } }), configMap({ ...spec, data: { v: '2' } }))
    })
    const releases = Array.from({ length: 4 }, (_, i) => head(`d/hr-${i}.yaml`, helmRelease(`r-${i}`, 'ns-0', [`ConfigMap/cfg-${i}`])))
    const forward = plan(changes, releases)
    const backward = plan([...changes].reverse(), [...releases].reverse())
    expect(backward).toEqual(forward)
    expect(forward.sources.length).toBeGreaterThan(0)
  })

  it('plans 10,000 changed files', () => {
    const changes: FileChange[] = []
    const releases: HeadFile[] = []
    for (let i = 0; i < 10_000; i++) {
      const labelled = i % 2 === 0
      const spec = {
        name: `cfg-${i}`,
        namespace: `ns-${i % 50}`,
        labelled,
        targets: labelled ? `annotated-${i % 100}` : undefined,
        targetNamespace: `ns-${i % 50}`,
      }
      changes.push(
        modified(
          `clusters/prod/app-${i}/cfg.yaml`,
          configMap({ ...spec, data: { 'values.yaml': `replicas: 1\nid: ${i}\n` } }),
          configMap({ ...spec, data: { 'values.yaml': `replicas: 2\nid: ${i}\n` } }),
        ),
      )
      if (i % 10 === 0) releases.push(head(`clusters/prod/app-${i}/hr.yaml`, helmRelease(`reader-${i}`, `ns-${i % 50}`, [`ConfigMap/cfg-${i}`])))
    }
    const result = plan(changes, releases)
    expect(result.problems).toEqual([])
    expect(result.sources).toHaveLength(10_000)
    expect(result.sources.every((s) => s.change === 'modified')).toBe(true)
    // only the labelled (even) half annotates, so only the even annotated-k are reached, 100 sources each
    const annotated = result.releases.filter((r) => r.name.startsWith('annotated-'))
    expect(annotated).toHaveLength(50)
    expect(annotated.every((r) => r.sources.length === 100)).toBe(true)
    const readers = result.releases.filter((r) => r.name.startsWith('reader-'))
    expect(readers).toHaveLength(1_000)
    expect(readers.every((r) => r.sources.length === 1)).toBe(true)
  }, 60_000)
})
