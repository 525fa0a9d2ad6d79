// From a rendered object back to what the user edits. kustomize says where each object came
// from (`config.kubernetes.io/origin`, asked for with `buildMetadata: [originAnnotations]`):
// a file for a resource, a kustomization file for a generated ConfigMap/Secret. We add the
// line: the document's first line in the file; for a generator, its entry in kustomization.yaml
// and, per data key, the file or literal or env line the value comes from.

import { posix } from 'node:path'
import { isMap, isScalar, isSeq, LineCounter, parseAllDocuments, parseDocument, type Node, type YAMLMap } from 'yaml'
import type { Provenance } from '../core/rendered.ts'
import type { Closure } from './closure.ts'
import { isRecord } from './flux-objects.ts'
import type { TreeView } from './snapshot.ts'

export const ORIGIN_ANNOTATION = 'config.kubernetes.io/origin'

export type Origin =
  { readonly kind: 'file'; readonly path: string } | { readonly kind: 'generator'; readonly configuredIn: string; readonly generator: string }

/** The origin annotation's value, paths relative to the build directory. */
export function parseOrigin(value: string | undefined): Origin | undefined {
  if (value === undefined) return undefined
  let parsed: unknown = plainOrigin(value)
  try {
    parsed ??= parseDocument(value).toJS()
  } catch {
    return undefined
  }
  if (!isRecord(parsed)) return undefined
  if (typeof parsed.path === 'string' && parsed.repo === undefined) return { kind: 'file', path: parsed.path }
  if (typeof parsed.configuredIn === 'string' && isRecord(parsed.configuredBy) && typeof parsed.configuredBy.kind === 'string') {
    return { kind: 'generator', configuredIn: parsed.configuredIn, generator: parsed.configuredBy.kind }
  }
  return undefined
}

/**
 * kustomize writes the annotation as plain `key: value` lines (configuredBy's nested two spaces
 * in): read those without a YAML parser, once per object. Undefined for anything else (quoted
 * values, other shapes), which the YAML parser then reads.
 */
function plainOrigin(value: string): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {}
  let nested: Record<string, unknown> | undefined
  for (const line of value.split('\n')) {
    if (line === '') continue
    const match = /^( {2})?([A-Za-z]+):(?: ([^'"\s{[&*!|>%@`#][^#]*?))?$/.exec(line)
    if (match === null) return undefined
    const [, indent, key = '', text] = match
    if (indent !== undefined) {
      if (nested === undefined || text === undefined) return undefined
      nested[key] = text
    } else if (text === undefined) {
      nested = {}
      out[key] = nested
    } else {
      nested = undefined
      out[key] = text
    }
  }
  return out
}

/** Reads files of one tree (a commit's, or an artifact's), each read and indexed once. */
export class TreeFiles {
  private readonly texts = new Map<string, Promise<string | undefined>>()
  private readonly indexes = new Map<string, Promise<readonly DocumentEntry[]>>()
  private readonly view: TreeView
  constructor(view: TreeView) {
    this.view = view
  }

  text(path: string): Promise<string | undefined> {
    let found = this.texts.get(path)
    if (found === undefined) {
      found = this.view.text(path).catch(() => undefined)
      this.texts.set(path, found)
    }
    return found
  }

  /** Kind, name and first line of each document in a file, parsed once however many objects it holds. */
  documents(path: string): Promise<readonly DocumentEntry[]> {
    let found = this.indexes.get(path)
    if (found === undefined) {
      found = this.text(path).then((text) => (text === undefined ? [] : indexDocuments(text)))
      this.indexes.set(path, found)
    }
    return found
  }
}

interface DocumentEntry {
  readonly kind: unknown
  readonly name: unknown
  readonly line: number
}

function indexDocuments(text: string): DocumentEntry[] {
  return singleDocument(text) ?? parsedDocuments(text)
}

/**
 * Most manifests are one document: its first line is the first that is no comment, blank, `---`
 * or directive, and its kind a top-level `kind:` line. Anything less plain goes to the parser.
 */
function singleDocument(text: string): DocumentEntry[] | undefined {
  const lines = text.split('\n')
  let first = -1
  for (let i = 0; i < lines.length && first < 0; i++) {
    const line = (lines[i] ?? '').replace(/\r$/, '')
    if (/^\s*(#.*)?$/.test(line)) continue
    if (line.startsWith('%') || (line.startsWith('---') && line.trim() !== '---')) return undefined
    if (line !== '---') first = i
  }
  if (first < 0 || lines.slice(first + 1).some((l) => /^(---|\.\.\.)/.test(l))) return undefined
  const kinds = lines.filter((l) => l.startsWith('kind:'))
  const kind = kinds.length === 1 ? /^kind:[ \t]*([A-Za-z0-9]+)[ \t]*\r?$/.exec(kinds[0] ?? '')?.[1] : undefined
  if (kind === undefined) return undefined
  return [{ kind, name: undefined, line: first + 1 }]
}

function parsedDocuments(text: string): DocumentEntry[] {
  const counter = new LineCounter()
  const out: DocumentEntry[] = []
  for (const doc of parseAllDocuments(text, { lineCounter: counter, uniqueKeys: false })) {
    if (!('contents' in doc) || !isMap(doc.contents)) continue
    out.push({ kind: doc.get('kind'), name: doc.getIn(['metadata', 'name']), line: lineOf(counter, doc.contents) })
  }
  return out
}

const lineOf = (counter: LineCounter, node: Node | null | undefined, fallback = 1): number => (node?.range ? counter.linePos(node.range[0]).line : fallback)

/** Line of the document holding `kind` named like `name` (prefixes and suffixes allowed), else 1. */
export async function documentLine(files: TreeFiles, path: string, kind: string, name: string): Promise<number> {
  let best: { line: number; score: number } | undefined
  for (const doc of await files.documents(path)) {
    if (doc.kind !== kind) continue
    const score = doc.name === name ? 3 : typeof doc.name === 'string' && name.includes(doc.name) ? 2 : 1
    if (best === undefined || score > best.score) best = { line: doc.line, score }
    if (score === 3) break
  }
  return best?.line ?? 1
}

/**
 * Where each field under `spec` of an object is written, keyed by the field's path as JSON: the
 * resource's document (`path`), then the strategic-merge patch files of the closure's
 * kustomizations that name the object, bases first, so a field a patch sets points at the patch.
 * Lists are one field (a spec change compares them whole).
 */
export async function specOrigins(files: TreeFiles, closure: Closure, path: string, kind: string, name: string): Promise<Record<string, Provenance>> {
  const out: Record<string, Provenance> = {}
  const record = async (file: string, lenient: boolean): Promise<void> => {
    for (const [field, line] of Object.entries(await specLinesIn(files, file, kind, name, lenient))) out[field] = { file, line }
  }
  await record(path, true)
  for (const kustomization of closure.kustomizations) {
    for (const patch of await patchFiles(files, kustomization)) if (patch !== path) await record(patch, false)
  }
  return out
}

/** The patch files a kustomization file names (`patches[].path`, `patchesStrategicMerge`). */
export async function patchFiles(files: TreeFiles, kustomization: string): Promise<string[]> {
  const text = await files.text(kustomization)
  if (text === undefined) return []
  let value: unknown
  try {
    value = parseDocument(text, { uniqueKeys: false }).toJS()
  } catch {
    return []
  }
  if (!isRecord(value)) return []
  const dir = posix.dirname(kustomization) === '.' ? '' : posix.dirname(kustomization)
  const paths = [
    ...(Array.isArray(value.patches) ? value.patches.flatMap((p) => (isRecord(p) && typeof p.path === 'string' ? [p.path] : [])) : []),
    ...(Array.isArray(value.patchesStrategicMerge) ? value.patchesStrategicMerge.filter((p): p is string => typeof p === 'string' && !p.includes('\n')) : []),
  ]
  return paths.map((p) => posix.normalize(posix.join(dir, p)))
}

/** The document of `file` holding `kind` named `name` (any one of its kind when `lenient` and alone), with its line counter. */
async function documentIn(
  files: TreeFiles,
  file: string,
  kind: string,
  name: string,
  lenient: boolean,
): Promise<{ contents: YAMLMap; counter: LineCounter } | undefined> {
  const text = await files.text(file)
  if (text === undefined || !text.includes(kind)) return undefined
  const counter = new LineCounter()
  let docs
  try {
    docs = parseAllDocuments(text, { lineCounter: counter, uniqueKeys: false })
  } catch {
    return undefined
  }
  const matching = docs.filter((d) => 'contents' in d && isMap(d.contents) && d.get('kind') === kind)
  const named = matching.find((d) => 'contents' in d && name.includes(String(d.getIn(['metadata', 'name']))))
  const doc = named ?? (lenient && matching.length === 1 ? matching[0] : undefined)
  if (doc === undefined || !('contents' in doc) || !isMap(doc.contents)) return undefined
  return { contents: doc.contents, counter }
}

/** Line of each field under `spec` in the document of `file` holding `kind` named `name` (any one of its kind when `lenient` and alone). */
async function specLinesIn(files: TreeFiles, file: string, kind: string, name: string, lenient: boolean): Promise<Record<string, number>> {
  const doc = await documentIn(files, file, kind, name, lenient)
  if (doc === undefined) return {}
  const out: Record<string, number> = {}
  const walk = (node: unknown, at: readonly string[]): void => {
    if (!isMap(node)) return
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue
      const path = [...at, String(pair.key.value)]
      out[JSON.stringify(path)] = lineOf(doc.counter, pair.key as Node)
      walk(pair.value, path)
    }
  }
  walk(doc.contents.get('spec', true), [])
  return out
}

/**
 * Where each key of a ConfigMap or Secret written as a resource starts its value: the key's line,
 * or the line after it for a block scalar (`values.yaml: |`), whose content starts there; so the
 * plan's first-differing-line offset lands on the edited line, as for a generated key.
 */
export async function dataKeyOrigins(files: TreeFiles, file: string, kind: 'ConfigMap' | 'Secret', name: string): Promise<Record<string, Provenance>> {
  const doc = await documentIn(files, file, kind, name, true)
  if (doc === undefined) return {}
  const out: Record<string, Provenance> = {}
  for (const field of ['data', 'binaryData', 'stringData']) {
    const node = doc.contents.get(field, true)
    if (!isMap(node)) continue
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue
      const block = isScalar(pair.value) && (pair.value.type === 'BLOCK_LITERAL' || pair.value.type === 'BLOCK_FOLDED')
      out[String(pair.key.value)] = { file, line: lineOf(doc.counter, pair.key as Node) + (block ? 1 : 0) }
    }
  }
  return out
}

interface GeneratorEntry {
  readonly file: string
  readonly line: number
  readonly behavior: string
  readonly keys: ReadonlyMap<string, Provenance>
}

/**
 * Where a generated ConfigMap/Secret was declared and where each of its keys comes from,
 * following `behavior: merge|replace` through the overlays that include the declaring file.
 */
export async function generatorProvenance(
  files: TreeFiles,
  closure: Closure,
  configuredIn: string,
  kind: 'ConfigMap' | 'Secret',
  renderedName: string,
): Promise<{ origin: Provenance; keys: Record<string, Provenance> } | undefined> {
  const field = kind === 'ConfigMap' ? 'configMapGenerator' : 'secretGenerator'
  const related = relatedKustomizations(closure, configuredIn)
  const entries: GeneratorEntry[] = []
  let name: string | undefined
  // The declaring entry first: its name is the one the others merge into.
  for (const file of [configuredIn, ...related.filter((f) => f !== configuredIn)]) {
    for (const entry of await generatorEntries(files, file, field)) {
      if (name === undefined ? renderedName.includes(entry.name) : entry.name === name) {
        if (name === undefined || entry.name.length > name.length) name = entry.name
      }
    }
  }
  if (name === undefined) return undefined
  for (const file of related) for (const entry of await generatorEntries(files, file, field)) if (entry.name === name) entries.push(entry)
  const keys = new Map<string, Provenance>()
  for (const entry of entries) {
    if (entry.behavior !== 'merge') keys.clear()
    for (const [key, where] of entry.keys) keys.set(key, where)
  }
  const declared = entries.find((e) => e.file === configuredIn) ?? entries.at(-1)
  if (declared === undefined) return undefined
  return { origin: { file: declared.file, line: declared.line }, keys: Object.fromEntries(keys) }
}

/** The kustomization files that include `file` or that it includes, bases first. */
function relatedKustomizations(closure: Closure, file: string): string[] {
  const related = new Set<string>([file])
  const up = (f: string): void => {
    for (const parent of closure.includedBy.get(f) ?? []) {
      if (related.has(parent)) continue
      related.add(parent)
      up(parent)
    }
  }
  const down = (f: string): void => {
    for (const [child, parents] of closure.includedBy) {
      if (!parents.has(f) || related.has(child)) continue
      related.add(child)
      down(child)
    }
  }
  up(file)
  down(file)
  return closure.kustomizations.filter((k) => related.has(k))
}

async function generatorEntries(files: TreeFiles, file: string, field: string): Promise<(GeneratorEntry & { name: string })[]> {
  const text = await files.text(file)
  if (text === undefined) return []
  const counter = new LineCounter()
  const doc = parseDocument(text, { lineCounter: counter, uniqueKeys: false })
  const list = doc.get(field, true)
  if (!isSeq(list)) return []
  const dir = posix.dirname(file) === '.' ? '' : posix.dirname(file)
  const out: (GeneratorEntry & { name: string })[] = []
  for (const item of list.items) {
    if (!isMap(item)) continue
    const nameNode = item.get('name', true)
    const name = isScalar(nameNode) ? String(nameNode.value) : undefined
    if (name === undefined) continue
    const behavior = String(item.get('behavior') ?? 'create')
    const keys = new Map<string, Provenance>()
    const seq = (key: string): Node[] => {
      const node = item.get(key, true)
      return isSeq(node) ? (node.items as Node[]) : []
    }
    for (const node of seq('files')) {
      if (!isScalar(node)) continue
      const spec = String(node.value)
      const eq = spec.indexOf('=')
      const path = eq < 0 ? spec : spec.slice(eq + 1)
      const key = eq < 0 ? posix.basename(path) : spec.slice(0, eq)
      keys.set(key, { file: posix.join(dir, path), line: 1 })
    }
    for (const node of seq('literals')) {
      if (!isScalar(node)) continue
      const spec = String(node.value)
      const eq = spec.indexOf('=')
      if (eq > 0) keys.set(spec.slice(0, eq), { file, line: lineOf(counter, node) })
    }
    const envNode = item.get('env', true)
    const envs = [...seq('envs'), ...(isScalar(envNode) ? [envNode] : [])]
    for (const node of envs) {
      if (!isScalar(node)) continue
      const envFile = posix.join(dir, String(node.value))
      const envText = await files.text(envFile)
      if (envText === undefined) continue
      envText.split(/\r?\n/).forEach((line, index) => {
        const trimmed = line.replace(/^\uFEFF/, '').trim()
        if (trimmed === '' || trimmed.startsWith('#')) return
        const key = trimmed.split('=')[0]?.trim()
        if (key) keys.set(key, { file: envFile, line: index + 1 })
      })
    }
    out.push({ name, file, line: lineOf(counter, item), behavior, keys })
  }
  return out
}
