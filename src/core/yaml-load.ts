// The common case of YAML loaded fast: js-yaml's event parser reads the text, and the values are
// built here from its events with the `yaml` library's own scalar rules (its schema's tags, tried
// in its order), so a file loads to exactly what `yaml` gives. Anything outside that common case
// (tags, anchors and aliases, directives, merge keys, null or complex keys, duplicate keys, any
// error) answers undefined, and the caller parses with `yaml`, which also finds the lines of
// problems. The parse stage was 6× js-yaml with `yaml` alone (BENCHMARKS.md §9).

import { EVENT_ID, getScalarValue, parseEvents, SCALAR_STYLE, type Event, type ScalarEvent } from 'js-yaml'
import { Document, isScalar, type DocumentOptions, type ParseOptions, type SchemaOptions } from 'yaml'

/** One document's value and the offset where its content starts; an empty one (only comments, or nothing between two `---`) has neither. */
export type LoadedDocument = { readonly empty: false; readonly value: unknown; readonly offset: number } | { readonly empty: true }

/** How a kind of text is read: the `yaml` options it would be parsed with. */
export interface YamlRules {
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
  const plain = (source: string): unknown => {
    if (!FIRST_CHARS.has(source.charAt(0))) return source
    // `yaml` reads `<<` as a merge key where a key is expected: not decidable here.
    if (source === '<<') throw new Error('merge key')
    if (any !== undefined && !any.test(source)) return source
    for (const rule of rules) {
      if (!rule.test.test(source)) continue
      const value = rule.resolve(source, onError, resolverOptions)
      return isScalar(value) ? value.value : value
    }
    return source
  }
  return { plain }
}

// Every first character a `yaml` core or YAML 1.1 plain-scalar test can match; others are strings.
const FIRST_CHARS = new Set(['', '~', 'n', 'N', 't', 'T', 'f', 'F', 'y', 'Y', 'o', 'O', 'e', 'E', '-', '+', '.', '<', ...'0123456789'])

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
  readonly events: readonly Event[]
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

/** The documents the events build, or undefined for a key the loader refuses (duplicate, null, complex, `__proto__`) or `<<`. */
function construct(common: CommonEvents, text: string, rules: YamlRules): LoadedDocument[] | undefined {
  const documents: LoadedDocument[] = []
  const walk: Walk<unknown, Record<string, unknown>> = { events: common.events, at: 0, text, rules, fold: OBJECTS }
  try {
    for (const offset of common.offsets) {
      // A document: its opening event, its root (an empty scalar when it is empty), its closing POP.
      walk.at++
      if (offset === -1) {
        walk.at++
        documents.push({ empty: true })
      } else {
        const value = foldNode(walk)
        if (value === undefined) return undefined
        documents.push({ empty: false, value, offset })
      }
      if (walk.events[walk.at++]?.type !== EVENT_ID.POP) return undefined
    }
  } catch {
    // A plain scalar the loader steps aside for (`<<`, a rule's error).
    return undefined
  }
  return walk.at === walk.events.length ? documents : undefined
}

function onlyDocument(documents: readonly LoadedDocument[] | undefined): { readonly value: unknown } | undefined {
  const only = documents?.length === 1 ? documents[0] : undefined
  return only === undefined || only.empty ? undefined : only
}

/**
 * How a document is folded bottom-up into one result from its events (the values as `yaml` gives
 * them, or the semantic digest's canonical JSON with no objects built in between: BENCHMARKS.md
 * §9). M is a mapping while its entries are added.
 */
export interface Fold<T, M> {
  /** A scalar's value as `yaml` reads it; undefined declines. */
  scalar(value: unknown): T | undefined
  sequence(items: T[]): T
  mapping(): M
  /** Adds an entry, in document order; false declines (a duplicate key). */
  add(mapping: M, key: string, value: T): boolean
  /** The finished mapping; undefined declines. */
  end(mapping: M): T | undefined
}

/** Plain objects as `yaml`'s toJS builds them, for the keys on which both agree (see keyName); a duplicate key declines. */
const OBJECTS: Fold<unknown, Record<string, unknown>> = {
  scalar: (value) => value,
  sequence: (items) => items,
  mapping: () => ({}),
  add: (object, key, value) => {
    if (Object.hasOwn(object, key)) return false
    object[key] = value
    return true
  },
  end: (object) => object,
}

/** A document folded, or its value as loadOnlyDocument gives it when the fold declined. */
export type FoldedDocument<T> = { readonly folded: T } | { readonly value: unknown }

/**
 * Text that is exactly one non-empty document, folded (see Fold); undefined exactly when
 * loadOnlyDocument gives undefined. When the fold declines, the document is loaded as
 * loadOnlyDocument loads it, so a fold only has to answer for what it takes as it comes.
 */
export function foldOnlyDocument<T, M>(text: string, rules: YamlRules, fold: Fold<T, M>): FoldedDocument<T> | undefined {
  const common = commonEvents(text)
  if (common === undefined) return undefined
  if (common.offsets.length === 1 && common.offsets[0] !== -1) {
    const walk: Walk<T, M> = { events: common.events, at: 1, text, rules, fold }
    let folded: T | undefined
    try {
      folded = foldNode(walk)
    } catch {
      folded = undefined
    }
    if (folded !== undefined) return { folded }
  }
  return onlyDocument(construct(common, text, rules))
}

/** A fold under way: the events, and the one the next node starts at. */
interface Walk<T, M> {
  readonly events: readonly Event[]
  at: number
  readonly text: string
  readonly rules: YamlRules
  readonly fold: Fold<T, M>
}

/** The node at `walk.at` folded, the walk moved past it; undefined when the fold declines. Throws where `rules.plain` does. */
function foldNode<T, M>(walk: Walk<T, M>): T | undefined {
  const { events, fold } = walk
  const event = events[walk.at++]
  switch (event?.type) {
    case EVENT_ID.SCALAR:
      return fold.scalar(scalarValue(event, walk))
    case EVENT_ID.SEQUENCE: {
      const items: T[] = []
      while (events[walk.at]?.type !== EVENT_ID.POP) {
        const item = foldNode(walk)
        if (item === undefined) return undefined
        items.push(item)
      }
      walk.at++
      return fold.sequence(items)
    }
    case EVENT_ID.MAPPING: {
      const mapping = fold.mapping()
      for (let next = events[walk.at]; next?.type !== EVENT_ID.POP; next = events[walk.at]) {
        if (next?.type !== EVENT_ID.SCALAR) return undefined
        walk.at++
        const key = keyName(scalarValue(next, walk))
        const value = key === undefined ? undefined : foldNode(walk)
        if (key === undefined || value === undefined || !fold.add(mapping, key, value)) return undefined
      }
      walk.at++
      return fold.end(mapping)
    }
    default:
      return undefined
  }
}

/** A scalar's value: a plain one by the rules, any other (quoted, block) its text. */
function scalarValue(event: ScalarEvent, walk: { readonly text: string; readonly rules: YamlRules }): unknown {
  const source = getScalarValue(walk.text, event)
  return event.style === SCALAR_STYLE.PLAIN ? walk.rules.plain(source) : source
}

/**
 * A key's name as `yaml`'s toJS names it, for the keys on which it and js-yaml agree; undefined for
 * the others: `yaml` turns a null key into '' and a collection key into its YAML text, and a
 * `__proto__` key is not a plain object's own key.
 */
function keyName(key: unknown): string | undefined {
  if (key === null || typeof key === 'object' || typeof key === 'symbol') return undefined
  const name = typeof key === 'string' ? key : String(key)
  return name === '__proto__' ? undefined : name
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
