// The comparison rules of drift: only fields the chart sets, server-owned fields ignored,
// HPA-owned replicas ignored, drift-ignore rules, equivalent values (numbers, quantities),
// lists by name or by position, Secret values never shown. Plus the path syntax and the
// parsing of the rendered manifest.
import { describe, expect, it } from 'vitest'
import { ABSENT, compareObject, quantity, REDACTED, type CompareOptions } from '../../../../src/modes/drift/compare.ts'
import { formatPath, parseIgnoreRule, parsePath, ruleMatches } from '../../../../src/core/field-path.ts'
import { documents, renderedObjects } from '../../../../src/modes/drift/rendered.ts'
import { ConfigurationError } from '../../../../src/lib/errors.ts'

const none: CompareOptions = { ignore: [], scaledByHpa: false }

function deployment(spec: Record<string, unknown>, metadata: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', ...metadata }, spec }
}

const container = (extra: Record<string, unknown> = {}) => ({ name: 'app', image: 'nginx:1.27', ...extra })
const podSpec = (containers: unknown[]) => ({ template: { spec: { containers } } })

describe('compareObject: what counts as drift', () => {
  it('reports a field the chart sets with another live value, with its path and both values', () => {
    const desired = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app' }, data: { greeting: 'hello', 'values.yaml': 'a: 1\n' } }
    const live = { ...desired, data: { greeting: 'hacked', 'values.yaml': 'a: 1\n' } }
    expect(compareObject(desired, live, none)).toEqual([{ path: 'data.greeting', desired: '"hello"', live: '"hacked"' }])
    expect(compareObject(desired, { ...desired, data: { greeting: 'hello', 'values.yaml': 'a: 2\n' } }, none)).toEqual([
      { path: 'data[values.yaml]', desired: '"a: 1\\n"', live: '"a: 2\\n"' },
    ])
  })

  it('reports a field the chart sets that is gone as absent', () => {
    const desired = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', labels: { tier: 'web' } }, data: { a: '1' } }
    expect(compareObject(desired, { ...desired, metadata: { name: 'app' } }, none)).toEqual([
      { path: 'metadata.labels', desired: '{"tier":"web"}', live: ABSENT },
    ])
    expect(compareObject(desired, { ...desired, data: {} }, none)).toEqual([{ path: 'data.a', desired: '"1"', live: ABSENT }])
  })

  it('ignores what the server and other controllers add: status, managedFields, defaults, extra keys', () => {
    const desired = deployment({ replicas: 2, ...podSpec([container()]) }, { labels: { app: 'web' } })
    const live = {
      ...deployment(
        {
          replicas: 2,
          revisionHistoryLimit: 10,
          progressDeadlineSeconds: 600,
          strategy: { type: 'RollingUpdate' },
          template: {
            metadata: { creationTimestamp: null },
            spec: {
              containers: [container({ imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log' })],
              restartPolicy: 'Always',
              dnsPolicy: 'ClusterFirst',
            },
          },
        },
        {
          labels: { app: 'web', 'app.kubernetes.io/managed-by': 'Helm' },
          annotations: { 'meta.helm.sh/release-name': 'web', 'deployment.kubernetes.io/revision': '3' },
          uid: 'u',
          resourceVersion: '42',
          generation: 3,
          managedFields: [{ manager: 'helm' }],
        },
      ),
      status: { replicas: 2, readyReplicas: 0 },
    }
    expect(compareObject(desired, live, none)).toEqual([])
  })

  it('ignores server-owned metadata and status even when the chart writes them', () => {
    const desired = deployment(
      { replicas: 1 },
      { creationTimestamp: null, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"old":true}' } },
    )
    const withStatus = { ...desired, status: { replicas: 5 } }
    const live = deployment(
      { replicas: 1 },
      { creationTimestamp: '2026-01-01T00:00:00Z', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"new":true}' } },
    )
    expect(compareObject(withStatus, live, none)).toEqual([])
  })

  it('treats null, {} and [] in the chart as an absent field', () => {
    const desired = deployment({ replicas: 1, selector: null, template: { metadata: { annotations: {} }, spec: { volumes: [] } } })
    expect(compareObject(desired, deployment({ replicas: 1, template: { spec: {} } }), none)).toEqual([])
    // An empty list the chart sets is drift when the live list has items (Helm would empty it).
    expect(compareObject(desired, deployment({ replicas: 1, template: { spec: { volumes: [{ name: 'x' }] } } }), none)).toEqual([
      { path: 'spec.template.spec.volumes', desired: '[]', live: '[{"name":"x"}]' },
    ])
  })

  it('ignores spec.replicas when an HPA scales the object, and only then', () => {
    const desired = deployment({ replicas: 2 })
    const live = deployment({ replicas: 7 })
    expect(compareObject(desired, live, none)).toEqual([{ path: 'spec.replicas', desired: '2', live: '7' }])
    expect(compareObject(desired, live, { ignore: [], scaledByHpa: true })).toEqual([])
  })
})

describe('compareObject: drift-ignore rules', () => {
  const desired = deployment({ replicas: 2, ...podSpec([container(), { name: 'sidecar', image: 'envoy:1' }]) }, { annotations: { 'example.com/sync': 'a' } })
  const live = deployment(
    { replicas: 3, ...podSpec([container({ image: 'nginx:1.28' }), { name: 'sidecar', image: 'envoy:2' }]) },
    { annotations: { 'example.com/sync': 'b' } },
  )

  it('reports every change without rules', () => {
    expect(compareObject(desired, live, none).map((c) => c.path)).toEqual([
      'metadata.annotations[example.com/sync]',
      'spec.replicas',
      'spec.template.spec.containers[name=app].image',
      'spec.template.spec.containers[name=sidecar].image',
    ])
  })

  it('drops the paths a rule matches: by kind and name, wildcards, prefixes and bracketed keys', () => {
    const paths = (rules: string[]) => compareObject(desired, live, { ignore: rules.map(parseIgnoreRule), scaledByHpa: false }).map((c) => c.path)
    expect(paths(['Deployment/*/spec.replicas'])).not.toContain('spec.replicas')
    expect(paths(['Deployment/other/spec.replicas'])).toContain('spec.replicas')
    expect(paths(['StatefulSet/*/spec.replicas'])).toContain('spec.replicas')
    expect(paths(['spec.template.spec.containers[*].image'])).toEqual(['metadata.annotations[example.com/sync]', 'spec.replicas'])
    expect(paths(['spec.template.spec.containers[name=sidecar]'])).not.toContain('spec.template.spec.containers[name=sidecar].image')
    expect(paths(['*/web/metadata.annotations[example.com/sync]', 'spec'])).toEqual([])
  })
})

describe('compareObject: equivalent values', () => {
  it('compares resource quantities by value, as the server canonicalises them', () => {
    const resources = (limits: Record<string, unknown>, requests: Record<string, unknown>) =>
      deployment(podSpec([container({ resources: { limits, requests } })]))
    expect(
      compareObject(
        resources({ cpu: '1000m', memory: '1024Mi' }, { cpu: 0.5, memory: '1G' }),
        resources({ cpu: '1', memory: '1Gi' }, { cpu: '500m', memory: '1e9' }),
        none,
      ),
    ).toEqual([])
    expect(compareObject(resources({ cpu: '2' }, {}), resources({ cpu: '1999m' }, {}), none)).toEqual([
      { path: 'spec.template.spec.containers[name=app].resources.limits.cpu', desired: '"2"', live: '"1999m"' },
    ])
  })

  it('does not treat other strings as quantities', () => {
    const cm = (v: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { size: v } })
    expect(compareObject(cm('1000m'), cm('1'), none)).toHaveLength(1)
  })

  it('equals a number and the same number as a string, but not other strings', () => {
    const svc = (port: unknown) => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { ports: [{ name: 'http', port: 80, targetPort: port }] },
    })
    expect(compareObject(svc(8080), svc('8080'), none)).toEqual([])
    expect(compareObject(svc('8080'), svc(8080), none)).toEqual([])
    expect(compareObject(svc(8080), svc('http'), none)).toEqual([{ path: 'spec.ports[name=http].targetPort', desired: '8080', live: '"http"' }])
    expect(compareObject(svc(true), svc('true'), none)).toHaveLength(1)
  })

  it('parses quantities in every suffix form', () => {
    expect(quantity('1Ki')).toBe(1024)
    expect(quantity('250m')).toBe(0.25)
    expect(quantity('1.5G')).toBe(1.5e9)
    expect(quantity('12e3')).toBe(12000)
    expect(quantity('1.5x')).toBeUndefined()
    expect(quantity('Gi')).toBeUndefined()
    expect(quantity(`${'1'.repeat(64)}`)).toBe(Number('1'.repeat(64)))
    expect(quantity(`${'1'.repeat(65)}`)).toBeUndefined()
  })

  // Audit F9: the old regex backtracked quadratically (100,000 digits cost 30 s of CPU; this test's
  // 5 s limit failed). A live ConfigMap's data.storage of a million digits now compares at once.
  it('a hostile 1 MB quantity under data.storage compares as plain text, without backtracking', () => {
    const cm = (storage: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { storage } })
    const hostile = `${'1'.repeat(1_000_000)}x`
    expect(compareObject(cm('1Gi'), cm(hostile), none)).toMatchObject([{ path: 'data.storage', desired: '"1Gi"' }])
    expect(quantity(`${'1'.repeat(100_000)}x`)).toBeUndefined()
    expect(quantity(`${'1.'.repeat(32)}`)).toBeUndefined()
  })
})

describe('compareObject: lists', () => {
  it('matches items that carry a name by name, whatever their order, and ignores extra live items', () => {
    const desired = deployment(podSpec([container(), { name: 'log', image: 'busybox' }]))
    const live = deployment(podSpec([{ name: 'log', image: 'busybox' }, { name: 'injected', image: 'x' }, container()]))
    expect(compareObject(desired, live, none)).toEqual([])
  })

  it('reports a named item that is gone at its named path', () => {
    const desired = deployment(
      podSpec([
        container({
          env: [
            { name: 'MODE', value: 'prod' },
            { name: 'LEVEL', value: 'info' },
          ],
        }),
      ]),
    )
    const live = deployment(podSpec([container({ env: [{ name: 'MODE', value: 'dev' }] })]))
    expect(compareObject(desired, live, none)).toEqual([
      { path: 'spec.template.spec.containers[name=app].env[name=MODE].value', desired: '"prod"', live: '"dev"' },
      { path: 'spec.template.spec.containers[name=app].env[name=LEVEL]', desired: '{"name":"LEVEL","value":"info"}', live: ABSENT },
    ])
  })

  it('compares other lists by position; another length is drift of the whole list', () => {
    const args = (a: string[]) => deployment(podSpec([container({ args: a })]))
    expect(compareObject(args(['--a', '--b']), args(['--a', '--c']), none)).toEqual([
      { path: 'spec.template.spec.containers[name=app].args[1]', desired: '"--b"', live: '"--c"' },
    ])
    expect(compareObject(args(['--a']), args(['--a', '--extra']), none)).toEqual([
      { path: 'spec.template.spec.containers[name=app].args', desired: '["--a"]', live: '["--a","--extra"]' },
    ])
    // Items without names are compared as subsets of their live counterparts (server defaults inside them are fine).
    const rules = (r: unknown[]) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r' }, rules: r })
    expect(compareObject(rules([{ apiGroups: [''], verbs: ['get'] }]), rules([{ apiGroups: [''], verbs: ['get'], resources: ['pods'] }]), none)).toEqual([])
  })

  it('reports a value whose type changed', () => {
    const desired = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: 'y' } } }
    expect(compareObject(desired, { ...desired, metadata: { name: 'a', labels: 'oops' } }, none)).toEqual([
      { path: 'metadata.labels', desired: '{"x":"y"}', live: '"oops"' },
    ])
  })
})

describe('compareObject: Secrets', () => {
  const secret = (extra: Record<string, unknown>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', labels: { app: 'db' } },
    type: 'Opaque',
    ...extra,
  })
  const b64 = (s: string) => Buffer.from(s).toString('base64')

  it('never shows a value, desired or live, only the path', () => {
    const changes = compareObject(secret({ data: { password: b64('s3cret-desired') } }), secret({ data: { password: b64('s3cret-live') } }), none)
    expect(changes).toEqual([{ path: 'data.password', desired: REDACTED, live: REDACTED }])
    expect(JSON.stringify(changes)).not.toMatch(/s3cret|czNjcmV0/)
    expect(compareObject(secret({ data: { token: b64('t') } }), secret({ data: {} }), none)).toEqual([{ path: 'data.token', desired: REDACTED, live: ABSENT }])
  })

  it('compares stringData as the base64 data the server stores', () => {
    expect(compareObject(secret({ stringData: { password: 'pw' } }), secret({ data: { password: b64('pw') } }), none)).toEqual([])
    const changes = compareObject(secret({ stringData: { password: 'pw' } }), secret({ data: { password: b64('other') } }), none)
    expect(changes).toEqual([{ path: 'data.password', desired: REDACTED, live: REDACTED }])
  })

  it('still shows metadata of a Secret', () => {
    expect(compareObject(secret({ data: {} }), { ...secret({ data: {} }), metadata: { name: 'db', labels: { app: 'x' } } }, none)).toEqual([
      { path: 'metadata.labels.app', desired: '"db"', live: '"x"' },
    ])
  })

  it('keeps long values short', () => {
    const cm = (v: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { big: v } })
    const [change] = compareObject(cm('x'.repeat(1000)), cm('y'), none)
    expect(change?.desired.length).toBeLessThanOrEqual(200)
    expect(change?.desired.endsWith('…')).toBe(true)
  })
})

describe('paths and drift-ignore rules', () => {
  it('writes plain keys with dots and others, indexes and named items in brackets', () => {
    expect(formatPath([{ key: 'metadata' }, { key: 'annotations' }, { key: 'example.com/x' }])).toBe('metadata.annotations[example.com/x]')
    expect(formatPath([{ key: 'spec' }, { key: 'ports' }, { key: '0', item: true }, { key: 'port' }])).toBe('spec.ports[0].port')
    expect(formatPath([{ key: 'c' }, { key: 'name=app', item: true }])).toBe('c[name=app]')
  })

  it('reads back what it writes', () => {
    expect(parsePath('spec.template.spec.containers[name=app].image')).toEqual(['spec', 'template', 'spec', 'containers', 'name=app', 'image'])
    expect(parsePath('data[values.yaml]')).toEqual(['data', 'values.yaml'])
    expect(parsePath('a..b')).toBeUndefined()
    expect(parsePath('a[b]c')).toBeUndefined()
    expect(parsePath('a[]')).toBeUndefined()
    expect(parsePath('')).toBeUndefined()
  })

  it('parses Kind/name/path rules and bare paths', () => {
    expect(parseIgnoreRule('Deployment/*/spec.replicas')).toEqual({
      kind: 'Deployment',
      name: undefined,
      path: ['spec', 'replicas'],
      text: 'Deployment/*/spec.replicas',
    })
    expect(parseIgnoreRule('metadata.annotations[example.com/a]')).toEqual({
      kind: undefined,
      name: undefined,
      path: ['metadata', 'annotations', 'example.com/a'],
      text: 'metadata.annotations[example.com/a]',
    })
    expect(parseIgnoreRule('*/web/data[a/b]')).toMatchObject({ kind: undefined, name: 'web', path: ['data', 'a/b'] })
  })

  it('refuses malformed rules with the expected format', () => {
    for (const bad of ['Deployment/Web_Bad/spec', 'spec..replicas', 'De-ploy/x/spec', '[unclosed']) {
      expect(() => parseIgnoreRule(bad)).toThrow(ConfigurationError)
    }
    expect(() => parseIgnoreRule('spec..x')).toThrow('Expected [Kind/name/]path, e.g. Deployment/*/spec.replicas')
  })

  it('matches index rules against list positions', () => {
    expect(ruleMatches(parseIgnoreRule('spec.ports[0]'), 'Service', 's', [{ key: 'spec' }, { key: 'ports' }, { key: '0', item: true }, { key: 'port' }])).toBe(
      true,
    )
    expect(ruleMatches(parseIgnoreRule('spec.ports[1]'), 'Service', 's', [{ key: 'spec' }, { key: 'ports' }, { key: '0', item: true }])).toBe(false)
  })
})

describe('the rendered manifest', () => {
  const manifest = `---
# Source: demo/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  a: "1"
---
# Source: demo/templates/empty.yaml
---
# Source: demo/templates/ns.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: other
  namespace: ignored-by-the-server
---
# Source: demo/templates/broken.yaml
apiVersion: v1
kind: Secret
metadata: {name: s
data:
  password: aHVudGVyMg==
--- # trailing comment
# Source: demo/templates/list.yaml
- not an object
---
# Source: demo/templates/nameless.yaml
apiVersion: v1
kind: ConfigMap
`

  it('splits at --- lines and names each document after its # Source comment', () => {
    expect([...documents(manifest)].map((d) => d.source)).toEqual([
      'demo/templates/configmap.yaml',
      'demo/templates/empty.yaml',
      'demo/templates/ns.yaml',
      'demo/templates/broken.yaml',
      'demo/templates/list.yaml',
      'demo/templates/nameless.yaml',
    ])
  })

  it('yields each object, skips empty documents, and names bad ones without quoting them', () => {
    const entries = [...renderedObjects(manifest)]
    expect(entries.flatMap((e) => ('object' in e ? [`${e.object.kind}/${e.object.namespace ?? '-'}/${e.object.name}`] : []))).toEqual([
      'ConfigMap/-/app',
      'Namespace/ignored-by-the-server/other',
    ])
    const problems = entries.flatMap((e) => ('problem' in e ? [e.problem] : []))
    expect(problems).toEqual([
      { index: 4, source: 'demo/templates/broken.yaml', message: expect.stringMatching(/^is not valid YAML( \(line \d+\))?$/) },
      { index: 5, source: 'demo/templates/list.yaml', message: 'is not a Kubernetes object' },
      { index: 6, source: 'demo/templates/nameless.yaml', message: 'has no apiVersion, kind or metadata.name' },
    ])
    expect(JSON.stringify(entries.filter((e) => 'problem' in e))).not.toContain('aHVudGVyMg')
  })
})
