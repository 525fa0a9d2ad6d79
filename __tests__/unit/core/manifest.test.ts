// One repository file → sources, releases, kustomize namespace and problems with lines.

import { describe, expect, it } from 'vitest'
import { contentOfConfigMap, contentOfSecret, digestOf } from '../../../src/core/digest.ts'
import { DEFAULT_MAX_BYTES, isKustomizationFile, parseManifestFile, resolveRelease, resolveSource } from '../../../src/core/manifest.ts'
import type { ManifestOptions } from '../../../src/core/manifest.ts'
import type { FileContent } from '../../../src/core/model.ts'

const options: ManifestOptions = { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true }
const file = (text: string): FileContent => ({ type: 'file', bytes: new TextEncoder().encode(text) })
const parse = (text: string, path = 'deploy/app.yaml', extra: Partial<ManifestOptions> = {}) => parseManifestFile(path, file(text), { ...options, ...extra })
const b64 = (text: string): string => Buffer.from(text).toString('base64')

const labelledConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-values
  namespace: apps
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: "frontend, backend"
    nebius.ai/helmreleases-namespace: apps
data:
  values.yaml: |
    replicas: 2
`

describe('ConfigMaps', () => {
  it('reads a labelled, annotated ConfigMap', () => {
    const result = parse(labelledConfigMap)
    expect(result.problems).toEqual([])
    expect(result.releases).toEqual([])
    expect(result.sources).toEqual([
      {
        kind: 'ConfigMap',
        name: 'app-values',
        namespace: 'apps',
        origin: { file: 'deploy/app.yaml', line: 1 },
        labelled: true,
        annotatedTargets: [
          { namespace: 'apps', name: 'frontend' },
          { namespace: 'apps', name: 'backend' },
        ],
        encrypted: false,
        digest: digestOf({ data: { 'values.yaml': 'replicas: 2\n' } }, { semantic: true }),
        content: { data: { 'values.yaml': 'replicas: 2\n' }, binaryData: {} },
        encoded: { semantic: true, data: [['values.yaml', ['yaml', '{"replicas":2}']]], binaryData: [] },
      },
    ])
  })

  it('uses the semanticDigest option', () => {
    const verbatim = parse(labelledConfigMap, 'a.yaml', { semanticDigest: false }).sources[0]
    expect(verbatim?.digest).toBe(digestOf({ data: { 'values.yaml': 'replicas: 2\n' } }, { semantic: false }))
    expect(verbatim?.digest).not.toBe(parse(labelledConfigMap).sources[0]?.digest)
  })

  it('treats the Flux watch label as the trigger label', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    reconcile.fluxcd.io/watch: Enabled\n'
    expect(parse(text).sources[0]?.labelled).toBe(true)
    expect(parse(text.replace('Enabled', 'Disabled')).sources[0]?.labelled).toBe(false)
  })

  it('is not labelled by another value or another prefix', () => {
    expect(parse(labelledConfigMap.replace('"true"', '"false"')).sources[0]?.labelled).toBe(false)
    expect(parse(labelledConfigMap, 'a.yaml', { prefix: 'example.com' }).sources[0]?.labelled).toBe(false)
  })

  it('reports a boolean label value (the apiserver rejects it) and does not count it', () => {
    const result = parse(labelledConfigMap.replace('"true"', 'true'))
    expect(result.sources[0]?.labelled).toBe(false)
    // one error, no second "lacks the label" warning about the annotation
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'error', line: 7, message: expect.stringContaining('must be a string') })])
  })

  it('leaves the namespace open when metadata.namespace is absent', () => {
    const source = parse(labelledConfigMap.replace('  namespace: apps\n', '')).sources[0]
    expect(source).toBeDefined()
    expect(source !== undefined && 'namespace' in source).toBe(false)
    expect(source && resolveSource(source, 'team-a').namespace).toBe('team-a')
    expect(parse(labelledConfigMap).sources[0] && resolveSource(parse(labelledConfigMap).sources[0]!, 'x').namespace).toBe('apps')
  })

  it('digests data and binaryData as the live ConfigMap would', () => {
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: "1"\nbinaryData:\n  b: ${b64('bytes')}\n`
    expect(parse(text).sources[0]?.digest).toBe(digestOf(contentOfConfigMap({ data: { a: '1' }, binaryData: { b: b64('bytes') } }), { semantic: true }))
  })

  it('treats an empty data field as no data', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n'
    expect(parse(text).problems).toEqual([])
    expect(parse(text).sources[0]?.digest).toBe(digestOf({}, { semantic: true }))
  })
})

describe('annotated targets', () => {
  const withNames = (names: string, namespace?: string) =>
    parse(`apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  labels: {nebius.ai/helmrelease-trigger-operator: "true"}
  annotations:
    nebius.ai/helmreleases-name: ${JSON.stringify(names)}
${namespace === undefined ? '' : `    nebius.ai/helmreleases-namespace: ${JSON.stringify(namespace)}\n`}`)

  it('trims names, ignores empties and defaults the namespace', () => {
    const result = withNames(' a ,, b.c ,')
    expect(result.problems).toEqual([])
    expect(result.sources[0]?.annotatedTargets).toEqual([
      { namespace: 'flux-system', name: 'a' },
      { namespace: 'flux-system', name: 'b.c' },
    ])
  })

  it('targets another namespace', () => {
    expect(withNames('web', 'team-b').sources[0]?.annotatedTargets).toEqual([{ namespace: 'team-b', name: 'web' }])
  })

  it('drops an invalid name with an error at the annotation line and keeps the valid ones', () => {
    const result = withNames(`ok, Not_Valid, ${'x'.repeat(254)}, fine`)
    expect(result.sources[0]?.annotatedTargets.map((t) => t.name)).toEqual(['ok', 'fine'])
    expect(result.problems).toHaveLength(2)
    expect(result.problems[0]).toEqual({
      severity: 'error',
      file: 'deploy/app.yaml',
      line: 7,
      message: expect.stringContaining("'Not_Valid' in nebius.ai/helmreleases-name is not a valid HelmRelease name"),
    })
  })

  it('reports an invalid target namespace and ignores the targets', () => {
    const result = withNames('a', 'Team_B')
    expect(result.sources[0]?.annotatedTargets).toEqual([])
    expect(result.problems).toEqual([
      expect.objectContaining({ severity: 'error', line: 8, message: expect.stringContaining("'Team_B' is not a valid namespace") }),
    ])
  })

  it('warns that an annotation without the label triggers nothing', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    nebius.ai/helmreleases-name: a\n'
    const result = parse(text)
    expect(result.sources[0]?.labelled).toBe(false)
    expect(result.sources[0]?.annotatedTargets).toEqual([{ namespace: 'flux-system', name: 'a' }])
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'warning', line: 6, message: expect.stringContaining('lacks the label') })])
  })
})

describe('invalid data', () => {
  it('rejects an unquoted number at its line, drops the source, keeps the other documents', () => {
    const text = `apiVersion: v1
kind: ConfigMap
metadata:
  name: db
data:
  host: db.local
  port: 5432
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
data:
  port: "5432"
`
    const result = parse(text)
    expect(result.sources.map((s) => s.name)).toEqual(['other'])
    expect(result.problems).toEqual([
      {
        severity: 'error',
        file: 'deploy/app.yaml',
        line: 7,
        message: expect.stringMatching(/ConfigMap db: data\.port is a number \(5432\), not a string; quote it/),
      },
    ])
  })

  it.each([
    ['a boolean', 'enabled: true', 6],
    ['null', 'empty:', 6],
    ['a mapping', 'nested: {a: 1}', 6],
  ])('rejects %s as a data value', (_, entry, line) => {
    const result = parse(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  ${entry}\n`)
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'error', line })])
  })

  it('rejects data that is not a mapping', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  - a\n')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ line: 5, message: expect.stringContaining('data must be a mapping') })])
  })

  it('rejects an invalid data key', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  "a/b": x\n')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ line: 6, message: expect.stringContaining("key 'a/b' is not a valid key") })])
  })

  it('rejects binaryData that is not base64', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nbinaryData:\n  a: "not base64!"\n')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ line: 6, message: expect.stringContaining('binaryData.a is not valid base64') })])
  })

  it('rejects a key in both data and binaryData', () => {
    const result = parse(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: x\nbinaryData:\n  a: ${b64('x')}\n`)
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ line: 8, message: expect.stringContaining('in both data and binaryData') })])
  })

  it('reports every bad value of an object, not only the first', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: 1\n  b: ok\n  c: false\n')
    expect(result.problems.map((p) => p.line)).toEqual([6, 8])
  })
})

describe('Secrets', () => {
  it('folds stringData into data so the digest equals the live Secret', () => {
    const text = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
  labels: {nebius.ai/helmrelease-trigger-operator: "true"}
type: Opaque
data:
  user: ${b64('admin')}
  password: ${b64('old')}
stringData:
  password: hunter2
`
    const source = parse(text).sources[0]
    expect(parse(text).problems).toEqual([])
    expect(source?.kind).toBe('Secret')
    const live = contentOfSecret({ data: { user: b64('admin'), password: b64('hunter2') } })
    expect(source?.digest).toBe(digestOf(live, { semantic: true }))
  })

  it('accepts base64 split over lines (the apiserver ignores newlines)', () => {
    const long = b64('x'.repeat(100))
    const wrapped = long.replace(/(.{40})/g, '$1\n')
    const text = `apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  k: |\n${wrapped
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n')}\n`
    const result = parse(text)
    expect(result.problems).toEqual([])
    expect(result.sources[0]?.digest).toBe(digestOf(contentOfSecret({ data: { k: long } }), { semantic: true }))
  })

  it('rejects data that is not base64', () => {
    const result = parse('apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  password: hunter2\n')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([
      expect.objectContaining({ severity: 'error', line: 5, message: expect.stringContaining('data.password is not valid base64') }),
    ])
  })

  it('flags a SOPS-encrypted Secret and skips the base64 check of its ciphertext', () => {
    const text = `apiVersion: v1
kind: Secret
metadata: {name: s, namespace: apps}
data:
  password: ENC[AES256_GCM,data:p6mh,iv:abc=,tag:def=,type:str]
sops:
  version: 3.9.0
`
    const result = parse(text)
    expect(result.problems).toEqual([])
    expect(result.sources[0]?.encrypted).toBe(true)
    const reencrypted = parse(text.replace('data:p6mh', 'data:q7ni')).sources[0]
    expect(reencrypted?.digest).not.toBe(result.sources[0]?.digest)
  })

  it('flags ENC[ values even without a sops block', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: ENC[AES256_GCM,data:xx,type:str]\n'
    expect(parse(text).sources[0]?.encrypted).toBe(true)
    expect(parse(text.replace('ENC[', 'PLAIN[')).sources[0]?.encrypted).toBe(false)
  })

  it('flags a document with a top-level sops key', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: b\nsops: {}\n'
    expect(parse(text).sources[0]?.encrypted).toBe(true)
  })
})

describe('HelmReleases', () => {
  const release = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: frontend
  namespace: apps
spec:
  interval: 10m
  valuesFrom:
    - kind: ConfigMap
      name: app-values
    - kind: Secret
      name: app-secrets
      valuesKey: password
      targetPath: db.password
      optional: true
`

  it('reads spec.valuesFrom with optional defaulting to false', () => {
    const result = parse(release)
    expect(result.problems).toEqual([])
    expect(result.releases).toEqual([
      {
        name: 'frontend',
        namespace: 'apps',
        origin: { file: 'deploy/app.yaml', line: 1 },
        valuesFrom: [
          { kind: 'ConfigMap', name: 'app-values', optional: false },
          { kind: 'Secret', name: 'app-secrets', optional: true },
        ],
      },
    ])
  })

  it('accepts every helm.toolkit.fluxcd.io version and ignores other groups', () => {
    expect(parse(release.replace('/v2', '/v2beta1')).releases).toHaveLength(1)
    expect(parse(release.replace('helm.toolkit.fluxcd.io/v2', 'example.com/v1')).releases).toEqual([])
  })

  it('merges entries naming the same object; optional only if every entry is', () => {
    const text = `${release}    - kind: Secret\n      name: app-secrets\n      valuesKey: user\n`
    expect(parse(text).releases[0]?.valuesFrom).toEqual([
      { kind: 'ConfigMap', name: 'app-values', optional: false },
      { kind: 'Secret', name: 'app-secrets', optional: false },
    ])
  })

  it('reports a bad valuesFrom entry at its line and keeps the others', () => {
    const text = release.replace('- kind: Secret', '- kind: Bucket')
    const result = parse(text)
    expect(result.releases[0]?.valuesFrom).toEqual([{ kind: 'ConfigMap', name: 'app-values', optional: false }])
    expect(result.problems).toEqual([
      expect.objectContaining({ severity: 'error', line: 11, message: expect.stringContaining("kind must be ConfigMap or Secret (found 'Bucket')") }),
    ])
  })

  it('reads a release without valuesFrom or without a namespace', () => {
    const text = 'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: bare\nspec: {}\n'
    const parsed = parse(text).releases[0]
    expect(parsed?.valuesFrom).toEqual([])
    expect(parsed !== undefined && 'namespace' in parsed).toBe(false)
    expect(parsed && resolveRelease(parsed, 'default').namespace).toBe('default')
  })
})

describe('kustomizations', () => {
  it('reads the namespace of a kustomization.yaml', () => {
    const text = 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\nresources:\n  - app.yaml\n'
    expect(parse(text, 'apps/kustomization.yaml').kustomizationNamespace).toBe('team-a')
    expect(parse(text, 'apps/kustomization.yml').kustomizationNamespace).toBe('team-a')
  })

  it('accepts a kustomization without apiVersion and kind', () => {
    expect(parse('namespace: team-a\nresources: [app.yaml]\n', 'apps/kustomization.yaml').kustomizationNamespace).toBe('team-a')
  })

  it('ignores a Kustomization outside a kustomization file, and Flux Kustomizations', () => {
    const text = 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\n'
    expect(parse(text, 'apps/other.yaml').kustomizationNamespace).toBeUndefined()
    const flux = 'apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps}\nspec:\n  targetNamespace: x\n'
    expect(parse(flux, 'apps/kustomization.yaml').kustomizationNamespace).toBeUndefined()
    expect(parse(flux, 'apps/kustomization.yaml').problems).toEqual([])
  })

  it('reports an invalid namespace', () => {
    const result = parse('resources: []\nnamespace: Team_A\n', 'kustomization.yaml')
    expect(result.kustomizationNamespace).toBeUndefined()
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'error', line: 2 })])
  })

  it('recognises kustomization file names', () => {
    expect(isKustomizationFile('a/b/kustomization.yaml')).toBe(true)
    expect(isKustomizationFile('Kustomization')).toBe(true)
    expect(isKustomizationFile('a/my-kustomization.yaml')).toBe(false)
  })
})

describe('documents', () => {
  it('reads every document, reporting a syntax error with its line', () => {
    const text = `apiVersion: v1
kind: ConfigMap
metadata: {name: first}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: broken
data: {}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: third}
`
    const result = parse(text)
    expect(result.sources.map((s) => [s.name, s.origin.line])).toEqual([
      ['first', 1],
      ['third', 10],
    ])
    expect(result.problems).toHaveLength(1)
    expect(result.problems[0]).toMatchObject({ severity: 'error', file: 'deploy/app.yaml', message: expect.stringMatching(/^invalid YAML: /) })
    expect(result.problems[0]?.line).toBeGreaterThanOrEqual(7)
    expect(result.problems[0]?.line).toBeLessThanOrEqual(9)
  })

  it('handles CRLF line endings and a byte order mark', () => {
    const text = `\ufeff${labelledConfigMap}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\ndata:\n  port: 5432\n`.replace(/\n/g, '\r\n')
    const result = parse(text)
    expect(result.sources.map((s) => s.name)).toEqual(['app-values'])
    expect(result.sources[0]?.digest).toBe(parse(labelledConfigMap).sources[0]?.digest)
    expect(result.problems).toEqual([expect.objectContaining({ line: 20, message: expect.stringContaining('data.port') })])
  })

  it('reports a document that is not a mapping', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n- just\n- a list\n---\nplain scalar\n')
    expect(result.sources).toHaveLength(1)
    expect(result.problems).toEqual([
      expect.objectContaining({ severity: 'error', line: 5, message: 'document is not a mapping (found a list), skipped' }),
      expect.objectContaining({ severity: 'error', line: 8, message: 'document is not a mapping (found a string), skipped' }),
    ])
  })

  it('reports a ConfigMap, Secret or HelmRelease without metadata.name', () => {
    const text = [
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: a\n',
      'apiVersion: v1\nkind: Secret\n',
      'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: Bad_Name\n',
    ].join('---\n')
    const result = parse(text)
    expect(result.sources).toEqual([])
    expect(result.releases).toEqual([])
    expect(result.problems.map((p) => [p.line, p.message])).toEqual([
      [3, 'ConfigMap without metadata.name, skipped'],
      [6, 'Secret without metadata, skipped'],
      [12, "HelmRelease name 'Bad_Name' is not a valid object name (DNS-1123 subdomain), skipped"],
    ])
  })

  it('reports an invalid metadata.namespace', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: Apps\n')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ line: 5, message: expect.stringContaining("namespace 'Apps' is not a valid namespace") })])
  })

  it('reports a ConfigMap without apiVersion, ignores one of another API group', () => {
    expect(parse('kind: ConfigMap\nmetadata: {name: a}\n').problems).toEqual([
      expect.objectContaining({ severity: 'error', line: 1, message: 'ConfigMap without apiVersion (expected v1)' }),
    ])
    const other = parse('apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: a}\n')
    expect(other).toEqual({ sources: [], releases: [], problems: [] })
  })

  it('ignores other kinds, kind-less mappings (values files) and empty documents silently', () => {
    const text = `# leading comment
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2}
---
replicaCount: 3
image: {repository: nginx}
---
---
# only a comment
`
    expect(parse(text)).toEqual({ sources: [], releases: [], problems: [] })
  })

  it('reports duplicate keys', () => {
    const result = parse('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  k: "1"\n  k: "2"\n')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'error', line: 6, message: expect.stringMatching(/^invalid YAML: .*unique/) })])
  })

  it('resolves aliases within a document', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: &n shared\ndata:\n  name: *n\n'
    const result = parse(text)
    expect(result.problems).toEqual([])
    expect(result.sources[0]?.digest).toBe(digestOf({ data: { name: 'shared' } }, { semantic: true }))
  })

  it('gives up on an alias bomb with an error, in bounded time', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for (let i = 1; i < 10; i++) {
      const prev = String.fromCharCode(96 + i)
      const name = String.fromCharCode(97 + i)
      levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`)
    }
    const bomb = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: boom}\n${levels.join('\n')}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n`
    const result = parse(bomb)
    expect(result.sources.map((s) => s.name)).toEqual(['fine'])
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'error', line: 1, message: expect.stringContaining('alias') })])
  })

  it('only warns about a Go template document that is not YAML', () => {
    const text = '{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n{{- end }}\n'
    const result = parse(text, 'charts/app/templates/cm.yaml')
    expect(result.sources).toEqual([])
    expect(result.problems).toEqual([expect.objectContaining({ severity: 'warning', line: 1, message: expect.stringContaining('Go template') })])
  })
})

describe('file guards', () => {
  it('skips a file over maxBytes, never as an error: a warning when it may hold a source or release, else a notice', () => {
    const result = parse(labelledConfigMap, 'big.yaml', { maxBytes: 100 })
    expect(result).toEqual({
      sources: [],
      releases: [],
      problems: [
        {
          severity: 'warning',
          file: 'big.yaml',
          message: expect.stringMatching(
            /^file is larger than 100 bytes \(\d+ bytes\), skipped; it mentions nebius.ai\/helmrelease-trigger-operator, which is then not planned/,
          ),
        },
      ],
    })
    const dashboard = `{"title": "cluster", "panels": [${'{"type": "graph"},'.repeat(200)}{}]}`
    expect(parse(dashboard, 'grafana/dashboard.json', { maxBytes: 1024 }).problems).toEqual([
      { severity: 'notice', file: 'grafana/dashboard.json', message: expect.stringMatching(/^file is larger than 1 KiB \(\d\.\d KiB\), skipped$/) },
    ])
  })

  it('defaults maxBytes to 1 MiB', () => {
    expect(DEFAULT_MAX_BYTES).toBe(1024 * 1024)
    const padding = `# ${'x'.repeat(1024 * 1024)}\n`
    expect(parse(padding + labelledConfigMap).problems).toEqual([
      expect.objectContaining({ severity: 'warning', message: expect.stringMatching(/^file is larger than 1 MiB \(1\.0 MiB\), skipped; it mentions/) }),
    ])
    expect(parse(labelledConfigMap).problems).toEqual([])
  })

  it('skips a binary file with a warning', () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('apiVersion: v1\n'), 0, 1, 2])
    expect(parseManifestFile('a.yaml', { type: 'file', bytes }, options).problems).toEqual([
      { severity: 'warning', file: 'a.yaml', message: 'binary file (contains NUL bytes), skipped' },
    ])
  })

  it('skips a file that is not UTF-8 with a warning', () => {
    const latin1 = new Uint8Array([...new TextEncoder().encode('data:\n  a: caf'), 0xe9, 0x0a])
    expect(parseManifestFile('a.yaml', { type: 'file', bytes: latin1 }, options).problems).toEqual([
      { severity: 'warning', file: 'a.yaml', message: 'file is not valid UTF-8, skipped' },
    ])
  })

  it.each([
    ['deploy/apps/link.yaml', '../base/cm.yaml', false],
    ['deploy/link.yaml', '../../etc/passwd', true],
    ['link.yaml', '..', true],
    ['deploy/link.yaml', '/etc/passwd', true],
    ['a/b/link.yaml', '../../c.yaml', false],
  ])('skips the symlink %s → %s with a warning (outside: %s)', (path, target, outside) => {
    const result = parseManifestFile(path, { type: 'symlink', target }, options)
    expect(result.sources).toEqual([])
    expect(result.problems).toHaveLength(1)
    expect(result.problems[0]).toMatchObject({ severity: 'warning', file: path, message: expect.stringContaining(`symbolic link to '${target}'`) })
    expect(result.problems[0]?.message.includes('points outside the repository')).toBe(outside)
  })

  it('skips submodules and other non-files silently', () => {
    expect(parseManifestFile('vendor/lib', { type: 'other' }, options)).toEqual({ sources: [], releases: [], problems: [] })
  })

  it('throws on an invalid prefix (a configuration error, not a file problem)', () => {
    expect(() => parse(labelledConfigMap, 'a.yaml', { prefix: 'Not A Prefix' })).toThrow(/Invalid annotation prefix/)
  })
})
