// Watch mode's reactions, pure: a source change queues its releases unless only its metadata
// changed; annotation mistakes are said once per version; a source gone is either unlabelled
// or deleted, and a deletion triggers optional readers and warns on the others; a release
// change queues it only when a trigger is due, and a new suspension is said once.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import type { Digest, SourceId } from '../../../../src/core/model.ts'
import { SkipReason, type Decision } from '../../../../src/modes/trigger/action.ts'
import { deletedFor, newProblems, releaseChanged, sourceChanged, sourceGone } from '../../../../src/modes/watch/react.ts'
import type { WatchedSource } from '../../../../src/modes/watch/view.ts'

const keys = keysFor('nebius.ai')
const ID: SourceId = 'ConfigMap/apps/values'
const digest = (c: string): Digest => `sha256:${c.repeat(64)}`
const app = { namespace: 'apps', name: 'app' }
const source = (o: Partial<WatchedSource> = {}): WatchedSource => ({
  kind: 'ConfigMap',
  namespace: 'apps',
  name: 'values',
  id: ID,
  key: ID,
  resourceVersion: '1',
  digest: digest('a'),
  annotatedTargets: [app],
  problems: [],
  ...o,
})
const release = (o: { suspend?: boolean; valuesFrom?: { kind: string; name: string; optional?: boolean }[] } = {}) => ({
  ...toHelmRelease({
    metadata: { namespace: 'apps', name: 'app', resourceVersion: '2' },
    spec: { suspend: o.suspend ?? false, valuesFrom: o.valuesFrom ?? [] },
  }),
  key: 'apps/app',
})

describe('sourceChanged', () => {
  it.each([
    ['a new source', undefined, source(), ['log:source added', 'enqueue:apps/app']],
    ['new content', source(), source({ digest: digest('b'), resourceVersion: '2' }), ['log:source changed', 'enqueue:apps/app']],
    [
      'new targets',
      source(),
      source({ annotatedTargets: [app, { namespace: 'apps', name: 'web' }], resourceVersion: '2' }),
      ['log:source changed', 'enqueue:apps/app'],
    ],
    ['metadata only', source(), source({ resourceVersion: '2' }), []],
  ] as const)('%s', (_name, before, after, expected) => {
    const reactions = sourceChanged(before, after, [app], true, 5)
    expect(
      reactions.map((r) =>
        r.kind === 'log' ? `log:${r.message}` : r.kind === 'enqueue' ? `enqueue:${r.releases.map((t) => `${t.namespace}/${t.name}`).join(',')}` : r.kind,
      ),
    ).toEqual(expected)
  })

  it('queues with the time the change was seen, debounced', () => {
    expect(sourceChanged(undefined, source(), [app], true, 5)).toContainEqual({ kind: 'enqueue', releases: [app], at: 5, immediate: false })
  })

  it('says and queues nothing before the first complete sync (its full pass covers everything)', () => {
    expect(sourceChanged(undefined, source(), [app], false, 5)).toEqual([])
  })
})

describe('newProblems', () => {
  it('says each mistake once per version of the source', () => {
    const s = source({ problems: ['bad namespace', 'bad name'] })
    const first = newProblems(s, new Set())
    expect(first.map((p) => p.problem)).toEqual(['bad namespace', 'bad name'])
    expect(newProblems(s, new Set(first.map((p) => p.id)))).toEqual([])
    expect(newProblems({ ...s, resourceVersion: '9' }, new Set(first.map((p) => p.id)))).toHaveLength(2)
  })
})

describe('sourceGone', () => {
  it.each([
    ['unlabelled, seen by the watch', true, 'watch', ['info:source no longer labelled; it triggers nothing now']],
    ['unlabelled, found at start', true, 'start', []],
    ['deleted', false, 'relist', ['warning:source deleted']],
  ] as const)('%s', (_name, stillThere, via, expected) => {
    expect(sourceGone(source(), stillThere, via, [app, app]).map((r) => (r.kind === 'log' ? `${r.level}:${r.message}` : r.kind))).toEqual(expected)
  })

  it('names each release a deletion concerned once', () => {
    const [reaction] = sourceGone(source(), false, 'watch', [app, app, { namespace: 'apps', name: 'web' }])
    expect(reaction).toMatchObject({ kind: 'log', fields: { releases: 'apps/app,apps/web', seenBy: 'watch' } })
  })
})

describe('deletedFor', () => {
  it('triggers a release that reads the source optionally: at once when found at start, debounced when seen live', () => {
    const reader = release({ valuesFrom: [{ kind: 'ConfigMap', name: 'values', optional: true }] })
    expect(deletedFor(reader, source(), keys, undefined)).toMatchObject({ kind: 'enqueue', immediate: true })
    expect(deletedFor(reader, source(), keys, 7)).toMatchObject({ kind: 'enqueue', at: 7, immediate: false })
  })

  it('warns a release that needs the source, and one that the source only named', () => {
    const needs = deletedFor(release({ valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] }), source(), keys, 7)
    expect(needs).toMatchObject({ kind: 'warn', reason: 'SourceDeleted' })
    expect(needs.kind === 'warn' ? needs.message : '').toContain('spec.valuesFrom needs it')
    const named = deletedFor(release(), source(), keys, 7)
    expect(named.kind === 'warn' ? named.message : '').toBe(`${ID}, which names this release in ${keys.targetNames}, was deleted. Not triggered.`)
  })
})

describe('releaseChanged', () => {
  const trigger: Decision = { action: 'trigger', force: false, reset: false, why: 'changed' }
  const suspended: Decision = { action: 'skip', reason: SkipReason.Suspended, message: '' }
  const upToDate: Decision = { action: 'skip', reason: SkipReason.UpToDate, message: '' }

  it.each([
    ['a trigger is due', release(), release(), trigger, ['enqueue']],
    ['up to date (our own patch coming back)', release(), release(), upToDate, []],
    ['just suspended', release(), release({ suspend: true }), suspended, ['log']],
    ['still suspended', release({ suspend: true }), release({ suspend: true }), suspended, []],
    ['suspended when first seen', undefined, release({ suspend: true }), suspended, []],
    ['nothing planned', release(), release(), undefined, []],
  ] as const)('%s', (_name, previous, now, decision, expected) => {
    expect(releaseChanged(previous, now, decision).map((r) => r.kind)).toEqual(expected)
  })
})
