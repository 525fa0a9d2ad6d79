// The fast loader must give exactly what the `yaml` library gives, or nothing (then `yaml`
// parses): the same documents, the same values with the same types (bigint, -0, NaN, dates), the
// same content offsets, and never a value for text `yaml` calls invalid. Checked on generated
// documents full of the scalars the two YAML versions read differently, under the three rule sets
// the product uses (manifests: YAML 1.2 core; values for digests and for changed leaves: YAML 1.1), and on every
// YAML file of the repository's fixtures.

import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments, type DocumentOptions, type ParseOptions, type SchemaOptions } from 'yaml'
import { CANONICAL_FOLD, canonicalJson, canonicalYaml, VALUE_PARSE_OPTIONS } from '../../../src/core/digest.ts'
import { LEAF_PARSE_OPTIONS } from '../../../src/core/key-changes.ts'
import { parseManifestFile } from '../../../src/core/manifest.ts'
import { duplicateKeyOffsets } from '../../../src/core/yaml-keys.ts'
import { foldOnlyDocument, lineCounter, loadDocuments, loadOnlyDocument, yamlRules } from '../../../src/core/yaml-load.ts'
import { releaseManifest, valuesManifest } from '../../../bench/plan.ts'

type Options = ParseOptions & DocumentOptions & SchemaOptions
const MANIFEST_OPTIONS: Options = { uniqueKeys: false, prettyErrors: false, logLevel: 'silent' }
const RULE_SETS = [
  { name: 'manifests (YAML 1.2 core)', options: MANIFEST_OPTIONS, rules: yamlRules(MANIFEST_OPTIONS) },
  { name: 'values (YAML 1.1, big integers)', options: { ...VALUE_PARSE_OPTIONS, logLevel: 'silent' as const }, rules: yamlRules(VALUE_PARSE_OPTIONS) },
  { name: 'changed leaves (YAML 1.1, sexagesimal)', options: LEAF_PARSE_OPTIONS, rules: yamlRules(LEAF_PARSE_OPTIONS) },
]

/** A value with every type spelled out: 1 and 1n, 0 and -0, key order, dates. */
function typed(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value)
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'boolean') return String(value)
  if (value instanceof Date) return `Date(${value.getTime()})`
  if (Array.isArray(value)) return `[${value.map(typed).join(',')}]`
  if (typeof value === 'object') {
    const proto: unknown = Object.getPrototypeOf(value)
    const entries = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${typed(v)}`)
    return `${proto === Object.prototype ? '' : 'exotic'}{${entries.join(',')}}`
  }
  return `${typeof value}(${String(value)})`
}

/**
 * What `yaml` gives for the text: each document's value and content offset, or 'invalid' when a
 * document has an error (duplicate keys count, as the product checks them).
 */
function viaYaml(text: string, options: Options): { value: string; offset: number | undefined }[] | 'invalid' {
  const docs = parseAllDocuments(text, options)
  if (!Array.isArray(docs)) return []
  const out: { value: string; offset: number | undefined }[] = []
  for (const doc of docs) {
    if (doc.errors.length > 0 || duplicateKeyOffsets(doc).length > 0) return 'invalid'
    const empty = doc.contents === null || (doc.contents.range[0] === doc.contents.range[1] && doc.contents.toJSON() === null)
    out.push(empty ? { value: 'empty', offset: undefined } : { value: typed(doc.toJS({ maxAliasCount: 100 })), offset: doc.contents?.range[0] })
  }
  return out
}

/** Checks one text under one rule set; true when the fast loader answered. */
function agrees(text: string, set: (typeof RULE_SETS)[number]): boolean {
  const fast = loadDocuments(text, set.rules)
  if (fast === undefined) return false
  const expected = viaYaml(text, set.options)
  expect(expected, `yaml calls this invalid, the fast loader read it:\n${text}`).not.toBe('invalid')
  const actual = fast.map((d) => (d.empty ? { value: 'empty', offset: undefined } : { value: typed(d.value), offset: d.offset }))
  expect(actual, text).toEqual(expected)
  return true
}

// Scalars the two YAML versions, and the two loaders, could read differently.
const PLAIN = [
  'yes',
  'no',
  'on',
  'off',
  'y',
  'n',
  'Y',
  'N',
  'Yes',
  'NO',
  'On',
  'OFF',
  'true',
  'True',
  'TRUE',
  'false',
  'False',
  'null',
  'Null',
  'NULL',
  '~',
  '0',
  '-0',
  '+1',
  '-12',
  '012',
  '08',
  '0o17',
  '0x1F',
  '0X1f',
  '0b101',
  '-0b1',
  '1_000',
  '0_',
  '0x_1',
  '1e3',
  '1E-3',
  'e0',
  'E5',
  '.e1',
  '-e2',
  '_1',
  '1__',
  '1.0',
  '-1.50',
  '.5',
  '5.',
  '-.5e-3',
  '.',
  '+.inf',
  '-.Inf',
  '.INF',
  '.nan',
  '.NaN',
  'NaN',
  'Infinity',
  '1:20',
  '-1:20:30',
  '1:20.5',
  '2001-12-14',
  '2001-12-14t21:59:43.10-05:00',
  '2001-12-14 21:59:43.10 -5',
  '123456789012345678901234',
  '9007199254740993',
  '0.1',
  'a b',
  'http://x:80/y',
  'a#b',
  'x-y',
  'v1',
  'helm.toolkit.fluxcd.io/v2',
]
const QUOTED = ["'yes'", '"1"', "'~'", '"a\\tb\\u00e9"', "'it''s'", '""', "''", '"line\\nbreak"', '"\\x41"']
const scalar = fc.oneof(fc.constantFrom(...PLAIN), fc.constantFrom(...QUOTED), fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/))
const key = fc.oneof({ weight: 3, arbitrary: fc.stringMatching(/^[a-z][a-zA-Z0-9._-]{0,10}$/) }, { weight: 1, arbitrary: scalar })

interface Tree {
  readonly kind: 'scalar' | 'map' | 'seq' | 'flow' | 'block'
  readonly text?: string
  readonly items?: readonly (readonly [string, Tree])[] | readonly Tree[]
}
const FLOWS = ['[]', '{}', '[a, 1, yes]', '{a: 1, b: ~}', '[0x1F, "q"]']
const BLOCKS = ['|\n  a\n  b\n', '>-\n  folded\n  text\n', '|+\n  kept\n\n', '|2\n   indented\n']

/** Text of 1 to 3 documents (or only one) of block YAML made of these scalars, keys and flow collections. */
function yamlText(scalars: fc.Arbitrary<string>, keys: fc.Arbitrary<string>, flows: readonly string[], only = false): fc.Arbitrary<string> {
  const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree; map: Tree; seq: Tree; leaf: Tree }>((tie) => ({
    leaf: fc.oneof(
      { weight: 6, arbitrary: scalars.map((text) => ({ kind: 'scalar' as const, text })) },
      { weight: 1, arbitrary: fc.constantFrom(...flows).map((text) => ({ kind: 'flow' as const, text })) },
      { weight: 1, arbitrary: fc.constantFrom(...BLOCKS).map((text) => ({ kind: 'block' as const, text })) },
    ),
    node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('map'), tie('seq')),
    map: fc.array(fc.tuple(keys, tie('node')), { minLength: 1, maxLength: 5 }).map((items) => ({ kind: 'map' as const, items })),
    seq: fc.array(tie('node'), { minLength: 1, maxLength: 4 }).map((items) => ({ kind: 'seq' as const, items })),
  })).map
  const document = fc
    .tuple(tree, fc.constantFrom('', '# a comment\n', '\n\n'), fc.constantFrom('map', 'seq'))
    .map(
      ([t, lead, root]) =>
        lead +
        render(
          root === 'map' && t.kind !== 'map' ? { kind: 'map', items: [['root', t]] } : t.kind === 'map' || t.kind === 'seq' ? t : { kind: 'seq', items: [t] },
          0,
        ).replace(/^\n/, ''),
    )
  return fc
    .tuple(
      fc.array(document, { minLength: 1, maxLength: only ? 1 : 3 }),
      fc.constantFrom('', '---\n'),
      only ? fc.constant('') : fc.constantFrom('', '---\n', '---\n# only a comment\n'),
    )
    .map(([docs, start, end]) => start + docs.join('---\n') + end)
}

/** Block YAML for a tree at an indent; a block scalar's text is re-indented under its parent. */
function render(node: Tree, indent: number): string {
  const pad = ' '.repeat(indent)
  if (node.kind === 'scalar' || node.kind === 'flow') return ` ${node.text ?? ''}\n`
  if (node.kind === 'block') {
    const [header, ...lines] = (node.text ?? '').split('\n')
    return ` ${header}\n${lines.map((l) => (l === '' ? '' : pad + l)).join('\n')}`
  }
  if (node.kind === 'map') return `\n${(node.items as readonly (readonly [string, Tree])[]).map(([k, v]) => `${pad}${k}:${render(v, indent + 2)}`).join('')}`
  return `\n${(node.items as readonly Tree[]).map((v) => `${pad}-${render(v, indent + 2)}`).join('')}`
}

const text = yamlText(scalar, key, FLOWS)
// Edits that leave the common case: the fast loader must step aside or still agree.
const INSERTS = [
  '&a ',
  '*a',
  '!!str ',
  '!local ',
  '<<: {x: 1}\n',
  '%YAML 1.1\n---\n',
  ': x',
  ' #',
  '- ',
  '? complex\n: key\n',
  '__proto__: 1\n',
  '~: v\n',
  '"": v\n',
]
const CHARACTERS = [
  '\t',
  ' ',
  '  ',
  '\n',
  '\r\n',
  '\r',
  '---',
  '...',
  '#',
  ':',
  '-',
  '"',
  "'",
  '|',
  '>',
  '[',
  ']',
  '{',
  '}',
  ',',
  '?',
  '%',
  '@',
  '`',
  '\\',
  '\u00a0',
  '\ufeff',
]
const insertion = fc.tuple(fc.constantFrom(...INSERTS, ...CHARACTERS), fc.nat())
/** Texts with one to three of the insertions above at random places. */
function edits(texts: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(texts, fc.array(insertion, { minLength: 1, maxLength: 3 })).map(([t, inserts]) =>
    inserts.reduce((out, [insert, at]) => {
      const offset = out.length === 0 ? 0 : at % (out.length + 1)
      return out.slice(0, offset) + insert + out.slice(offset)
    }, t),
  )
}
const edited = edits(text)

describe('the fast YAML loader', () => {
  // Most generated text is the common case, so the comparison must have happened for most of it;
  // edits often make text the loader leaves to yaml.
  const cases = [
    { name: 'agrees with yaml on generated documents', input: text, answeredAtLeast: 1_000 },
    { name: 'agrees with yaml or steps aside on edited documents', input: edited, answeredAtLeast: 100 },
  ]
  for (const set of RULE_SETS) {
    for (const c of cases) {
      it(`${c.name}, ${set.name} (2,000 cases)`, () => {
        let answered = 0
        fc.assert(
          fc.property(c.input, (t) => {
            if (agrees(t, set)) answered++
          }),
          { numRuns: 2_000 },
        )
        expect(answered).toBeGreaterThan(c.answeredAtLeast)
      })
    }
  }

  it('steps aside for what only yaml reads right', () => {
    const [manifest, values] = RULE_SETS.map((s) => s.rules) as [ReturnType<typeof yamlRules>, ReturnType<typeof yamlRules>]
    for (const t of [
      'a: &x 1\nb: *x\n',
      'a: !!str 1\n',
      '%YAML 1.1\n---\na: 1\n',
      '~: 1\n',
      '? [a]\n: 1\n',
      '__proto__: 1\n',
      'a: 1\na: 2\n',
      '1: a\n"1": b\n',
      'just a string\n',
      'a: [b,\n',
    ])
      expect(loadDocuments(t, manifest), t).toBeUndefined()
    expect(loadDocuments('<<: {a: 1}\nb: 2\n', values)).toBeUndefined()
    // Where the rule sets differ, each follows its own `yaml` options.
    expect(loadDocuments('a: yes\nb: 012\nc: 1\n', manifest)).toEqual([{ empty: false, value: { a: 'yes', b: 12, c: 1 }, offset: 0 }])
    expect(loadDocuments('a: yes\nb: 012\nc: 1\n', values)).toEqual([{ empty: false, value: { a: true, b: 10n, c: 1n }, offset: 0 }])
  })

  it('agrees with yaml on every YAML file of the fixtures and the bench corpus', () => {
    const files = yamlFiles('__tests__').concat(yamlFiles('test'), yamlFiles('examples'), yamlFiles('deploy'))
    const corpus = files.map((f) => readFileSync(f, 'utf8')).concat(Array.from({ length: 20 }, (_, i) => [valuesManifest(i, 1), releaseManifest(i)]).flat())
    let answered = 0
    for (const t of corpus) if (agrees(t, RULE_SETS[0] as (typeof RULE_SETS)[number])) answered++
    expect(corpus.length).toBeGreaterThan(50)
    expect(answered / corpus.length).toBeGreaterThan(0.5)
  })

  it('counts lines of ascending offsets, and again from the start', () => {
    const lineAt = lineCounter('a\nb\n\nc')
    expect([0, 1, 2, 4, 5].map(lineAt)).toEqual([1, 1, 2, 3, 4])
    expect(lineAt(0)).toBe(1)
  })
})

// The semantic digest's canonical JSON, folded straight from the events, must be the bytes the
// loaded value gave before (canonicalJson of loadOnlyDocument's value) and the bytes `yaml`'s value
// gives: key order by UTF-16 code units, names of non-string keys, -0, big integers, floats,
// non-finite numbers and dates (null: kept verbatim), escapes and astral characters, empty and deep collections.
const VALUE_SCALARS = [
  ...PLAIN,
  ...QUOTED,
  '-0.0',
  '0.0',
  '1.0e+400',
  '-1.0e+400',
  '-9007199254740993',
  '0x7FFFFFFFFFFFFFFFFF',
  '1_000_000',
  '3.14159265358979323846',
  '6.02e+23',
  '1.5e-10',
  'é',
  'ﬀ',
  '😀',
  '"\\u00e9"',
  '"\\U0001F600"',
  '"\\uFFFD"',
  '"\\u2028"',
  '"\\x00"',
  '"\\e\\N\\_\\L\\P"',
  '"tab\\there"',
  '"quote\\"d"',
  '"back\\\\slash"',
  "'single ''q'''",
]
const VALUE_KEYS = [
  'é',
  'e',
  'E',
  'Z',
  'a',
  'ﬀ',
  '😀',
  '"\\uFFFD"',
  '"\\U0001F600"',
  '"\\uff61"',
  '10',
  '9',
  '1',
  '"1"',
  '0x1F',
  '1.0',
  '-0',
  'true',
  'yes',
  '.inf',
  '.nan',
  '~',
  '"a b"',
  "'q'",
  '""',
]
const VALUE_FLOWS = [
  ...FLOWS,
  '{b: 1, a: 2, c: [3, {z: 0, y: -0}]}',
  '{"é": 1, "e": 2, "😀": 3, "\\uFFFD": 4, "\\uFF61": 5}',
  '[1.0e+400]',
  '{x: .nan}',
  '[[], {}, [[]], {a: {}}]',
  '[2001-12-14]',
  '{"a": "\\u00e9\\n", a2: 12345678901234567890}',
  '{1: a, 1.0: b}',
]
const valueScalar = fc.oneof(fc.constantFrom(...VALUE_SCALARS), fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/))
const valueKey = fc.oneof({ weight: 3, arbitrary: fc.stringMatching(/^[a-z][a-zA-Z0-9._-]{0,10}$/) }, { weight: 1, arbitrary: fc.constantFrom(...VALUE_KEYS) })
const valueText = yamlText(valueScalar, valueKey, VALUE_FLOWS, true)
/** Collections nested `depth` deep, in block or flow style, around a leaf. */
const deepText = fc
  .tuple(fc.integer({ min: 1, max: 110 }), fc.constantFrom('block', 'flow'), fc.constantFrom('1', '-0', 'x', '{}', '[]'))
  .map(([depth, style, leaf]) =>
    style === 'flow'
      ? `${'[{k: '.repeat(Math.ceil(depth / 2))}${leaf}${'}]'.repeat(Math.ceil(depth / 2))}\n`
      : `${Array.from({ length: depth }, (_, i) => `${'  '.repeat(i)}k${i % 3}:`).join('\n')} ${leaf}\n`,
  )
const VALUE_RULES = yamlRules(VALUE_PARSE_OPTIONS)

/** The canonical JSON of the value `yaml` gives: one valid mapping or sequence, else null (verbatim). */
function canonicalViaYaml(t: string): string | null {
  try {
    const docs = parseAllDocuments(t, VALUE_PARSE_OPTIONS)
    const doc = Array.isArray(docs) && docs.length === 1 ? docs[0] : undefined
    if (doc === undefined || doc.errors.length > 0 || doc.warnings.length > 0 || duplicateKeyOffsets(doc).length > 0) return null
    const value: unknown = doc.toJS({ maxAliasCount: 100 })
    return typeof value === 'object' && value !== null && !(value instanceof Date) ? canonicalJson(value) : null
  } catch {
    return null
  }
}

/**
 * Checks one text: the fold against the loaded value, and canonicalYaml against what it gave
 * before the fold (the loaded value's canonical JSON, else `yaml`'s); true when the fold answered.
 */
function foldAgrees(t: string): boolean {
  const folded = foldOnlyDocument(t, VALUE_RULES, CANONICAL_FOLD)
  const loaded = loadOnlyDocument(t, VALUE_RULES)
  expect(folded === undefined, `the fold and the loader disagree on stepping aside:\n${t}`).toBe(loaded === undefined)
  if (folded !== undefined && loaded !== undefined) {
    if ('folded' in folded) expect(folded.folded, t).toBe(canonicalJson(loaded.value))
    else expect(typed(folded.value), t).toBe(typed(loaded.value))
  }
  expect(canonicalYaml(t), t).toBe(loaded === undefined ? canonicalViaYaml(t) : canonicalJson(loaded.value))
  return folded !== undefined && 'folded' in folded
}

describe('the canonical JSON folded from the events', () => {
  const cases = [
    { name: 'agrees with the loaded value and with yaml on generated values', input: valueText, answeredAtLeast: 350 },
    { name: 'agrees with the loaded value and with yaml on edited values', input: edits(valueText), answeredAtLeast: 100 },
    { name: 'agrees on the loader test documents', input: text, answeredAtLeast: 50 },
    { name: 'agrees on deep values', input: deepText, answeredAtLeast: 100 },
  ]
  for (const c of cases) {
    it(`${c.name} (2,000 cases)`, () => {
      let answered = 0
      fc.assert(
        fc.property(c.input, (t) => {
          if (foldAgrees(t)) answered++
        }),
        { numRuns: 2_000 },
      )
      expect(answered).toBeGreaterThan(c.answeredAtLeast)
    })
  }

  it('gives the bytes the loaded value gave, and declines what plain JSON cannot say', () => {
    const fold = (t: string) => foldOnlyDocument(t, VALUE_RULES, CANONICAL_FOLD)
    expect(fold('b: 1\na: [-0.0, -0, 12345678901234567890, 1.5, "é\\n"]\nA: {}\nc: []\n')).toEqual({
      folded: '{"A":{},"a":[-0,0,12345678901234567890,1.5,"é\\n"],"b":1,"c":[]}',
    })
    // UTF-16 code units: U+1F600 (a surrogate pair, 0xD83D…) sorts before U+FF61.
    expect(fold('"\\uFF61": 1\n"😀": 2\n')).toEqual({ folded: '{"😀":2,"｡":1}' })
    // Non-string keys by their names: 0x1F is "31", yes is "true".
    expect(fold('0x1F: a\nyes: b\n')).toEqual({ folded: '{"31":"a","true":"b"}' })
    expect(fold('a: .inf\n')).toMatchObject({ value: { a: Infinity } })
    expect(fold('a: 2001-12-14\n')).toMatchObject({ value: { a: new Date('2001-12-14') } })
    // Names alike after resolution: a duplicate, which the loader leaves to yaml.
    expect(fold('1: a\n1.0: b\n')).toBeUndefined()
    expect(fold('a: [1]\n---\nb: 2\n')).toBeUndefined()
  })
})

describe('parseManifestFile, fast and through yaml alone', () => {
  const encoder = new TextEncoder()
  const options = { prefix: 'nebius.ai', defaultNamespace: 'default', semanticDigest: true }
  // A `%YAML 1.2` directive makes the fast loader step aside and changes nothing else, two lines down.
  const parse = (t: string, full: boolean) => {
    const file = parseManifestFile('a.yaml', { type: 'file', bytes: encoder.encode(full ? `%YAML 1.2\n---\n${t}` : t) }, options)
    return JSON.stringify(file, (k, v: unknown) => (k === 'line' && typeof v === 'number' && full ? v - 2 : v))
  }
  it('gives the same sources, releases and problems either way', () => {
    const corpus = Array.from({ length: 10 }, (_, i) => [valuesManifest(i, 1), releaseManifest(i)]).flat()
    corpus.push(
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {nebius.ai/helmrelease-trigger-operator: "true"}\ndata:\n  values.yaml: "a: 1"\n  n: 1\n',
      'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: r}\nspec:\n  valuesFrom:\n  - {kind: Secret, name: s, optional: true}\n  - {kind: Nope, name: t}\n',
      '# leading\n\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {a: "b: [1, 2]"}\n---\n',
    )
    for (const t of corpus) expect(parse(t, false), t).toBe(parse(t, true))
  })
})

function yamlFiles(dir: string): string[] {
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true, recursive: true })
  } catch {
    return []
  }
  return entries.filter((e) => e.isFile() && /\.ya?ml$/.test(e.name)).map((e) => join(e.parentPath, e.name))
}
