// The linear duplicate-key check must find exactly what the yaml library's own (quadratic)
// check finds, at the same places.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { duplicateKeyOffsets, withUniqueKeys } from '../../../src/core/yaml-keys.ts'

const key = fc.constantFrom('a', 'b', 'c', '"a"', "'b'", '1', '01', 'true', 'null', '~', '? c', '[x]', '{y: 1}', '*r', '1.0')
const scalar = fc.constantFrom('1', 'x', '&r v', '*r', '[]', '{}', 'null')

/** Nested block and flow mappings and sequences with a handful of possibly repeated keys. */
const yamlText: fc.Arbitrary<string> = fc
  .letrec<{ node: string; map: string; seq: string }>((tie) => ({
    node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('map'), tie('seq')),
    map: fc.array(fc.tuple(key, tie('node')), { minLength: 1, maxLength: 5 }).map((pairs) => `{${pairs.map(([k, v]) => `${k}: ${v}`).join(', ')}}`),
    seq: fc.array(tie('node'), { maxLength: 4 }).map((items) => `[${items.join(', ')}]`),
  }))
  .map.chain((flow) => fc.constantFrom(flow, blockOf(flow)))

/** The same mapping in block style when it is flat enough; flow otherwise. */
function blockOf(flow: string): string {
  const inner = flow.slice(1, -1)
  return /[{}[\]]/.test(inner) ? flow : inner.split(', ').join('\n')
}

describe('duplicateKeyOffsets', () => {
  it('agrees with the yaml library on where keys repeat (1,000 cases)', () => {
    let repeats = 0
    fc.assert(
      fc.property(yamlText, (text) => {
        const [strict] = parseAllDocuments(text, { uniqueKeys: true, logLevel: 'silent' })
        const [loose] = parseAllDocuments(text, { uniqueKeys: false, logLevel: 'silent' })
        if (strict === undefined || loose === undefined || !('errors' in strict) || !('errors' in loose)) return
        const others = loose.errors.length
        // Only documents whose other errors are the same compare meaningfully.
        if (strict.errors.filter((e) => e.code !== 'DUPLICATE_KEY').length !== others) return
        const expected = strict.errors.filter((e) => e.code === 'DUPLICATE_KEY').length
        expect(duplicateKeyOffsets(loose).length, text).toBe(expected)
        if (expected > 0) repeats++
        if (others === 0) expect(withUniqueKeys(loose).errors.map((e) => e.code)).toEqual(strict.errors.map((e) => e.code))
      }),
      { numRuns: 1_000 },
    )
    expect(repeats).toBeGreaterThan(100)
  })

  it('names the offset of the repeated key, not the first one', () => {
    const text = 'a: 1\nb: 2\na: 3\n'
    const [doc] = parseAllDocuments(text, { uniqueKeys: false })
    if (doc === undefined || !('errors' in doc)) throw new Error('no document')
    expect(duplicateKeyOffsets(doc)).toEqual([text.lastIndexOf('a:')])
  })

  it('walks 100,000 levels of nesting without exhausting the stack', () => {
    const [doc] = parseAllDocuments('k: v', { uniqueKeys: false })
    if (doc === undefined || !('errors' in doc)) throw new Error('no document')
    // A deep chain built directly: the parser itself would overflow first.
    let node: unknown = doc.createNode({ a: 1, a2: 2 })
    for (let i = 0; i < 100_000; i++) node = doc.createNode([node])
    doc.contents = node as typeof doc.contents
    expect(duplicateKeyOffsets(doc)).toEqual([])
  })
})
