// Which keys of a ConfigMap/Secret a commit changed, for people to read: "values.yaml →
// image.tag: 1.0 → 1.1" for a ConfigMap, the key name alone for a Secret. Pure.

import { parse } from 'yaml'
import { canonicalJsonOf, encodeContent, keyFingerprintsOf, type DigestOptions } from './digest.ts'
import type { EncodedContent, KeyChange, SourceManifest } from './model.ts'
import { loadOnlyDocument, yamlRules } from './yaml-load.ts'

/** More changed leaves than this in one value are summed up, not listed. */
const MAX_LEAVES_PER_KEY = 20
/** A value with more leaves than this is compared whole. */
const MAX_LEAVES = 2000
const PREVIEW = 60

/**
 * The keys that differ between two definitions of one source. Fingerprints encoded as the
 * digest encodes decide (a comment-only edit is no change under the semantic digest); the
 * text is only shown, and only a ConfigMap's.
 */
export function keyChanges(before: SourceManifest, after: SourceManifest, options: DigestOptions): KeyChange[] {
  const oldEncoded = encodedOf(before, options)
  const nowEncoded = encodedOf(after, options)
  const old = keyFingerprintsOf(oldEncoded)
  const now = keyFingerprintsOf(nowEncoded)
  const shown = after.kind === 'ConfigMap' && !after.encrypted
  const keys = [...new Set([...old.keys(), ...now.keys()])].sort()
  return keys.flatMap((key): KeyChange[] => {
    if (old.get(key) === now.get(key)) return []
    if (!old.has(key)) return [{ key, change: 'added', ...(shown ? values(undefined, after.content?.data?.[key]) : {}) }]
    if (!now.has(key)) return [{ key, change: 'removed', ...(shown ? values(before.content?.data?.[key], undefined) : {}) }]
    if (!shown) return [{ key, change: 'modified' }]
    return leafChanges(
      key,
      { text: before.content?.data?.[key], canonical: canonicalJsonOf(oldEncoded, key) },
      { text: after.content?.data?.[key], canonical: canonicalJsonOf(nowEncoded, key) },
    )
  })
}

/** The content as the source's digest encoded it when that is the encoding asked for, else encoded now. */
function encodedOf(source: SourceManifest, options: DigestOptions): EncodedContent {
  const made = source.encoded
  return made !== undefined && made.semantic === options.semantic ? made : encodeContent(source.content ?? {}, options)
}

/** One side of a changed key: its text, and its canonical JSON when the digest made one. */
interface Side {
  readonly text: string | undefined
  readonly canonical: string | undefined
}

/** The keys of a source the commit added: names only. */
export function addedKeys(source: SourceManifest): KeyChange[] {
  return [...Object.keys(source.content?.data ?? {}), ...Object.keys(source.content?.binaryData ?? {})].sort().map((key) => ({ key, change: 'added' }))
}

function leafChanges(key: string, beforeSide: Side, afterSide: Side): KeyChange[] {
  const before = beforeSide.text
  const after = afterSide.text
  const a = leaves(beforeSide)
  const b = leaves(afterSide)
  if (a === undefined || b === undefined) return [{ key, change: 'modified', ...values(before, after) }]
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort()
  const changed = paths.filter((p) => a.get(p) !== b.get(p))
  // Equal leaves, different fingerprints: only the form changed where the digest is not semantic.
  if (changed.length === 0) return [{ key, change: 'modified', ...values(before, after) }]
  const listed = changed.slice(0, MAX_LEAVES_PER_KEY).map((path): KeyChange => {
    const x = a.get(path)
    const y = b.get(path)
    return {
      key,
      path,
      change: x === undefined ? 'added' : y === undefined ? 'removed' : 'modified',
      ...(x === undefined ? {} : { before: shorten(x) }),
      ...(y === undefined ? {} : { after: shorten(y) }),
    }
  })
  const more = changed.length - listed.length
  return more > 0 ? [...listed, { key, path: `…and ${more} more`, change: 'modified' }] : listed
}

/** How a value is read for its leaves: as Helm reads values (YAML 1.1). */
export const LEAF_PARSE_OPTIONS = { version: '1.1', logLevel: 'silent', uniqueKeys: false } as const
const LEAF_RULES = yamlRules(LEAF_PARSE_OPTIONS)

/**
 * Leaf path → JSON of the leaf, for a value that is one YAML/JSON mapping; undefined otherwise.
 * Read from the digest's canonical JSON when there is one, instead of a second YAML parse
 * (BENCHMARKS.md §1): it holds the values as the digest, and Helm, read them.
 */
function leaves(side: Side): Map<string, string> | undefined {
  const { text, canonical } = side
  if (text === undefined) return undefined
  const value: unknown = canonical === undefined ? valueOf(text) : JSON.parse(canonical)
  if (value === NOT_YAML) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const out = new Map<string, string>()
  const walk = (node: unknown, path: string): boolean => {
    if (out.size > MAX_LEAVES) return false
    if (typeof node === 'object' && node !== null && !Array.isArray(node) && Object.keys(node).length > 0) {
      return Object.entries(node).every(([k, v]) => walk(v, path === '' ? k : `${path}.${k}`))
    }
    out.set(path, JSON.stringify(node, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null')
    return true
  }
  return walk(value, '') ? out : undefined
}

const NOT_YAML = Symbol('not one YAML document')

/** The one document of `text`, loaded fast when it is the common case (yaml-load.ts). */
function valueOf(text: string): unknown {
  const only = loadOnlyDocument(text, LEAF_RULES)
  if (only !== undefined) return only.value
  try {
    return parse(text, { ...LEAF_PARSE_OPTIONS, maxAliasCount: 100 })
  } catch {
    return NOT_YAML
  }
}

function values(before: string | undefined, after: string | undefined): { before?: string; after?: string } {
  return { ...(before === undefined ? {} : { before: shorten(before) }), ...(after === undefined ? {} : { after: shorten(after) }) }
}

/** One line, at most PREVIEW characters; a multi-line value is counted, not shown. */
function shorten(text: string): string {
  const lines = text.replace(/\r?\n$/, '').split(/\r\n|\r|\n/)
  if (lines.length > 1) return `(${lines.length} lines)`
  const line = lines[0] ?? ''
  return line.length > PREVIEW ? `${line.slice(0, PREVIEW - 1)}…` : line
}
