// The common case of YAML loaded fast: js-yaml's event parser builds the values, with the
// `yaml` library's own scalar rules (its schema's tags, tried in its order), so a file loads to
// exactly what `yaml` gives. Anything outside that common case (tags, anchors and aliases, directives,
// merge keys, null or complex keys, duplicate keys, any error) answers undefined, and the caller parses
// with `yaml`, which also finds the lines of problems. The parse stage was 6× js-yaml with
// `yaml` alone (BENCHMARKS.md §9).

import {
  constructFromEvents,
  defineMappingTag,
  defineScalarTag,
  EVENT_ID,
  FAILSAFE_SCHEMA,
  getScalarValue,
  NOT_RESOLVED,
  parseEvents,
  SCALAR_STYLE,
  Schema as LoaderSchema,
  type Event,
  type ScalarEvent,
} from 'js-yaml'
import { Document, isScalar, type DocumentOptions, type ParseOptions, type SchemaOptions } from 'yaml'
import { compareText } from '../lib/sort.ts'

/** One document's value and the offset where its content starts; an empty one (only comments, or nothing between two `---`) has neither. */
export type LoadedDocument = { readonly empty: false; readonly value: unknown; readonly offset: number } | { readonly empty: true }

/** How a kind of text is read: the `yaml` options it would be parsed with. */
export interface YamlRules {
  readonly loader: LoaderSchema
  /** A plain scalar's value as `yaml` reads it; throws where the loader steps aside (`<<`, a rule's error). */
  readonly plain: (source: string) => unknown
}

type ScalarRule = { readonly test: RegExp; resolve(source: string, onError: (message: string) => void, options: { intAsBigInt: boolean }): unknown }

/** The loader rules for text `yaml` parses with `options`. */
export function yamlRules(options: ParseOptions & DocumentOptions & SchemaOptions): YamlRules {
  // The plain-scalar tags `yaml` tries, in its order (compose-scalar.ts: default tags with a test).
  const rules = new Document(null, options).schema.tags.filter((tag): tag is typeof tag & ScalarRule => tag.default === true && tag.test !== undefined)
  const resolverOptions = { intAsBigInt: options.intAsBigInt === true }
  const onError = (message: string): never => {
    throw new Error(message)
  }
  // One test for "any rule matches", so most plain strings (names, words) cost one regex.
  const any = rules.every((rule) => rule.test.flags === '') ? new RegExp(rules.map((rule) => `(?:${rule.test.source})`).join('|')) : undefined
  const resolve = (source: string): unknown => {
    // `yaml` reads `<<` as a merge key where a key is expected: not decidable here.
    if (source === '<<') throw new Error('merge key')
    if (any !== undefined && !any.test(source)) return NOT_RESOLVED
    for (const rule of rules) {
      if (!rule.test.test(source)) continue
      const value = rule.resolve(source, onError, resolverOptions)
      return isScalar(value) ? value.value : value
    }
    return NOT_RESOLVED
  }
  const plain = defineScalarTag('tag:helmrelease-trigger,2026:plain', {
    implicit: true,
    implicitFirstChars: FIRST_CHARS,
    identify: () => false,
    resolve: (source, isExplicit) => (isExplicit ? NOT_RESOLVED : resolve(source)),
  })
  // As the loader reads a plain scalar: only a first character in FIRST_CHARS tries the rules.
  const plainValue = (source: string): unknown => {
    if (!FIRST_CHAR_SET.has(source.charAt(0))) return source
    const value = resolve(source)
    return value === NOT_RESOLVED ? source : value
  }
  return { loader: FAILSAFE_SCHEMA.withTags(plainKeyMap, plain), plain: plainValue }
}

// Every first character a `yaml` core or YAML 1.1 plain-scalar test can match; others are strings.
const FIRST_CHARS = ['', '~', 'n', 'N', 't', 'T', 'f', 'F', 'y', 'Y', 'o', 'O', 'e', 'E', '-', '+', '.', '<', ...'0123456789']
const FIRST_CHAR_SET = new Set(FIRST_CHARS)

/**
 * Plain objects as `yaml`'s toJS builds them, for keys on which both agree: `yaml` turns a null
 * key into '' and a collection key into its YAML text, js-yaml does neither.
 */
const plainKeyMap = defineMappingTag<Record<string, unknown>>('tag:yaml.org,2002:map', {
  create: () => ({}),
  identify: (data) => typeof data === 'object' && data !== null && Object.getPrototypeOf(data) === Object.prototype,
  addPair: (container, key, value) => {
    if (key === null || typeof key === 'object' || typeof key === 'symbol') return 'a null or complex key'
    const name = typeof key === 'string' ? key : String(key)
    if (name === '__proto__') return 'a __proto__ key'
    container[name] = value
    return ''
  },
  has: (container, key) =>
    typeof key === 'string' ? Object.hasOwn(container, key) : key !== null && typeof key !== 'object' && Object.hasOwn(container, String(key)),
  keys: (container) => Object.keys(container),
  get: (container, key) => container[String(key)],
})

/** Every document of `text`, or undefined when `yaml` must parse it (see the file comment). */
export function loadDocuments(text: string, rules: YamlRules): LoadedDocument[] | undefined {
  const common = commonEvents(text)
  return common === undefined ? undefined : construct(common, text, rules)
}

/** The value of text that is exactly one non-empty document, loaded fast; undefined when it is not, or when `yaml` must parse it. */
export function loadOnlyDocument(text: string, rules: YamlRules): { readonly value: unknown } | undefined {
  return onlyDocument(loadDocuments(text, rules))
}

/** The events of text in the common case, and where each document's content starts (-1: an empty document). */
interface CommonEvents {
  readonly events: Event[]
  readonly offsets: readonly number[]
}

/** js-yaml's events for `text`, or undefined when anything in them is for `yaml` to read (see the file comment). */
function commonEvents(text: string): CommonEvents | undefined {
  if (mayReadApart(text) && MARKERS_READ_APART.test(text)) return undefined
  let events
  try {
    events = parseEvents(text, {})
  } catch {
    return undefined
  }
  const offsets: number[] = []
  for (let i = 0; i < events.length; i++) {
    const event = events[i]
    if (event === undefined) return undefined
    switch (event.type) {
      case EVENT_ID.DOCUMENT: {
        if (event.directives.length > 0) return undefined
        const root = events[i + 1]
        if (root === undefined || root.type === EVENT_ID.POP || root.type === EVENT_ID.ALIAS || root.type === EVENT_ID.DOCUMENT) return undefined
        if (root.type === EVENT_ID.SCALAR) {
          // An empty document; a scalar document (`~`, a string) is for `yaml` to report.
          if (root.valueStart !== -1 || root.tagStart !== -1 || root.anchorStart !== -1) return undefined
          offsets.push(-1)
        } else {
          offsets.push(root.start)
        }
        break
      }
      case EVENT_ID.ALIAS:
        return undefined
      case EVENT_ID.POP:
        break
      default:
        // An anchor also moves where `yaml` says a node starts.
        if (event.tagStart !== -1 || event.anchorStart !== -1) return undefined
    }
  }
  return { events, offsets }
}

/** The documents the events build, or undefined when js-yaml's construction refuses them (a duplicate, null or `__proto__` key, `<<`). */
function construct(common: CommonEvents, text: string, rules: YamlRules): LoadedDocument[] | undefined {
  const { events, offsets } = common
  let values: unknown[]
  try {
    values = constructFromEvents(events, { source: text, schema: rules.loader, maxAliases: 0 })
  } catch {
    return undefined
  }
  if (values.length !== offsets.length) return undefined
  return values.map((value, i) => {
    const offset = offsets[i] ?? -1
    return offset === -1 ? { empty: true } : { empty: false, value, offset }
  })
}

function onlyDocument(documents: readonly LoadedDocument[] | undefined): { readonly value: unknown } | undefined {
  const only = documents?.length === 1 ? documents[0] : undefined
  return only === undefined || only.empty ? undefined : only
}

/**
 * How a document is folded bottom-up into one result, with no objects built in between (the
 * semantic digest's canonical JSON: BENCHMARKS.md §9). Each part answers from its parts' results.
 */
export interface Fold<T> {
  /** A scalar's value as the loader gives it; undefined declines, and the document is then loaded whole. */
  scalar(value: unknown): T | undefined
  sequence(items: readonly T[]): T
  /** Entries sorted by key (UTF-16 code units, as `sort()` orders strings), no two keys alike. */
  mapping(entries: readonly FoldedEntry<T>[]): T
}

export interface FoldedEntry<T> {
  readonly key: string
  readonly value: T
}

/** A document folded, or its value as loadOnlyDocument gives it when the fold declined. */
export type FoldedDocument<T> = { readonly folded: T } | { readonly value: unknown }

/**
 * Text that is exactly one non-empty document, folded (see Fold); undefined exactly when
 * loadOnlyDocument gives undefined. Anything the fold does not take as it comes (a null, complex or
 * `__proto__` key, a duplicate key, a declined scalar, `<<`) is left to the loader, so the fold
 * only ever answers for documents the loader reads without a question, and answers from the same values.
 */
export function foldOnlyDocument<T>(text: string, rules: YamlRules, fold: Fold<T>): FoldedDocument<T> | undefined {
  const common = commonEvents(text)
  if (common === undefined) return undefined
  if (common.offsets.length === 1 && common.offsets[0] !== -1) {
    const folded = foldEvents(common.events, text, rules, fold)
    if (folded !== undefined) return { folded }
  }
  return onlyDocument(construct(common, text, rules))
}

/** The one document of `events` folded, or undefined when the fold declines anything. */
function foldEvents<T>(events: readonly Event[], text: string, rules: YamlRules, fold: Fold<T>): T | undefined {
  // events[0] opens the document; its root follows.
  let at = 1
  const scalarValue = (event: ScalarEvent): unknown => {
    const source = getScalarValue(text, event)
    return event.style === SCALAR_STYLE.PLAIN ? rules.plain(source) : source
  }
  const node = (): T | undefined => {
    const event = events[at++]
    switch (event?.type) {
      case EVENT_ID.SCALAR:
        return fold.scalar(scalarValue(event))
      case EVENT_ID.SEQUENCE: {
        const items: T[] = []
        while (events[at]?.type !== EVENT_ID.POP) {
          const item = node()
          if (item === undefined) return undefined
          items.push(item)
        }
        at++
        return fold.sequence(items)
      }
      case EVENT_ID.MAPPING: {
        const entries: FoldedEntry<T>[] = []
        for (let next = events[at]; next?.type !== EVENT_ID.POP; next = events[at]) {
          if (next?.type !== EVENT_ID.SCALAR) return undefined
          at++
          const key = keyName(scalarValue(next))
          const value = key === undefined ? undefined : node()
          if (key === undefined || value === undefined) return undefined
          entries.push({ key, value })
        }
        at++
        return sortEntries(entries) ? fold.mapping(entries) : undefined
      }
      default:
        return undefined
    }
  }
  try {
    return node()
  } catch {
    // A plain scalar the loader steps aside for (`<<`, a rule's error).
    return undefined
  }
}

/** A key's name as plainKeyMap stores it; undefined for the keys it refuses (null, complex, `__proto__`). */
function keyName(key: unknown): string | undefined {
  if (key === null || typeof key === 'object' || typeof key === 'symbol') return undefined
  const name = typeof key === 'string' ? key : String(key)
  return name === '__proto__' ? undefined : name
}

/** Sorts the entries in place by key; false when two keys are alike (a duplicate: the loader's to refuse). */
function sortEntries<T>(entries: FoldedEntry<T>[]): boolean {
  entries.sort((a, b) => compareText(a.key, b.key))
  return entries.every((entry, i) => i === 0 || entries[i - 1]?.key !== entry.key)
}

// Where js-yaml and `yaml` read lines apart: an indented `---` or `...` (a document marker to
// js-yaml only), `---` with text right after it, any `...` (an empty document first to `yaml`
// only), a line indented with a tab, a lone carriage return as a line break, a BOM inside the text.
const MARKERS_READ_APART = /^[ \t]+(?:---|\.\.\.)(?:[ \t]|$)|^---[^ \t\r\n]|^\.\.\.|^\t|\r(?!\n)|\ufeff/m

/** Whether MARKERS_READ_APART can match at all: most files hold none of these characters. */
function mayReadApart(text: string): boolean {
  return text.includes('---') || text.includes('...') || text.includes('\t') || text.includes('\r') || text.includes('\ufeff')
}

/** Line numbers (1-based) of ascending offsets, counted in one pass over the text. */
export function lineCounter(text: string): (offset: number) => number {
  let at = 0
  let line = 1
  return (offset) => {
    if (offset < at) {
      at = 0
      line = 1
    }
    for (let i = text.indexOf('\n', at); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
      line++
      at = i + 1
    }
    return line
  }
}
