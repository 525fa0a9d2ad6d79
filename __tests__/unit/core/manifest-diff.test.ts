// The deployed diff's comparison: objects matched by kind, namespace and name; list entries by
// name; multi-line strings line by line; chart-label churn folded; a Secret's values never shown.

import { describe, expect, it } from 'vitest'
import { diffManifests, diffValues, headlineOf } from '../../../src/core/manifest-diff.ts'

const deployment = (image: string, replicas: number, chart = 'web-1.0.0', env = 'LOG=info'): string => `---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    helm.sh/chart: ${chart}
    app.kubernetes.io/name: web
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app.kubernetes.io/name: web}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web}
    spec:
      containers:
        - name: sidecar
          image: envoy:1
        - name: web
          image: ${image}
          env:
            - {name: ${env.split('=')[0]}, value: "${env.split('=')[1]}"}
`

const configMap = (body: string): string => `---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data:
  app.conf: |
${body
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`

const secret = (password: string): string => `---
apiVersion: v1
kind: Secret
metadata: {name: web-auth}
data:
  password: ${Buffer.from(password).toString('base64')}
`

describe('diffManifests', () => {
  it('names each changed path, containers matched by name, and folds the chart label a bump rewrites', () => {
    const diff = diffManifests(deployment('web:1', 1), deployment('web:2', 3, 'web-1.1.0'), 'apps')
    expect(diff.folded).toBe(1)
    expect(diff.objects).toEqual([
      {
        object: 'Deployment apps/web',
        kind: 'Deployment',
        change: 'changed',
        paths: [
          { path: 'spec.replicas', change: 'changed', before: '1', after: '3' },
          { path: 'spec.template.spec.containers[name=web].image', change: 'changed', before: 'web:1', after: 'web:2' },
        ],
      },
    ])
    expect(headlineOf(diff)).toEqual(['images: web web:1 → web:2', 'replicas: Deployment apps/web 1 → 3', 'rolls out Deployment apps/web'])
  })

  it('names a Deployment whose only change is its replicas once, in the replicas line', () => {
    const diff = diffManifests(deployment('web:1', 1), deployment('web:1', 3), 'apps')
    expect(headlineOf(diff)).toEqual(['replicas: Deployment apps/web 1 → 3'])
  })

  it('shows a multi-line value line by line, and an object added or removed as a whole', () => {
    const before = configMap('a = 1\nb = 2\nc = 3') + deployment('web:1', 1)
    const after = configMap('a = 1\nb = 20\nc = 3\nd = 4')
    const diff = diffManifests(before, after, 'apps')
    expect(diff.objects).toEqual([
      {
        object: 'ConfigMap apps/web-config',
        kind: 'ConfigMap',
        change: 'changed',
        paths: [{ path: 'data["app.conf"]', change: 'changed', lines: ['- b = 2', '+ b = 20', '+ d = 4'] }],
      },
      { object: 'Deployment apps/web', kind: 'Deployment', change: 'removed', paths: [] },
    ])
    expect(headlineOf(diff)).toEqual(['deletes Deployment apps/web', 'changes ConfigMap apps/web-config'])
  })

  it('never shows a Secret’s value, only that a key changed', () => {
    const diff = diffManifests(secret('hunter2'), secret('correct horse'), 'apps')
    expect(diff.objects).toEqual([{ object: 'Secret apps/web-auth', kind: 'Secret', change: 'changed', paths: [{ path: 'data.password', change: 'changed' }] }])
    expect(JSON.stringify(diff)).not.toMatch(/hunter2|horse|aHVudGVy|Y29ycmVjd/)
  })

  it('says a change of an immutable field, which fails the upgrade', () => {
    const before = deployment('web:1', 1)
    const after = before.replace('matchLabels: {app.kubernetes.io/name: web}', 'matchLabels: {app: web}')
    expect(headlineOf(diffManifests(before, after, 'apps'))[0]).toMatch(/^changes immutable fields: Deployment apps\/web spec\.selector\.matchLabels/)
  })

  it('reads a manifest that does not parse as no objects, never throws', () => {
    expect(diffManifests('kind: [', deployment('web:1', 1), 'apps').objects.map((o) => [o.object, o.change])).toEqual([['Deployment apps/web', 'added']])
  })
})

describe('diffValues', () => {
  it('shows values, or only their paths when they may hold a Secret’s', () => {
    expect(diffValues({ image: { tag: '1' } }, { image: { tag: '2' }, debug: true }, false)).toEqual([
      { path: 'debug', change: 'added', after: 'true' },
      { path: 'image.tag', change: 'changed', before: '1', after: '2' },
    ])
    expect(diffValues({ password: 'a' }, { password: 'b' }, true)).toEqual([{ path: 'password', change: 'changed' }])
  })
})
