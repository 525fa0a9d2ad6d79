// Which keys a commit changed: leaves of a YAML value for ConfigMaps (old → new, shortened),
// key names only for Secrets, never their values.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { digestAndEncoding } from '../../../src/core/digest.ts'
import { addedKeys, keyChanges } from '../../../src/core/key-changes.ts'
import type { KeyChange, SourceManifest } from '../../../src/core/model.ts'

function source(kind: 'ConfigMap' | 'Secret', data: Record<string, string>): SourceManifest {
  return {
    kind,
    namespace: 'apps',
    name: 'web',
    origin: { file: 'a.yaml', line: 1 },
    labelled: true,
    annotatedTargets: [],
    encrypted: false,
    digest: 'sha256:0',
    content: { data },
  }
}

const SEMANTIC = { semantic: true }

describe('keyChanges', () => {
  it('lists the changed leaves of a YAML value, old → new', () => {
    const before = source('ConfigMap', { 'values.yaml': 'image:\n  tag: "1.0"\nreplicas: 2\nlog: info\n', plain: 'a' })
    const after = source('ConfigMap', { 'values.yaml': 'image:\n  tag: "1.1"\nreplicas: 2\ndebug: true\n', plain: 'a', extra: 'x' })
    expect(keyChanges(before, after, SEMANTIC)).toEqual([
      { key: 'extra', change: 'added', after: 'x' },
      { key: 'values.yaml', path: 'debug', change: 'added', after: 'true' },
      { key: 'values.yaml', path: 'image.tag', change: 'modified', before: '"1.0"', after: '"1.1"' },
      { key: 'values.yaml', path: 'log', change: 'removed', before: '"info"' },
    ])
  })

  it('ignores a comment-only edit under the semantic digest, shows a plain text change shortened', () => {
    expect(keyChanges(source('ConfigMap', { v: 'a: 1\n' }), source('ConfigMap', { v: '# note\na:   1\n' }), SEMANTIC)).toEqual([])
    const long = 'x'.repeat(100)
    expect(keyChanges(source('ConfigMap', { url: 'http://a' }), source('ConfigMap', { url: long }), SEMANTIC)).toEqual([
      { key: 'url', change: 'modified', before: 'http://a', after: `${'x'.repeat(59)}…` },
    ])
    expect(keyChanges(source('ConfigMap', { s: 'one\ntwo' }), source('ConfigMap', { s: 'one\ntwo\nthree' }), SEMANTIC)).toEqual([
      { key: 's', change: 'modified', before: '(2 lines)', after: '(3 lines)' },
    ])
  })

  it('names the changed keys of a Secret and nothing else', () => {
    const changes = keyChanges(
      source('Secret', { password: 'hunter2', user: 'admin' }),
      source('Secret', { password: 'hunter3', user: 'admin', token: 't0k' }),
      SEMANTIC,
    )
    expect(changes).toEqual([
      { key: 'password', change: 'modified' },
      { key: 'token', change: 'added' },
    ])
    expect(JSON.stringify(changes)).not.toMatch(/hunter|t0k/)
  })

  it('sums up a value with many changed leaves', () => {
    const yaml = (n: number) => Array.from({ length: 30 }, (_, i) => `k${i}: ${n}`).join('\n')
    const changes = keyChanges(source('ConfigMap', { v: yaml(1) }), source('ConfigMap', { v: yaml(2) }), SEMANTIC)
    expect(changes).toHaveLength(21)
    expect(changes[20]).toEqual({ key: 'v', path: '…and 10 more', change: 'modified' })
  })

  it('lists the keys of an added source by name', () => {
    expect(addedKeys(source('Secret', { b: '1', a: '2' }))).toEqual([
      { key: 'a', change: 'added' },
      { key: 'b', change: 'added' },
    ])
  })
})

describe('leaves read from the digest', () => {
  // Values as Helm values files hold them: nested mappings of strings, numbers, booleans, null, lists.
  const name = fc.stringMatching(/^[a-z][a-zA-Z0-9_-]{0,6}$/)
  const leaf = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null))
  const tree = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(name, tie('node'), { maxKeys: 3 })),
  })).node
  const values = fc.dictionary(name, tree, { minKeys: 1, maxKeys: 5 }).map((object) => stringify(object, { version: '1.1' }))

  // A list's mappings are shown with their keys sorted, as the digest wrote them: compared as JSON
  // values (a shortened one only by being shortened).
  const shown = (text: string | undefined): unknown => {
    if (text === undefined || text.endsWith('…')) return text === undefined ? undefined : '…'
    try {
      return JSON.parse(text) as unknown
    } catch {
      return text // a whole value's text ("(3 lines)"), not a leaf
    }
  }
  const comparable = (change: KeyChange): unknown => ({ ...change, before: shown(change.before), after: shown(change.after) })

  it('lists the same changed leaves from the canonical JSON the digest made as from a second YAML parse', () => {
    fc.assert(
      fc.property(values, values, (a, b) => {
        const read = (text: string): SourceManifest => ({
          ...source('ConfigMap', { 'values.yaml': text }),
          ...digestAndEncoding({ data: { 'values.yaml': text } }, SEMANTIC),
        })
        const withCanonical = keyChanges(read(a), read(b), SEMANTIC)
        const reparsed = keyChanges(source('ConfigMap', { 'values.yaml': a }), source('ConfigMap', { 'values.yaml': b }), SEMANTIC)
        expect(withCanonical.map(comparable)).toEqual(reparsed.map(comparable))
      }),
    )
  })

  it('shows a value the digest read as Helm does: `1:20` stays a string (no base-60 numbers)', () => {
    const read = (text: string): SourceManifest => ({ ...source('ConfigMap', { v: text }), ...digestAndEncoding({ data: { v: text } }, SEMANTIC) })
    expect(keyChanges(read('port: 1:20\nx: 1\n'), read('port: 1:20\nx: 2\n'), SEMANTIC)).toEqual([
      { key: 'v', path: 'x', change: 'modified', before: '1', after: '2' },
    ])
    expect(keyChanges(read('port: 1:20\n'), read('port: 1:21\n'), SEMANTIC)).toEqual([
      { key: 'v', path: 'port', change: 'modified', before: '"1:20"', after: '"1:21"' },
    ])
  })
})
