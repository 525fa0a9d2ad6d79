// Watch mode's change handlers on a real view, with a recording queue and log: a source change
// queues its releases once the view is complete and this replica leads; before that, nothing
// (the full pass covers it); a deletion is checked; a release change queues only when due; an
// annotation mistake is said once per version.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { createChangeHandlers } from '../../../../src/modes/watch/changes.ts'
import { createEventLog, type Level } from '../../../../src/modes/watch/log.ts'
import { parseRelease, parseSource, WatchView, type ViewOptions, type WatchedSource } from '../../../../src/modes/watch/view.ts'

const keys = keysFor('nebius.ai')
const options: ViewOptions = {
  keys,
  defaultNamespace: 'flux-system',
  crossNamespaceTargets: [],
  semanticDigest: true,
  discover: true,
  digestKey: { bytes: new Uint8Array(32).fill(7) },
}

function source(data: Record<string, string>, rv: string, annotations: Record<string, string> = {}): WatchedSource {
  const s = parseSource('ConfigMap', { metadata: { namespace: 'apps', name: 'values', resourceVersion: rv, annotations }, data }, options)
  if (s === undefined) throw new Error('bad source')
  return s
}

function setup(state: { ready: boolean; leading: boolean }) {
  const view = new WatchView(options)
  const queued: string[] = []
  const lines: string[] = []
  const gone: string[] = []
  const warnings: string[] = []
  const log = createEventLog('text', { write: (_level: Level, line: string) => void lines.push(line) })
  const handlers = createChangeHandlers({
    view,
    log,
    events: { warn: async (release, reason) => void warnings.push(`${release.name}:${reason}`) },
    queue: { add: (key, at, o) => void queued.push(`${key}@${at ?? '-'}${o?.immediate ? '!' : ''}`) },
    ready: () => state.ready,
    leading: () => state.leading,
    checkGone: async (s, via) => void gone.push(`${s.id} via ${via}`),
  })
  const reader = parseRelease({
    metadata: { namespace: 'apps', name: 'app', resourceVersion: '1' },
    spec: { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] },
  })
  if (reader === undefined) throw new Error('bad release')
  view.upsertRelease(reader)
  return { view, handlers, queued, lines, gone, warnings, reader }
}

describe('source changes', () => {
  it('queue the releases that read the source, with the time seen, once synced and leading', () => {
    const t = setup({ ready: true, leading: true })
    t.handlers.onSource('trigger', { type: 'added', object: source({ a: '1' }, '1') }, 7)
    t.handlers.onSource('trigger', { type: 'modified', object: source({ a: '1' }, '2'), previous: source({ a: '1' }, '1') }, 8)
    t.handlers.onSource('trigger', { type: 'modified', object: source({ a: '2' }, '3'), previous: source({ a: '1' }, '2') }, 9)
    expect(t.queued).toEqual(['apps/app@7', 'apps/app@9'])
    expect(t.lines.filter((l) => l.startsWith('source'))).toHaveLength(2)
  })

  it('queue nothing before the view is complete, nor while standing by, yet keep the view current', () => {
    for (const state of [
      { ready: false, leading: true },
      { ready: true, leading: false },
    ]) {
      const t = setup(state)
      t.handlers.onSource('trigger', { type: 'added', object: source({ a: '1' }, '1') }, 7)
      expect(t.queued).toEqual([])
      expect(t.view.sourceCount).toBe(1)
    }
  })

  it('say an annotation mistake once per version of the source', () => {
    const t = setup({ ready: true, leading: true })
    const bad = { [keys.targetNames]: 'Not_A_Name' }
    t.handlers.onSource('trigger', { type: 'added', object: source({ a: '1' }, '1', bad) }, 1)
    t.handlers.onSource('trigger', { type: 'modified', object: source({ a: '1' }, '1', bad), previous: source({ a: '1' }, '1', bad) }, 2)
    t.handlers.onSource('trigger', { type: 'modified', object: source({ a: '1' }, '2', bad), previous: source({ a: '1' }, '1', bad) }, 3)
    expect(t.lines.filter((l) => l.includes('source annotation ignored'))).toHaveLength(2)
  })

  it('check a deleted source only once the view is complete', () => {
    for (const ready of [false, true]) {
      const t = setup({ ready, leading: true })
      const s = source({ a: '1' }, '1')
      t.handlers.onSource('trigger', { type: 'added', object: s }, 1)
      t.handlers.onSource('trigger', { type: 'deleted', object: s, via: 'relist' }, 2)
      expect(t.view.sourceCount).toBe(0)
      expect(t.gone).toEqual(ready ? ['ConfigMap/apps/values via relist'] : [])
    }
  })
})

describe('release changes', () => {
  it('queue a release whose recorded digest is stale, and not one up to date', () => {
    const t = setup({ ready: true, leading: true })
    const s = source({ a: '1' }, '1')
    t.view.upsertSource('trigger', s)
    const stale = { ...t.reader, resourceVersion: '2' }
    t.handlers.onRelease({ type: 'modified', object: stale, previous: t.reader })
    const upToDate = parseRelease({
      metadata: { namespace: 'apps', name: 'app', resourceVersion: '3', annotations: { [keys.configDigest]: JSON.stringify({ [s.id]: s.digest }) } },
      spec: { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] },
    })
    if (upToDate === undefined) throw new Error('bad release')
    t.handlers.onRelease({ type: 'modified', object: upToDate, previous: stale })
    expect(t.queued).toEqual(['apps/app@-'])
    t.handlers.onRelease({ type: 'deleted', object: upToDate, via: 'watch' })
    expect(t.view.releaseCount).toBe(0)
  })
})

describe('carrying reactions out', () => {
  it('writes warnings, logs, and queues unguarded consequences with their debounce choice', async () => {
    const t = setup({ ready: false, leading: false })
    const release = toHelmRelease({ metadata: { namespace: 'apps', name: 'app' }, spec: {} })
    await t.handlers.carry(
      [
        { kind: 'log', level: 'warning', message: 'source deleted', fields: {} },
        { kind: 'warn', release, reason: 'SourceDeleted', message: 'gone' },
        { kind: 'enqueue', releases: [release], at: undefined, immediate: true },
      ],
      false,
    )
    expect(t.lines).toEqual(['warning: source deleted'])
    expect(t.warnings).toEqual(['app:SourceDeleted'])
    expect(t.queued).toEqual(['apps/app@-!'])
  })

  it('queues every watched source’s releases at once on a full pass, only when synced and leading', () => {
    const t = setup({ ready: true, leading: true })
    t.view.upsertSource('trigger', source({ a: '1' }, '1'))
    t.handlers.fullPass('initial sync')
    expect(t.queued).toEqual(['apps/app@-!'])
    const idle = setup({ ready: true, leading: false })
    idle.view.upsertSource('trigger', source({ a: '1' }, '1'))
    idle.handlers.fullPass('initial sync')
    expect(idle.queued).toEqual([])
  })
})
