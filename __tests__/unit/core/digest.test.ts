// The content digest: one function for the manifest in git and the live object from the API.

import { createHash, createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import {
  canonicalJsonOf,
  canonicalYaml,
  contentOfConfigMap,
  contentOfSecret,
  digestOf,
  digestAndEncoding,
  encodeContent,
  keyedDigest,
  keyFingerprintsOf,
  keyedReads,
  recordedDigestOf,
  recordedMatches,
  shownDigest,
} from '../../../src/core/digest.ts'
import type { DigestContent, DigestKey } from '../../../src/core/digest.ts'

const semantic = { semantic: true }
const verbatim = { semantic: false }
const b64 = (text: string | Uint8Array): string => Buffer.from(text).toString('base64')
const valueDigest = (value: string, options = semantic) => digestOf({ data: { 'values.yaml': value } }, options)

describe('digestOf', () => {
  it('is sha256 over the documented canonical JSON', () => {
    const canonical = JSON.stringify([
      [
        'data',
        [
          ['a', 'text', '1'],
          ['b', 'text', 'two'],
        ],
      ],
      ['binaryData', [['c', b64('bytes')]]],
    ])
    const expected = `sha256:${createHash('sha256').update(canonical).digest('hex')}`
    expect(digestOf({ data: { b: 'two', a: '1' }, binaryData: { c: b64('bytes') } }, verbatim)).toBe(expected)
    expect(expected).toMatch(/^sha256:[0-9a-f]{64}$/)
  })

  it('is stable and treats absent maps as empty', () => {
    const content = { data: { a: 'x' } }
    expect(digestOf(content, semantic)).toBe(digestOf({ data: { a: 'x' } }, semantic))
    expect(digestOf({}, semantic)).toBe(digestOf({ data: {}, binaryData: {} }, semantic))
  })

  it('does not depend on key order', () => {
    expect(digestOf({ data: { a: '1', b: '2', c: '3' } }, verbatim)).toBe(digestOf({ data: { c: '3', a: '1', b: '2' } }, verbatim))
  })

  it('changes when a value, a key or a key set changes', () => {
    const base = digestOf({ data: { a: '1' } }, semantic)
    expect(digestOf({ data: { a: '2' } }, semantic)).not.toBe(base)
    expect(digestOf({ data: { b: '1' } }, semantic)).not.toBe(base)
    expect(digestOf({ data: { a: '1', b: '' } }, semantic)).not.toBe(base)
  })

  it('keeps keys and values apart (no Reloader-style k=v;k=v collisions)', () => {
    expect(digestOf({ data: { a: 'b;c=d' } }, verbatim)).not.toBe(digestOf({ data: { a: 'b', c: 'd' } }, verbatim))
    expect(digestOf({ data: { 'a=b': 'c' } }, verbatim)).not.toBe(digestOf({ data: { a: 'b=c' } }, verbatim))
  })

  it('keeps data and binaryData apart', () => {
    const encoded = b64('hello')
    expect(digestOf({ data: { a: encoded } }, verbatim)).not.toBe(digestOf({ binaryData: { a: encoded } }, verbatim))
    expect(digestOf({ data: { a: encoded } }, semantic)).not.toBe(digestOf({ binaryData: { a: encoded } }, semantic))
  })

  it('normalises base64 in binaryData (line-wrapped equals unwrapped: same bytes)', () => {
    const bytes = new Uint8Array(Array.from({ length: 120 }, (_, i) => (i * 37) % 256))
    const flat = b64(bytes)
    const wrapped = flat.replace(/(.{76})/g, '$1\n')
    expect(wrapped).not.toBe(flat)
    expect(digestOf({ binaryData: { b: wrapped } }, semantic)).toBe(digestOf({ binaryData: { b: flat } }, semantic))
  })

  describe('semantic mode', () => {
    const values = 'replicas: 2\nimage:\n  repository: nginx\n  tag: "1.27"\n'

    it('ignores comments, whitespace and key order in a YAML mapping', () => {
      const edited = '# scaled by the platform team\nimage:\n    tag: "1.27"   # pinned\n    repository: nginx\nreplicas:   2\n'
      expect(valueDigest(edited)).toBe(valueDigest(values))
    })

    it('treats JSON and YAML with the same content alike', () => {
      expect(valueDigest('{"replicas": 2, "image": {"tag": "1.27", "repository": "nginx"}}')).toBe(valueDigest(values))
    })

    it('canonicalises sequences too', () => {
      expect(valueDigest('- a\n- b   # second\n')).toBe(valueDigest('[a, b]'))
      expect(valueDigest('- a\n- b\n')).not.toBe(valueDigest('- b\n- a\n'))
    })

    it('sees a real value change', () => {
      expect(valueDigest(values.replace('replicas: 2', 'replicas: 3'))).not.toBe(valueDigest(values))
    })

    it("tells the string '5432' from the number 5432 inside a mapping", () => {
      expect(valueDigest('port: "5432"')).not.toBe(valueDigest('port: 5432'))
      expect(valueDigest("port: '5432'")).toBe(valueDigest('port: "5432"'))
    })

    it('reads values with YAML 1.1 rules as Helm does (yes is a boolean, not "yes")', () => {
      expect(valueDigest('enabled: yes')).not.toBe(valueDigest('enabled: "yes"'))
      expect(valueDigest('enabled: yes')).toBe(valueDigest('enabled: true'))
      // sigs.k8s.io/yaml turns the boolean key `n` into "false"
      expect(valueDigest('n: 1')).toBe(valueDigest('{"false": 1}'))
      expect(valueDigest('"n": 1')).not.toBe(valueDigest('n: 1'))
    })

    it('keeps Go-YAML strings that YAML 1.1 would read as base-60 numbers apart from those numbers', () => {
      expect(valueDigest('port: 1:20')).not.toBe(valueDigest('port: 80'))
    })

    it('keeps integers beyond 2^53 exact', () => {
      expect(valueDigest('id: 12345678901234567891')).not.toBe(valueDigest('id: 12345678901234567892'))
    })

    it('keeps scalar values verbatim: a targetPath consumer sees the raw string', () => {
      expect(valueDigest('hello')).not.toBe(valueDigest('"hello"'))
      expect(valueDigest('5432')).not.toBe(valueDigest('"5432"'))
      expect(valueDigest('hello # not a comment to a targetPath')).not.toBe(valueDigest('hello'))
    })

    it('keeps multi-document and unparseable values verbatim', () => {
      expect(valueDigest('a: 1\n---\nb: 2\n')).not.toBe(valueDigest('a: 1\n---\nb:   2\n'))
      expect(valueDigest('a: [1\n')).not.toBe(valueDigest('a: [1 \n'))
      expect(valueDigest('a: 1\na: 2\n')).not.toBe(valueDigest('a:  1\na: 2\n')) // duplicate keys
    })

    it('keeps values with timestamps or binary tags verbatim rather than guess', () => {
      expect(valueDigest('at: 2024-01-01')).not.toBe(valueDigest('at:  2024-01-01'))
    })

    it('keeps an alias bomb verbatim, quickly', () => {
      const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
      for (let i = 1; i < 9; i++) {
        const prev = String.fromCharCode(96 + i)
        const name = String.fromCharCode(97 + i)
        levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`)
      }
      const bomb = levels.join('\n')
      expect(valueDigest(bomb)).toBe(valueDigest(bomb, verbatim))
    })

    it('gives the same digest as verbatim mode for scalars only', () => {
      const content = { data: { a: 'plain', b: 'https://example.com/x' } }
      expect(digestOf(content, semantic)).toBe(digestOf(content, verbatim))
    })

    it('differs from verbatim mode once a value is canonicalised', () => {
      expect(valueDigest(values, semantic)).not.toBe(valueDigest(values, verbatim))
      expect(valueDigest(values, verbatim)).not.toBe(valueDigest(values.replace('replicas: 2', 'replicas:  2'), verbatim))
    })
  })
})

describe('contentOfSecret', () => {
  it('decodes text values into data and keeps other bytes as binaryData', () => {
    const binary = new Uint8Array([0xff, 0xfe, 0x00, 0x01])
    expect(contentOfSecret({ data: { password: b64('s3cret'), key: b64(binary) } })).toEqual({
      data: { password: 's3cret' },
      binaryData: { key: b64(binary) },
    })
  })

  it('folds stringData into data, stringData winning per key', () => {
    const content = contentOfSecret({ data: { a: b64('from data'), b: b64('kept') }, stringData: { a: 'from stringData' } })
    expect(content).toEqual({ data: { a: 'from stringData', b: 'kept' }, binaryData: {} })
  })

  it('lets a stringData text value replace a binary data value', () => {
    const content = contentOfSecret({ data: { a: b64(new Uint8Array([0xff])) }, stringData: { a: 'text' } })
    expect(content).toEqual({ data: { a: 'text' }, binaryData: {} })
  })

  it('keeps a UTF-8 byte order mark as part of the value', () => {
    const withBom = contentOfSecret({ data: { a: b64('\ufeffx') } })
    expect(withBom.data).toEqual({ a: '\ufeffx' })
  })

  it('gives the git Secret (stringData) and the live Secret (base64 data) the same digest', () => {
    const git = contentOfSecret({ stringData: { 'values.yaml': 'db:\n  password: hunter2\n', token: 'abc' } })
    const live = contentOfSecret({ data: { 'values.yaml': b64('db:\n  password: hunter2\n'), token: b64('abc') } })
    expect(digestOf(git, semantic)).toBe(digestOf(live, semantic))
    expect(digestOf(git, verbatim)).toBe(digestOf(live, verbatim))
  })

  it('gives a binary value the same digest from git and from the API', () => {
    const bytes = new Uint8Array([0, 159, 146, 150, 255])
    const git = contentOfSecret({ data: { cert: b64(bytes) } })
    const live = contentOfSecret({ data: { cert: b64(bytes) } })
    expect(digestOf(git, semantic)).toBe(digestOf(live, semantic))
    expect(digestOf(git, semantic)).not.toBe(digestOf(contentOfSecret({ data: { cert: b64(new Uint8Array([0])) } }), semantic))
  })
})

describe('contentOfConfigMap', () => {
  it('keeps data and binaryData and drops everything else', () => {
    const live = { data: { a: '1' }, binaryData: { b: b64('x') }, metadata: { name: 'n' } }
    expect(contentOfConfigMap(live)).toEqual({ data: { a: '1' }, binaryData: { b: b64('x') } })
    expect(contentOfConfigMap({})).toEqual({ data: {}, binaryData: {} })
  })
})

describe('properties', () => {
  const key = fc.stringMatching(/^[-._a-zA-Z0-9]{1,12}$/)
  const stringMap = fc.dictionary(key, fc.string({ maxLength: 20 }), { maxKeys: 6 })

  it('does not depend on insertion order', () => {
    fc.assert(
      fc.property(stringMap, fc.boolean(), (map, isSemantic) => {
        const reversed = Object.fromEntries(Object.entries(map).reverse())
        expect(digestOf({ data: reversed }, { semantic: isSemantic })).toBe(digestOf({ data: map }, { semantic: isSemantic }))
      }),
    )
  })

  it('gives different verbatim content different digests', () => {
    fc.assert(
      fc.property(stringMap, stringMap, (a, b) => {
        fc.pre(JSON.stringify(Object.entries(a).sort()) !== JSON.stringify(Object.entries(b).sort()))
        expect(digestOf({ data: a }, verbatim)).not.toBe(digestOf({ data: b }, verbatim))
      }),
    )
  })

  // Plain JSON-compatible values. Written as YAML 1.1 so that `stringify` quotes strings such as
  // `n` or `yes` that Helm (and the digest) read as booleans when unquoted.
  // `<<` unquoted is a YAML 1.1 merge key (for Helm too), quoted a plain key: not the same value.
  const mappingKey = fc.string({ minLength: 1, maxLength: 6 }).filter((k) => k !== '<<')
  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.string({ maxLength: 8 }),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)), // JSON writes -0 as 0
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(mappingKey, tie('value'), { maxKeys: 4 }),
    ),
  })).value
  const document = fc.dictionary(mappingKey, json, { minKeys: 1, maxKeys: 5 })

  it('gives a mapping the same digest however it is written (block, flow, JSON, key order, comments)', () => {
    fc.assert(
      fc.property(document, (object) => {
        const block = stringify(object, { version: '1.1' })
        const reversed = Object.fromEntries(Object.entries(object).reverse())
        const reordered = `# reordered\n${stringify(reversed, { version: '1.1', indent: 4 })}`
        const asJson = JSON.stringify(object, null, 1)
        const expected = valueDigest(block)
        expect(valueDigest(reordered)).toBe(expected)
        expect(valueDigest(asJson)).toBe(expected)
      }),
    )
  })

  it('gives, read once without the memo, the digest, encoding and fingerprints the memoised functions give', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 20 }),
      document.map((object) => stringify(object, { version: '1.1' })),
      document.map((object) => JSON.stringify(object)),
      fc.constant('a: [1, {b: yes}]\n# comment\n'),
      fc.constant('a: 1\na: 2\n'),
    )
    const base64 = fc.uint8Array({ maxLength: 12 }).map((bytes) => Buffer.from(bytes).toString('base64'))
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 5 }), fc.dictionary(key, base64, { maxKeys: 3 }), fc.boolean(), (data, binaryData, isSemantic) => {
        const content = { data, binaryData }
        const options = { semantic: isSemantic }
        const made = digestAndEncoding(content, options)
        expect({ digest: made.digest, semantic: made.encoded.semantic, byKey: keyFingerprintsOf(made.encoded) }).toEqual({
          digest: digestOf(content, options),
          semantic: isSemantic,
          byKey: keyFingerprintsOf(encodeContent(content, options)),
        })
        expect(made.encoded).toEqual(encodeContent(content, options))
        // Each value's canonical JSON, for the values diff: the one the semantic digest encodes.
        for (const [key, value] of Object.entries(data)) {
          expect(canonicalJsonOf(made.encoded, key)).toBe(isSemantic ? (canonicalYaml(value) ?? undefined) : undefined)
        }
      }),
    )
  })

  it('gives the stringData and the base64 data form of a Secret the same digest', () => {
    fc.assert(
      fc.property(stringMap, fc.boolean(), (map, isSemantic) => {
        const options = { semantic: isSemantic }
        const encoded = Object.fromEntries(Object.entries(map).map(([k, v]) => [k, b64(v)]))
        const git: DigestContent = contentOfSecret({ stringData: map })
        expect(digestOf(git, options)).toBe(digestOf(contentOfSecret({ data: encoded }), options))
      }),
    )
  })
})

describe('keyed Secret digests', () => {
  const key = (fill: number): DigestKey => ({ bytes: new Uint8Array(32).fill(fill) })
  const plain = digestOf(contentOfSecret({ stringData: { pin: '483920' } }), { semantic: true })

  it('is HMAC-SHA-256 of the unkeyed digest, marked hmac-sha256: apart from a plain sha256:', () => {
    const keyed = keyedDigest(plain, key(1))
    expect(keyed).toMatch(/^hmac-sha256:[0-9a-f]{64}$/)
    expect(keyed).toBe(`hmac-sha256:${createHmac('sha256', key(1).bytes).update(plain).digest('hex')}`)
    expect(keyed.slice('hmac-sha256:'.length)).not.toBe(plain.slice('sha256:'.length))
  })

  it('is equal for equal content under one key, different under another key', () => {
    const again = digestOf(contentOfSecret({ data: { pin: Buffer.from('483920').toString('base64') } }), { semantic: true })
    expect(keyedDigest(again, key(1))).toBe(keyedDigest(plain, key(1)))
    expect(keyedDigest(plain, key(2))).not.toBe(keyedDigest(plain, key(1)))
  })

  it('keys only Secrets for config-digest: a ConfigMap keeps its public sha256', () => {
    const live = (kind: 'ConfigMap' | 'Secret') => ({ kind, data: { a: kind === 'Secret' ? 'MQ==' : '1' }, binaryData: {}, labels: {} })
    expect(recordedDigestOf(live('ConfigMap'), true, key(1))).toBe(digestOf(contentOfConfigMap({ data: { a: '1' } }), { semantic: true }))
    expect(recordedDigestOf(live('Secret'), true, key(1))).toMatch(/^hmac-sha256:/)
  })

  it('takes a legacy unkeyed digest of the same content as recorded (migration), nothing else', () => {
    const read = { digest: keyedDigest(plain, key(1)), legacyDigest: plain }
    expect(recordedMatches(read.digest, read)).toBe(true)
    expect(recordedMatches(plain, read)).toBe(true)
    expect(recordedMatches(digestOf(contentOfSecret({ stringData: { pin: '000000' } }), { semantic: true }), read)).toBe(false)
    expect(recordedMatches(keyedDigest(plain, key(2)), read)).toBe(false)
    expect(recordedMatches(undefined, read)).toBe(false)
    expect(recordedMatches(plain, { digest: keyedDigest(plain, key(1)) })).toBe(false)
  })

  it('keys the Secret reads of a release and leaves ConfigMap reads alone', () => {
    const cm = { id: 'ConfigMap/apps/a', digest: digestOf(contentOfConfigMap({ data: { a: '1' } }), { semantic: true }), encrypted: false } as const
    const reads = keyedReads(
      [cm, { id: 'Secret/apps/s', encrypted: false }, { id: 'Secret/apps/gone', encrypted: false }],
      (id) => (id === 'Secret/apps/s' ? { current: plain, legacy: plain } : {}),
      key(1),
    )
    expect(reads).toEqual([
      cm,
      { id: 'Secret/apps/s', digest: keyedDigest(plain, key(1)), legacyDigest: plain, encrypted: false },
      { id: 'Secret/apps/gone', encrypted: false },
    ])
  })

  it("never shows a Secret's digest, keyed or not; a ConfigMap's first 12 hex characters", () => {
    expect(shownDigest('Secret/apps/s', plain)).toBeUndefined()
    expect(shownDigest('Secret/apps/s', keyedDigest(plain, key(1)))).toBeUndefined()
    expect(shownDigest('ConfigMap/apps/a', keyedDigest(plain, key(1)))).toBeUndefined()
    expect(shownDigest('ConfigMap/apps/a', plain)).toBe(plain.slice(7, 19))
  })
})
