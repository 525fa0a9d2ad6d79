// The content digest of a ConfigMap/Secret. The same function runs on a manifest from git
// and on the live object read from the API: equal digests mean the cluster has the commit's
// content. SHA-256 over canonical JSON that keeps keys, values, `data` and `binaryData` apart,
// so two different objects cannot encode to the same bytes (Reloader's `k=v;` join can).
// A Secret's digest is published (config-digest) only keyed: HMAC-SHA-256 with a key that stays
// in the cluster, so whoever reads a HelmRelease cannot test guesses of a low-entropy value.

import { createHmac, hash } from 'node:crypto'
import { isMap, isSeq, parseAllDocuments } from 'yaml'
import { duplicateKeyOffsets } from './yaml-keys.ts'
import { foldOnlyDocument, yamlRules, type Fold } from './yaml-load.ts'
import { compareText } from '../lib/sort.ts'
import type { ParseOptions, DocumentOptions, SchemaOptions } from 'yaml'
import type { Digest, EncodedContent, KeyedDigest, LiveSource, PlainDigest, PlannedRead, SourceId } from './model.ts'

/** What the digest covers: `data` as text, `binaryData` as base64 (as the API returns it). */
export interface DigestContent {
  readonly data?: Readonly<Record<string, string>>
  readonly binaryData?: Readonly<Record<string, string>>
}

export interface DigestOptions {
  /** Canonicalise YAML/JSON mapping and sequence values, so comment/format-only edits compare equal. */
  readonly semantic: boolean
}

export function digestOf(content: DigestContent, options: DigestOptions): PlainDigest {
  return digestOfEncoded(encodeContent(content, options))
}

/**
 * The digest of content read once, as a plan reads a manifest from git, and the content as it
 * encoded it (kept for the values diff: keyFingerprintsOf, canonicalJsonOf): each value encoded
 * once and not memoised. A plan parses each value once; keeping every value of a large commit
 * alive in the memo cost the parse stage more than it saved (BENCHMARKS.md §9).
 */
export function digestAndEncoding(content: DigestContent, options: DigestOptions): { readonly digest: PlainDigest; readonly encoded: EncodedContent } {
  const encoded = encode(content, options.semantic, options.semantic ? canonicalValue : textValue)
  return { digest: digestOfEncoded(encoded), encoded }
}

/** Content encoded as the digest encodes it (values memoised), for content read from the API or read again. */
export function encodeContent(content: DigestContent, options: DigestOptions): EncodedContent {
  return encode(content, options.semantic, options.semantic ? semanticValue : textValue)
}

/** A data key's canonical JSON, when the digest read its value as one YAML/JSON collection. */
export function canonicalJsonOf(encoded: EncodedContent, key: string): string | undefined {
  const value = encoded.data.find(([name]) => name === key)?.[1]
  return value?.[0] === 'yaml' ? value[1] : undefined
}

function encode(content: DigestContent, semantic: boolean, encodeValue: (value: string) => EncodedValue): EncodedContent {
  return {
    semantic,
    data: sortedEntries(content.data).map(([key, value]) => [key, encodeValue(value)] as const),
    binaryData: sortedEntries(content.binaryData).map(([key, value]) => [key, canonicalBase64(value)] as const),
  }
}

function digestOfEncoded(parts: EncodedContent): PlainDigest {
  const canonical = JSON.stringify([
    ['data', parts.data.map(([key, value]) => [key, ...value])],
    ['binaryData', parts.binaryData.map(([key, value]) => [key, value])],
  ])
  return `sha256:${hash('sha256', canonical, 'hex')}`
}

/**
 * Each key's fingerprint: its section, tag and encoded text, so two keys compare equal exactly when
 * the digest would not tell them apart. For finding which keys changed, in memory; it holds the
 * values (a Secret's too), so it is never published, like the content it comes from.
 */
export function keyFingerprintsOf(parts: EncodedContent): ReadonlyMap<string, string> {
  const out = new Map<string, string>()
  for (const [key, [tag, text]] of parts.data) out.set(key, `data:${tag}:${text}`)
  for (const [key, base64] of parts.binaryData) out.set(key, `binaryData:${base64}`)
  return out
}

/** A ConfigMap (from git or the API) as digest content. */
export function contentOfConfigMap(configMap: DigestContent): DigestContent {
  return { data: configMap.data ?? {}, binaryData: configMap.binaryData ?? {} }
}

export interface SecretContent {
  /** base64, as in a manifest and as the API returns it. */
  readonly data?: Readonly<Record<string, string>>
  /** Plain text; the apiserver folds it into `data`, winning per key. */
  readonly stringData?: Readonly<Record<string, string>>
}

/**
 * A Secret as digest content. Decoded values that are valid UTF-8 count as text (`data`), others
 * as bytes (`binaryData`): a git Secret written with `stringData` and the live Secret (only
 * base64 `data`) then give the same digest.
 */
export function contentOfSecret(secret: SecretContent): DigestContent {
  const text = new Map<string, string>()
  const bytes = new Map<string, string>()
  for (const [key, base64] of Object.entries(secret.data ?? {})) {
    const decoded = Buffer.from(base64, 'base64')
    const asText = utf8Text(decoded)
    if (asText === null) bytes.set(key, decoded.toString('base64'))
    else text.set(key, asText)
  }
  for (const [key, value] of Object.entries(secret.stringData ?? {})) {
    bytes.delete(key)
    text.set(key, value)
  }
  return { data: Object.fromEntries(text), binaryData: Object.fromEntries(bytes) }
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function utf8Text(bytes: Uint8Array): string | null {
  try {
    return STRICT_UTF8.decode(bytes)
  } catch {
    return null
  }
}

function sortedEntries(record: Readonly<Record<string, string>> | undefined): [string, string][] {
  return Object.entries(record ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** Same bytes, same text: line-wrapped or differently padded base64 is normalised. */
function canonicalBase64(base64: string): string {
  return Buffer.from(base64, 'base64').toString('base64')
}

// The tag keeps a verbatim value and a canonicalised one apart.
type EncodedValue = EncodedContent['data'][number][1]

function textValue(value: string): EncodedValue {
  return ['text', value]
}

function semanticValue(value: string): EncodedValue {
  return tagged(value, memoised(value))
}

/** semanticValue without the memo, for a value read once. */
function canonicalValue(value: string): EncodedValue {
  return tagged(value, canonicalYaml(value))
}

function tagged(value: string, canonical: string | null): EncodedValue {
  return canonical === null ? ['text', value] : ['yaml', canonical]
}

// A commit usually changes one key of a ConfigMap: the base and head digests then share most
// values, and a value is parsed once. Bounded, so a long-running watch does not grow it forever.
const MEMO_MAX_CHARS = 16 * 1024 * 1024
const MEMO_MAX_VALUE = 256 * 1024
const memo = new Map<string, string | null>()
let memoChars = 0

function memoised(value: string): string | null {
  const known = memo.get(value)
  if (known !== undefined) return known
  const canonical = canonicalYaml(value)
  if (value.length <= MEMO_MAX_VALUE) {
    if (memoChars > MEMO_MAX_CHARS) {
      memo.clear()
      memoChars = 0
    }
    memo.set(value, canonical)
    memoChars += value.length + (canonical?.length ?? 0)
  }
  return canonical
}

// Helm reads values with YAML 1.1 rules (sigs.k8s.io/yaml), so `yes` is a boolean there and
// must not compare equal to "yes". Go's YAML has no base-60 numbers: keep `1:20` a string.
export const VALUE_PARSE_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  // Warnings would print the value's text to stderr: values may be secrets.
  logLevel: 'error',
  intAsBigInt: true,
  // Checked in linear time by duplicateKeyOffsets (the library's check is quadratic).
  uniqueKeys: false,
  prettyErrors: false,
  customTags: (tags) => tags.filter((tag) => typeof tag === 'string' || tag.format !== 'TIME'),
}
const VALUE_RULES = yamlRules(VALUE_PARSE_OPTIONS)
const MAX_ALIASES = 100
// A mapping needs '{' or ':' before a space or line end, a sequence '[' or '-' likewise; most
// scalars (names, URLs, numbers) skip the parser.
const MAY_BE_COLLECTION = /[{[]|[:-](?:\s|$)/

/**
 * Canonical JSON of a value that is exactly one YAML/JSON mapping or sequence, else null (kept
 * verbatim): scalars matter as written to a `targetPath` consumer, and anything unusual
 * (errors, several documents, timestamps, binary, sets, alias bombs) is not worth the risk
 * of calling two different values equal.
 */
export function canonicalYaml(text: string): string | null {
  if (!MAY_BE_COLLECTION.test(text)) return null
  // The common case read fast, to exactly what `yaml` gives (yaml-load.ts): folded straight into
  // canonical JSON, or loaded and then encoded when the fold declines; the rest below.
  const only = foldOnlyDocument(text, VALUE_RULES, CANONICAL_FOLD)
  if (only !== undefined) return 'folded' in only ? only.folded : canonicalJson(only.value)
  try {
    const docs = parseAllDocuments(text, VALUE_PARSE_OPTIONS)
    const doc = Array.isArray(docs) && docs.length === 1 ? docs[0] : undefined
    if (doc === undefined || doc.errors.length > 0 || doc.warnings.length > 0 || duplicateKeyOffsets(doc).length > 0) return null
    if (!isMap(doc.contents) && !isSeq(doc.contents)) return null
    return canonicalJson(doc.toJS({ maxAliasCount: MAX_ALIASES }))
  } catch {
    // Alias bombs, stack depth: keep the value verbatim.
    return null
  }
}

/** JSON with sorted keys; null when the value holds something plain JSON cannot say exactly. */
export function canonicalJson(value: unknown): string | null {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) return null
      return Object.is(value, -0) ? '-0' : JSON.stringify(value)
    case 'bigint':
      return value.toString()
    case 'object':
      if (Array.isArray(value)) return canonicalArray(value)
      return isPlainObject(value) ? canonicalObject(value) : null
    default:
      return null
  }
}

function canonicalArray(items: readonly unknown[]): string | null {
  const parts: string[] = []
  for (const item of items) {
    const part = canonicalJson(item)
    if (part === null) return null
    parts.push(part)
  }
  return `[${parts.join(',')}]`
}

function canonicalObject(object: Readonly<Record<string, unknown>>): string | null {
  const parts: string[] = []
  for (const key of Object.keys(object).sort()) {
    const part = canonicalJson(object[key])
    if (part === null) return null
    parts.push(`${JSON.stringify(key)}:${part}`)
  }
  return `{${parts.join(',')}}`
}

/**
 * canonicalJson built straight from the parser's events, with no objects in between: the same
 * bytes (each part encoded as canonicalJson encodes it, keys in `sort()` order). A scalar plain JSON
 * cannot say exactly (non-finite, a date) or a duplicate key declines, and the value is loaded
 * and encoded whole as before.
 */
export const CANONICAL_FOLD: Fold<string, Entry[]> = {
  scalar: (value) => canonicalJson(value) ?? undefined,
  sequence: (items) => `[${items.join(',')}]`,
  mapping: () => [],
  add: (entries, key, value) => entries.push({ key, value }) > 0,
  end: canonicalEntries,
}

interface Entry {
  readonly key: string
  readonly value: string
}

const byKey = (a: Entry, b: Entry): number => compareText(a.key, b.key)

/** Whether each key is after the one before (strictly: equal keys are left to the sort and its duplicate check). */
function inKeyOrder(entries: readonly Entry[]): boolean {
  for (let i = 1; i < entries.length; i++) if (!((entries[i - 1]?.key ?? '') < (entries[i]?.key ?? ''))) return false
  return true
}

/** `{"key":value,…}` in key order; undefined for a duplicate key. */
function canonicalEntries(entries: Entry[]): string | undefined {
  // Most mappings of a values file are short, and many are written in key order already.
  if (!inKeyOrder(entries)) entries.sort(byKey)
  let out = '{'
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]
    if (entry === undefined || (i > 0 && entries[i - 1]?.key === entry.key)) return undefined
    out += `${i === 0 ? '' : ','}${JSON.stringify(entry.key)}:${entry.value}`
  }
  return `${out}}`
}

function isPlainObject(value: object): value is Readonly<Record<string, unknown>> {
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** The unkeyed digest of a live ConfigMap or Secret, as the API returned it (a Secret's: in memory only). */
export function liveDigest(live: LiveSource, semantic: boolean): PlainDigest {
  const content = live.kind === 'Secret' ? contentOfSecret({ data: live.data }) : contentOfConfigMap({ data: live.data, binaryData: live.binaryData })
  return digestOf(content, { semantic })
}

/**
 * The key of Secret digests: random bytes kept in a Secret of the cluster (kube/digest-key.ts),
 * never in the repository, a plan, a log or an output. Injected: this module does no I/O.
 */
export interface DigestKey {
  readonly bytes: Uint8Array
}

/**
 * A Secret's digest as config-digest records it: HMAC-SHA-256 keyed with the cluster's key over
 * the content's unkeyed digest (itself SHA-256 of the canonical form). Without the key no guess
 * of the content can be tested against it; equal content still gives equal digests per cluster.
 */
export function keyedDigest(plain: PlainDigest, key: DigestKey): KeyedDigest {
  return `hmac-sha256:${createHmac('sha256', key.bytes).update(plain).digest('hex')}`
}

/** The digest config-digest records for a live source: plain for a ConfigMap, keyed for a Secret. */
export function recordedDigestOf(live: LiveSource, semantic: boolean, key: DigestKey): Digest {
  const plain = liveDigest(live, semantic)
  return live.kind === 'Secret' ? keyedDigest(plain, key) : plain
}

/** A Secret's id: its digest is never shown, only that it changed. */
export function isSecretId(id: SourceId): boolean {
  return id.startsWith('Secret/')
}

/**
 * Whether `recorded` (from config-digest) stands for the content of `read`: its digest, or for a
 * Secret the unkeyed digest written before digests were keyed (then rewritten keyed on the next
 * write, never triggered for).
 */
export function recordedMatches(recorded: string | undefined, read: Pick<PlannedRead, 'digest' | 'legacyDigest'>): boolean {
  if (recorded === undefined) return false
  return recorded === read.digest || (read.legacyDigest !== undefined && recorded === read.legacyDigest)
}

/** A Secret's unkeyed digests for keying: of the content to record, and the one an older run may have recorded. */
export interface SecretDigests {
  readonly current?: PlainDigest
  readonly legacy?: PlainDigest
}

/**
 * A release's reads with each Secret's digest keyed (`current`), and `legacy` kept to recognise a
 * config-digest written before digests were keyed. A Secret with no `current` (deleted, unreadable)
 * keeps no digest: it then counts as changed, and no digest is recorded for it.
 */
export function keyedReads(reads: readonly PlannedRead[], digestsOf: (id: SourceId) => SecretDigests, key: DigestKey): PlannedRead[] {
  return reads.map((read) => {
    if (!isSecretId(read.id)) return read
    const { current, legacy } = digestsOf(read.id)
    const { digest: _unkeyed, legacyDigest: _legacy, ...rest } = read
    return { ...rest, ...(current === undefined ? {} : { digest: keyedDigest(current, key) }), ...(legacy === undefined ? {} : { legacyDigest: legacy }) }
  })
}

/** The digest to show in a message or report: a ConfigMap's first 12 hex characters; a Secret's never (undefined). */
export function shownDigest(id: SourceId, digest: Digest | undefined): string | undefined {
  if (digest === undefined || isSecretId(id) || !digest.startsWith('sha256:')) return undefined
  return short(digest)
}

/** A digest's (or commit's) first 12 hex characters, for messages. Never for a Secret's digest: see shownDigest. */
export function short(digest: string): string {
  return digest.replace(/^sha256:/, '').slice(0, 12)
}
