// What the watch knows, and what it plans: the same target and digest rules as trigger mode.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { keysFor } from '../../../../src/core/keys.ts'
import {
  absentDigest,
  AnnotationMemo,
  parseRelease,
  parseSource,
  parseSourceId,
  WatchView,
  type ViewOptions,
  type WatchedRelease,
} from '../../../../src/modes/watch/view.ts'
import { liveDigest } from '../../../../src/core/digest.ts'

const keys = keysFor('nebius.ai')
const options: ViewOptions = {
  keys,
  defaultNamespace: 'flux-system',
  crossNamespaceTargets: [],
  semanticDigest: true,
  discover: true,
  digestKey: { bytes: new Uint8Array(32).fill(7) },
}

function cm(namespace: string, name: string, data: Record<string, string>, annotations: Record<string, string> = {}, rv = '1') {
  return { metadata: { namespace, name, resourceVersion: rv, labels: { [keys.triggerLabel]: 'true' }, annotations }, data }
}

function hr(
  namespace: string,
  name: string,
  valuesFrom: { kind: string; name: string; optional?: boolean }[],
  extra: { annotations?: Record<string, string>; suspend?: boolean } = {},
): WatchedRelease {
  const r = parseRelease({
    metadata: { namespace, name, resourceVersion: '5', annotations: extra.annotations ?? {} },
    spec: { valuesFrom, suspend: extra.suspend ?? false },
  })
  if (r === undefined) throw new Error('bad release')
  return r
}

/** Reading annotations: every namespace may be targeted (cross-namespace-targets: *), the rule has its own test. */
const anyNamespace: ViewOptions = { ...options, crossNamespaceTargets: ['*'] }

function source(...args: Parameters<typeof cm>) {
  const s = parseSource('ConfigMap', cm(...args), anyNamespace)
  if (s === undefined) throw new Error('bad source')
  return s
}

describe('parseSource', () => {
  it('digests live content with the engine function and reads annotation targets like a manifest', () => {
    const s = source('apps', 'v', { 'values.yaml': 'a: 1 # note\n' }, { [keys.targetNames]: ' api , worker,', [keys.targetNamespace]: 'prod' })
    expect(s.id).toBe('ConfigMap/apps/v')
    expect(s.digest).toBe(liveDigest({ kind: 'ConfigMap', data: { 'values.yaml': 'a: 1\n' }, binaryData: {}, labels: {} }, true))
    expect(s.annotatedTargets).toEqual([
      { namespace: 'prod', name: 'api' },
      { namespace: 'prod', name: 'worker' },
    ])
    expect(s.problems).toEqual([])
  })

  it('names annotation mistakes and ignores the bad names', () => {
    const s = source('apps', 'v', {}, { [keys.targetNames]: 'Not_Valid, ok' })
    expect(s.annotatedTargets).toEqual([{ namespace: 'flux-system', name: 'ok' }])
    expect(s.problems.join()).toMatch(/Not_Valid/)
  })

  it('ignores objects without a name or namespace', () => {
    expect(parseSource('Secret', { metadata: { name: 'x' } }, options)).toBeUndefined()
  })

  it('I1: targets another namespace only where cross-namespace-targets allows it; a refused target is said, once per change', () => {
    const annotations = { [keys.targetNames]: 'api, local', [keys.targetNamespace]: 'flux-system' }
    const refused = parseSource('ConfigMap', cm('team-a', 'v', {}, annotations), options)
    expect(refused?.annotatedTargets).toEqual([])
    expect(refused?.problems).toEqual([
      'ConfigMap/team-a/v names the HelmRelease flux-system/api, outside its own namespace team-a: not triggered; to allow it, add team-a=flux-system (or *=flux-system) to cross-namespace-targets',
      'ConfigMap/team-a/v names the HelmRelease flux-system/local, outside its own namespace team-a: not triggered; to allow it, add team-a=flux-system (or *=flux-system) to cross-namespace-targets',
    ])
    const own = parseSource('ConfigMap', cm('team-a', 'v', {}, { [keys.targetNames]: 'api', [keys.targetNamespace]: 'team-a' }), options)
    expect(own?.annotatedTargets).toEqual([{ namespace: 'team-a', name: 'api' }])
    const allowed = parseSource('ConfigMap', cm('team-a', 'v', {}, annotations), { ...options, crossNamespaceTargets: ['team-a=flux-system'] })
    expect(allowed?.annotatedTargets.map((t) => t.name)).toEqual(['api', 'local'])
    expect(allowed?.problems).toEqual([])
  })
})

describe('WatchView', () => {
  it('targets annotated releases and, with discover, the releases whose valuesFrom names the source', () => {
    const view = new WatchView(options)
    view.upsertRelease(hr('apps', 'reader', [{ kind: 'ConfigMap', name: 'v' }]))
    view.upsertRelease(hr('apps', 'other', [{ kind: 'Secret', name: 'v' }]))
    const targets = view.upsertSource('trigger', source('apps', 'v', { a: '1' }, { [keys.targetNames]: 'named', [keys.targetNamespace]: 'apps' }))
    expect(targets.map((t) => `${t.namespace}/${t.name}`).sort()).toEqual(['apps/named', 'apps/reader'])
    const noDiscover = new WatchView({ ...options, discover: false })
    noDiscover.upsertRelease(hr('apps', 'reader', [{ kind: 'ConfigMap', name: 'v' }]))
    expect(noDiscover.upsertSource('trigger', source('apps', 'v', { a: '1' }))).toEqual([])
  })

  it('plans a release with every watched source that triggers it, and decides up to date from config-digest', () => {
    const view = new WatchView(options)
    const a = source('apps', 'a', { v: '1' })
    const b = source('apps', 'b', { v: '1' })
    view.upsertSource('trigger', a)
    view.upsertSource('watch', b)
    const recorded = JSON.stringify({ [a.id]: a.digest, [b.id]: b.digest })
    view.upsertRelease(
      hr(
        'apps',
        'app',
        [
          { kind: 'ConfigMap', name: 'a' },
          { kind: 'ConfigMap', name: 'b' },
          { kind: 'ConfigMap', name: 'unwatched' },
        ],
        { annotations: { [keys.configDigest]: recorded } },
      ),
    )
    const plan = view.plan({ namespace: 'apps', name: 'app' })
    expect(plan.sources.map((s) => s.id)).toEqual([a.id, b.id])
    expect(view.precheck(plan)).toMatchObject({ action: 'skip', reason: 'UpToDate' })
    view.upsertSource('trigger', source('apps', 'a', { v: '2' }, {}, '2'))
    expect(view.precheck(view.plan({ namespace: 'apps', name: 'app' }))).toMatchObject({ action: 'trigger', why: `${a.id} changed` })
  })

  it('skips a suspended release and never forces', () => {
    const view = new WatchView(options)
    view.upsertSource('trigger', source('apps', 'a', { v: '1' }))
    view.upsertRelease(hr('apps', 'app', [{ kind: 'ConfigMap', name: 'a' }], { suspend: true }))
    expect(view.precheck(view.plan({ namespace: 'apps', name: 'app' }))).toMatchObject({ action: 'skip', reason: 'Suspended' })
  })

  it('keeps a source that carries both labels until neither selector holds it', () => {
    const view = new WatchView(options)
    const s = source('apps', 'a', { v: '1' })
    view.upsertSource('trigger', s)
    view.upsertSource('watch', s)
    expect(view.removeSource('trigger', s.id)).toBeUndefined()
    expect(view.source(s.id)).toBeDefined()
    expect(view.removeSource('watch', s.id)?.id).toBe(s.id)
    expect(view.source(s.id)).toBeUndefined()
    expect(view.sourceCount).toBe(0)
  })

  it('returns old and new targets when the annotation moves, so the old target is re-planned too', () => {
    const view = new WatchView(options)
    view.upsertSource('trigger', source('apps', 'a', { v: '1' }, { [keys.targetNames]: 'one', [keys.targetNamespace]: 'apps' }))
    const targets = view.upsertSource('trigger', source('apps', 'a', { v: '1' }, { [keys.targetNames]: 'two', [keys.targetNamespace]: 'apps' }, '2'))
    expect(targets.map((t) => t.name).sort()).toEqual(['one', 'two'])
    expect(view.plan({ namespace: 'apps', name: 'one' }).sources).toEqual([])
    expect(view.plan({ namespace: 'apps', name: 'two' }).sources).toHaveLength(1)
  })

  it('plans a deleted source read with optional: true as absent content, and only for optional readers', () => {
    const view = new WatchView(options)
    const s = source('apps', 'extra', { v: '1' })
    view.upsertRelease(hr('apps', 'opt', [{ kind: 'ConfigMap', name: 'extra', optional: true }]))
    view.upsertRelease(hr('apps', 'needs', [{ kind: 'ConfigMap', name: 'extra' }]))
    view.upsertSource('trigger', s)
    view.removeSource('trigger', s.id)
    view.markAbsent(s)
    expect(view.plan({ namespace: 'apps', name: 'opt' }).sources).toEqual([{ id: s.id, digest: absentDigest(true), encrypted: false }])
    expect(
      view
        .allTargets()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['needs', 'opt'])
    // Back again: planned with its content.
    view.upsertSource('trigger', s)
    expect(view.plan({ namespace: 'apps', name: 'opt' }).sources[0]?.digest).toBe(s.digest)
  })

  it('cannot precheck a release outside its view (the engine reads it instead)', () => {
    const view = new WatchView(options)
    view.upsertSource('trigger', source('apps', 'a', { v: '1' }, { [keys.targetNames]: 'elsewhere', [keys.targetNamespace]: 'other' }))
    expect(view.precheck(view.plan({ namespace: 'other', name: 'elsewhere' }))).toBeUndefined()
  })

  it('finds the readers of a source from its index as a scan of every release would, through any sequence of release changes', () => {
    const names = ['a', 'b', 'c']
    const ref = fc.record({ kind: fc.constantFrom('ConfigMap', 'Secret'), name: fc.constantFrom(...names) })
    const op = fc.oneof(
      fc.record({ namespace: fc.constantFrom('x', 'y'), name: fc.constantFrom('r1', 'r2', 'r3'), reads: fc.array(ref, { maxLength: 3 }) }),
      fc.record({ namespace: fc.constantFrom('x', 'y'), name: fc.constantFrom('r1', 'r2', 'r3') }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const view = new WatchView(options)
        for (const o of ops) {
          // A release with reads is added or changed; one without is removed.
          if ('reads' in o) view.upsertRelease(hr(o.namespace, o.name, o.reads))
          else view.removeRelease(`${o.namespace}/${o.name}`)
        }
        for (const namespace of ['x', 'y'])
          for (const kind of ['ConfigMap', 'Secret'] as const)
            for (const name of names) {
              const scanned = view.releases().filter((r) => r.namespace === namespace && r.valuesFrom.some((v) => v.kind === kind && v.name === name))
              expect(
                view
                  .readersOf({ kind, namespace, name })
                  .map((r) => r.key)
                  .sort(),
              ).toEqual(scanned.map((r) => r.key).sort())
            }
      }),
    )
  })
})

describe('parseSourceId', () => {
  it('reads back the ids config-digest records, and nothing else', () => {
    expect(parseSourceId('Secret/apps/db')).toEqual({ kind: 'Secret', namespace: 'apps', name: 'db', id: 'Secret/apps/db' })
    for (const bad of ['Deployment/apps/x', 'ConfigMap/apps', 'ConfigMap//x', 'ConfigMap/a/b/c', '']) expect(parseSourceId(bad)).toBeUndefined()
  })
})

describe('AnnotationMemo', () => {
  it('reads a source’s annotations again only when they changed, and gives the same reading as without it', () => {
    const memo = new AnnotationMemo()
    const annotations = { [keys.targetNames]: 'api', [keys.targetNamespace]: 'prod' }
    const read = (data: Record<string, string>, a: Record<string, string>, rv: string) =>
      parseSource('ConfigMap', cm('apps', 'v', data, a, rv), anyNamespace, memo)
    const first = read({ v: '1' }, annotations, '1')
    const second = read({ v: '2' }, annotations, '2')
    expect(second?.annotatedTargets).toBe(first?.annotatedTargets) // reused, not parsed again
    expect(second?.digest).not.toBe(first?.digest)
    expect(second).toEqual(parseSource('ConfigMap', cm('apps', 'v', { v: '2' }, annotations, '2'), anyNamespace))
    const renamed = read({ v: '2' }, { ...annotations, [keys.targetNames]: 'web' }, '3')
    expect(renamed?.annotatedTargets).toEqual([{ namespace: 'prod', name: 'web' }])
  })
})
