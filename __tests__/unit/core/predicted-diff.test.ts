// The predicted diff from three renders (base, head, head again): changes as the deployed diff
// shows them, what differs between the two head renders set apart as non-deterministic, CRDs
// apart, and the chart named from → to.

import { describe, expect, it } from 'vitest'
import { predictedDiff, type RenderedRelease } from '../../../src/core/predicted-diff.ts'

function render(data: Record<string, string>, extra = '', chart = 'web@1.0.0'): RenderedRelease {
  const entries = Object.entries(data)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
    .join('\n')
  return { manifest: `---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n${entries}\n${extra}`, hooks: [], crds: [], values: data, chart }
}

describe('predictedDiff', () => {
  it('shows the changes between base and head, and never a path that differs between two renders of head', () => {
    const d = predictedDiff({
      base: render({ greeting: 'hello', token: 'aaa' }),
      head: render({ greeting: 'bonjour', token: 'bbb' }),
      again: render({ greeting: 'bonjour', token: 'ccc' }),
      namespace: 'apps',
      hidden: false,
      notes: [],
    })
    if ('notPredicted' in d) throw new Error(d.notPredicted)
    expect(d.objects).toEqual([
      {
        object: 'ConfigMap apps/web',
        kind: 'ConfigMap',
        change: 'changed',
        paths: [{ path: 'data.greeting', change: 'changed', before: 'hello', after: 'bonjour' }],
      },
    ])
    expect(d.nondeterministic).toEqual(['ConfigMap apps/web data.token'])
    expect(d.headline).toEqual(['changes ConfigMap apps/web'])
  })

  it('drops a whole object head renders only once, and names a chart bump from → to', () => {
    const extra = '---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: once\n'
    const d = predictedDiff({
      base: render({ a: '1' }),
      head: render({ a: '1' }, extra, 'web@1.1.0'),
      again: render({ a: '1' }, '', 'web@1.1.0'),
      namespace: 'apps',
      hidden: false,
      notes: ['n'],
    })
    if ('notPredicted' in d) throw new Error(d.notPredicted)
    expect(d.objects).toEqual([])
    expect(d.nondeterministic).toEqual(['Secret apps/once'])
    expect(d.chart).toBe('web@1.0.0 → web@1.1.0')
    expect(d.notes).toEqual(['n'])
  })

  it('a new release is all additions; hidden shows paths only; CRDs are compared apart', () => {
    const head = {
      ...render({ password: 'p' }),
      crds: [{ manifest: 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x.example.com\n' }],
    }
    const d = predictedDiff({ base: undefined, head, again: head, namespace: 'apps', hidden: true, notes: [] })
    if ('notPredicted' in d) throw new Error(d.notPredicted)
    expect(d.objects.map((o) => [o.object, o.change])).toEqual([['ConfigMap apps/web', 'added']])
    expect(d.crds.map((o) => [o.object, o.change])).toEqual([['CustomResourceDefinition x.example.com', 'added']])
    expect(d.values).toEqual([{ path: 'password', change: 'added' }])
    expect(d.chart).toBe('web@1.0.0')
  })
})
