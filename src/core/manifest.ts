// One repository file → the ConfigMaps/Secrets, HelmReleases and kustomize namespace it
// declares, plus what is wrong with it. Never throws on content and never gives up on a
// file because of one bad document: every problem is reported with its line.

import { posix } from 'node:path'
import { LineCounter, isMap, isNode, isScalar, isSeq, parseAllDocuments } from 'yaml'
import { withUniqueKeys } from './yaml-keys.ts'
import { lineCounter, loadDocuments, yamlRules } from './yaml-load.ts'
import { capProblems, MAX_PROBLEMS_PER_FILE } from './problem-caps.ts'
import type { Document } from 'yaml'
import { contentOfConfigMap, contentOfSecret, digestAndEncoding } from './digest.ts'
import type { DigestContent } from './digest.ts'
import { isDnsLabel, isDnsSubdomain, keysFor, namespaceProblem, objectNameProblem } from './keys.ts'
import { quoted } from '../lib/untrusted.ts'
import type { Keys } from './keys.ts'
import type { FileContent, FileProblem, Origin, ReleaseManifest, ReleaseRef, Severity, SourceKind, SourceManifest, ValuesReference } from './model.ts'

export const DEFAULT_MAX_BYTES = 1024 * 1024

/** A parsed ConfigMap/Secret whose namespace may still be unknown (no `metadata.namespace`). */
export interface ParsedSource extends Omit<SourceManifest, 'namespace'> {
  readonly namespace?: string
}

/** A parsed HelmRelease whose namespace may still be unknown (no `metadata.namespace`). */
export interface ParsedRelease extends Omit<ReleaseManifest, 'namespace' | 'origin'> {
  readonly namespace?: string
  readonly origin: Origin
}

export interface ManifestFile {
  readonly sources: readonly ParsedSource[]
  readonly releases: readonly ParsedRelease[]
  /** `namespace:` of a kustomize Kustomization in a kustomization.yaml/.yml file. */
  readonly kustomizationNamespace?: string
  readonly problems: readonly FileProblem[]
}

export interface ManifestOptions {
  readonly prefix: string
  /** Namespace of annotated targets without `<prefix>/helmreleases-namespace`. */
  readonly defaultNamespace: string
  readonly semanticDigest: boolean
  /** Larger files are skipped with an error. Default 1 MiB. */
  readonly maxBytes?: number
}

/** The source with its namespace decided by the caller when the manifest had none. */
export function resolveSource(source: ParsedSource, fallbackNamespace: string): SourceManifest {
  return { ...source, namespace: source.namespace ?? fallbackNamespace }
}

export function resolveRelease(release: ParsedRelease, fallbackNamespace: string): ReleaseManifest {
  return { ...release, namespace: release.namespace ?? fallbackNamespace }
}

export function isKustomizationFile(path: string): boolean {
  return KUSTOMIZATION_FILES.has(posix.basename(path))
}

const KUSTOMIZATION_FILES = new Set(['kustomization.yaml', 'kustomization.yml', 'Kustomization'])

export function parseManifestFile(path: string, content: FileContent, options: ManifestOptions): ManifestFile {
  const text = fileText(path, content, options.maxBytes ?? DEFAULT_MAX_BYTES, keysFor(options.prefix))
  if (typeof text !== 'string') return { sources: [], releases: [], problems: text }
  const context: FileContext = {
    file: path,
    keys: keysFor(options.prefix),
    options,
    kustomizationFile: isKustomizationFile(path),
  }
  const results = readFast(text, context) ?? readFull(text, context)
  const kustomizationNamespace = results.find((r) => r.kustomizationNamespace !== undefined)?.kustomizationNamespace
  return {
    sources: results.flatMap((r) => r.sources),
    releases: results.flatMap((r) => r.releases),
    ...(kustomizationNamespace === undefined ? {} : { kustomizationNamespace }),
    problems: capProblems(
      results.flatMap((r) => r.problems),
      MAX_PROBLEMS_PER_FILE,
      'file',
    ),
  }
}

/** Every document through `yaml`: exact lines for every problem. */
function readFull(text: string, context: FileContext): DocResult[] {
  const lineCounter = new LineCounter()
  // uniqueKeys: false, checked in linear time by withUniqueKeys (the library's check is quadratic).
  const documents = parseAllDocuments(text, { lineCounter, uniqueKeys: false, prettyErrors: false, logLevel: 'error' })
  return Array.from(documents, (doc) => readDocument(withUniqueKeys(doc), text, lineCounter, context))
}

// The options readFull parses with; the fast loader resolves plain scalars by the same rules.
const MANIFEST_RULES = yamlRules({})

/** Thrown when a fast read meets a problem: its line is found by reading the file with `yaml`. */
const NEEDS_FULL_READ = Symbol('needs the full read')

/**
 * The common case, a file without problems, loaded fast (yaml-load.ts); undefined when the file
 * has anything `yaml` must read or any problem to report, which readFull then places exactly.
 */
function readFast(text: string, file: FileContext): DocResult[] | undefined {
  const documents = loadDocuments(text, MANIFEST_RULES)
  if (documents === undefined) return undefined
  const lineAt = lineCounter(text)
  const needsFullRead = (): never => {
    throw NEEDS_FULL_READ
  }
  try {
    return documents.map((document) => {
      if (document.empty) return NOTHING
      const context: DocContext = { ...file, line: lineAt(document.offset), lineOf: needsFullRead, report: needsFullRead, errorCount: () => 0 }
      return { ...readObject(document.value, context), problems: [] }
    })
  } catch (error) {
    if (error === NEEDS_FULL_READ) return undefined
    throw error
  }
}

// ---------------------------------------------------------------------------------------
// File guards

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The file's text (BOM stripped), or why it is skipped. */
function fileText(path: string, content: FileContent, maxBytes: number, keys: Keys): string | FileProblem[] {
  switch (content.type) {
    case 'other':
      return []
    case 'symlink':
      return [{ severity: 'warning', file: path, message: symlinkMessage(path, content.target) }]
    case 'file':
      return decodeFile(path, content.bytes, maxBytes, keys)
    case 'oversized':
      return [{ severity: 'error', file: path, message: `file is larger than ${formatBytes(maxBytes)} (${formatBytes(content.size)}), skipped` }]
  }
}

function decodeFile(path: string, bytes: Uint8Array, maxBytes: number, keys: Keys): string | FileProblem[] {
  if (bytes.length > maxBytes) return [oversized(path, bytes, maxBytes, keys)]
  if (bytes.includes(0)) {
    return [{ severity: 'warning', file: path, message: 'binary file (contains NUL bytes), skipped' }]
  }
  try {
    return STRICT_UTF8.decode(bytes)
  } catch {
    return [{ severity: 'warning', file: path, message: 'file is not valid UTF-8, skipped' }]
  }
}

/**
 * Size alone is never an error: dashboards, CRDs and large JSON are no sources. A file that
 * names our label, Flux's watch label or a HelmRelease may hold one we then do not plan: a warning.
 */
function oversized(path: string, bytes: Uint8Array, maxBytes: number, keys: Keys): FileProblem {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const skipped = `file is larger than ${formatBytes(maxBytes)} (${formatBytes(bytes.length)}), skipped`
  const marker = [keys.triggerLabel, keys.watchLabel, 'HelmRelease'].find((m) => text.includes(m))
  if (marker === undefined) return { severity: 'notice', file: path, message: skipped }
  return { severity: 'warning', file: path, message: `${skipped}; it mentions ${marker}, which is then not planned: split the file` }
}

// Never followed: a link could expose files outside the checkout, and a target inside the
// repository is read under its own path anyway.
function symlinkMessage(path: string, target: string): string {
  return pointsOutside(path, target)
    ? `symbolic link to '${target}' skipped: it points outside the repository`
    : `symbolic link to '${target}' skipped: links are not followed (the target is read under its own path when it matches paths)`
}

function pointsOutside(path: string, target: string): boolean {
  if (target.startsWith('/') || /^[A-Za-z]:[\\/]/.test(target)) return true
  const resolved = posix.normalize(posix.join(posix.dirname(path), target))
  return resolved === '..' || resolved.startsWith('../')
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${trimNumber(bytes / (1024 * 1024))} MiB`
  if (bytes >= 1024) return `${trimNumber(bytes / 1024)} KiB`
  return `${bytes} bytes`
}

function trimNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1)
}

// ---------------------------------------------------------------------------------------
// Documents

interface FileContext {
  readonly file: string
  readonly keys: Keys
  readonly options: ManifestOptions
  readonly kustomizationFile: boolean
}

/** One document being read: where things are, and what went wrong so far. */
interface DocContext extends FileContext {
  readonly line: number
  lineOf(path: readonly string[]): number
  report(severity: Severity, line: number, message: string): void
  /** Errors reported so far in this document: a growing count means the object is invalid. */
  errorCount(): number
}

interface DocResult {
  readonly sources: readonly ParsedSource[]
  readonly releases: readonly ParsedRelease[]
  readonly kustomizationNamespace?: string
  readonly problems: readonly FileProblem[]
}

type JsonRecord = Readonly<Record<string, unknown>>

// Expansion budget per document: real manifests use a handful of aliases.
const MAX_ALIASES = 100

const NOTHING: DocResult = { sources: [], releases: [], problems: [] }

function readDocument(doc: Document.Parsed, text: string, lines: LineCounter, file: FileContext): DocResult {
  const lineAt = (offset: number): number => Math.max(1, lines.linePos(offset).line)
  const docLine = lineAt(doc.contents?.range[0] ?? doc.range[0])
  if (doc.errors.length > 0) return syntaxProblems(doc, text, lineAt, file.file)
  if (isEmpty(doc)) return NOTHING
  const problems: FileProblem[] = []
  const context: DocContext = {
    ...file,
    line: docLine,
    lineOf: (path) => {
      const offset = offsetOf(doc, path)
      return offset === undefined ? docLine : lineAt(offset)
    },
    report: (severity, line, message) => problems.push({ severity, file: file.file, line, message }),
    errorCount: () => problems.filter((problem) => problem.severity === 'error').length,
  }
  let value: unknown
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES })
  } catch (error) {
    // Alias bombs (more than MAX_ALIASES expansions) and invalid merge keys end up here.
    const reason = error instanceof Error ? error.message : String(error)
    context.report('error', docLine, `document skipped: ${reason}`)
    return { ...NOTHING, problems }
  }
  const result = readObject(value, context)
  return { ...result, problems }
}

/** Nothing but comments, or an empty document between two `---`. */
function isEmpty(doc: Document.Parsed): boolean {
  return doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null && doc.contents.source === '')
}

/** Where the entry at `path` starts: its key for a mapping entry, the item for a list entry. */
function offsetOf(doc: Document.Parsed, path: readonly string[]): number | undefined {
  const parent: unknown = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true)
  const last = path[path.length - 1]
  if (isMap(parent)) {
    const pair = parent.items.find((item) => isScalar(item.key) && String(item.key.value) === last)
    if (isNode(pair?.key) && pair.key.range) return pair.key.range[0]
  }
  if (isSeq(parent)) {
    const item: unknown = parent.items[Number(last)]
    if (isNode(item) && item.range) return item.range[0]
  }
  return undefined
}

/** Syntax errors; a document that looks like a Go/Helm template only earns a warning. */
function syntaxProblems(doc: Document.Parsed, text: string, lineAt: (offset: number) => number, file: string): DocResult {
  const source = text.slice(doc.range[0], doc.range[2])
  if (source.includes('{{')) {
    const line = lineAt(doc.range[0])
    const message = 'document looks like a Go template ({{ … }}), not plain YAML; skipped'
    return { ...NOTHING, problems: [{ severity: 'warning', file, line, message }] }
  }
  const problems = doc.errors.map((error) => ({
    severity: 'error' as const,
    file,
    line: lineAt(error.pos[0]),
    message: `invalid YAML: ${error.message}`,
  }))
  return { ...NOTHING, problems }
}

type Classified = 'source' | 'release' | 'kustomization' | 'ignored'

function readObject(value: unknown, context: DocContext): Omit<DocResult, 'problems'> {
  if (!isRecord(value)) {
    context.report('error', context.line, `document is not a mapping (found ${describe(value)}), skipped`)
    return NOTHING
  }
  switch (classify(value, context)) {
    case 'source':
      return { sources: optionalList(readSource(value, context)), releases: [] }
    case 'release':
      return { sources: [], releases: optionalList(readRelease(value, context)) }
    case 'kustomization':
      return { ...NOTHING, ...kustomizationNamespace(value, context) }
    case 'ignored':
      return NOTHING
  }
}

function classify(object: JsonRecord, context: DocContext): Classified {
  const { kind, apiVersion } = object
  if (kind === 'ConfigMap' || kind === 'Secret') {
    if (apiVersion === 'v1') return 'source'
    if (apiVersion === undefined) context.report('error', context.line, `${kind} without apiVersion (expected v1)`)
    return 'ignored' // another API group's kind of the same name
  }
  if (kind === 'HelmRelease') return startsWith(apiVersion, 'helm.toolkit.fluxcd.io/') ? 'release' : 'ignored'
  if (!context.kustomizationFile) return 'ignored'
  // kustomize accepts a kustomization.yaml without apiVersion and kind.
  const kustomizeApi = apiVersion === undefined || startsWith(apiVersion, 'kustomize.config.k8s.io/')
  return (kind === undefined || kind === 'Kustomization') && kustomizeApi ? 'kustomization' : 'ignored'
}

function kustomizationNamespace(object: JsonRecord, context: DocContext): { kustomizationNamespace?: string } {
  const namespace = object.namespace
  if (namespace === undefined || namespace === null) return {}
  if (typeof namespace === 'string' && isDnsLabel(namespace)) return { kustomizationNamespace: namespace }
  const line = context.lineOf(['namespace'])
  context.report('error', line, `kustomization namespace ${quote(namespace)} is not a valid namespace name (DNS-1123 label)`)
  return {}
}

// ---------------------------------------------------------------------------------------
// Metadata shared by sources and releases

interface Metadata {
  readonly name: string
  readonly namespace?: string
  readonly labels: JsonRecord
  readonly annotations: JsonRecord
}

/** Metadata, or null (after reporting) when the object cannot be identified. */
function readMetadata(object: JsonRecord, kind: string, context: DocContext): Metadata | null {
  const metadata = object.metadata
  if (!isRecord(metadata)) {
    context.report('error', context.line, `${kind} without metadata, skipped`)
    return null
  }
  const name = metadata.name
  if (typeof name !== 'string' || name === '') {
    context.report('error', context.lineOf(['metadata']), `${kind} without metadata.name, skipped`)
    return null
  }
  const nameProblem = objectNameProblem(kind, name)
  if (nameProblem !== undefined) {
    context.report('error', context.lineOf(['metadata', 'name']), `${kind} ${nameProblem}, skipped`)
    return null
  }
  const namespace = metadata.namespace
  const namespaceIssue = namespace === undefined || namespace === null ? undefined : namespaceProblem(namespace)
  if (namespaceIssue !== undefined) {
    context.report('error', context.lineOf(['metadata', 'namespace']), `${kind} ${name}: ${namespaceIssue}, skipped`)
    return null
  }
  return {
    name,
    ...(typeof namespace === 'string' ? { namespace } : {}),
    labels: isRecord(metadata.labels) ? metadata.labels : {},
    annotations: isRecord(metadata.annotations) ? metadata.annotations : {},
  }
}

// ---------------------------------------------------------------------------------------
// ConfigMaps and Secrets

function readSource(object: JsonRecord, context: DocContext): ParsedSource | null {
  const kind = object.kind === 'Secret' ? 'Secret' : 'ConfigMap'
  const metadata = readMetadata(object, kind, context)
  if (metadata === null) return null
  const subject = `${kind} ${metadata.name}`
  const labelled = isLabelled(metadata.labels, context, subject)
  const annotatedTargets = readAnnotatedTargets(metadata.annotations, context, subject)
  // A present but mistyped label is already an error: don't add a warning that says it is missing.
  const labelAbsent = metadata.labels[context.keys.triggerLabel] === undefined
  if (!labelled && labelAbsent && metadata.annotations[context.keys.targetNames] !== undefined) {
    const message =
      `${subject} names target HelmReleases in ${context.keys.targetNames} but lacks the label ` +
      `${context.keys.triggerLabel}: "true", so the annotation triggers nothing`
    context.report('warning', context.lineOf(['metadata', 'annotations', context.keys.targetNames]), message)
  }
  const encrypted = isEncrypted(object)
  const content = readContent(kind, object, context, { subject, encrypted })
  if (content === null) return null
  return {
    kind,
    name: metadata.name,
    ...(metadata.namespace === undefined ? {} : { namespace: metadata.namespace }),
    origin: { file: context.file, line: context.line },
    labelled,
    annotatedTargets,
    encrypted,
    ...digestAndEncoding(content, { semantic: context.options.semanticDigest }),
    content,
  }
}

function isLabelled(labels: JsonRecord, context: DocContext, subject: string): boolean {
  const { triggerLabel, watchLabel, watchLabelValue } = context.keys
  for (const key of [triggerLabel, watchLabel]) {
    const value = labels[key]
    if (value !== undefined && typeof value !== 'string') {
      const message = `${subject}: label ${key} must be a string (quote it), the apiserver rejects ${describe(value)}`
      context.report('error', context.lineOf(['metadata', 'labels', key]), message)
    }
  }
  return labels[triggerLabel] === 'true' || labels[watchLabel] === watchLabelValue
}

function readAnnotatedTargets(annotations: JsonRecord, context: DocContext, subject: string): ReleaseRef[] {
  const { targetNames, targetNamespace } = context.keys
  const names = annotations[targetNames]
  if (names === undefined || names === null) return []
  // Found only for a problem: the fast read has no lines (readFast).
  const namesLine = () => context.lineOf(['metadata', 'annotations', targetNames])
  if (typeof names !== 'string') {
    context.report('error', namesLine(), `${subject}: annotation ${targetNames} must be a string`)
    return []
  }
  const namespace = targetNamespaceOf(annotations[targetNamespace], context, subject)
  if (namespace === null) return []
  return names
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
    .filter((name) => {
      if (isDnsSubdomain(name)) return true
      const message = `${subject}: ${quote(name)} in ${targetNames} is not a valid HelmRelease name ` + `(DNS-1123 subdomain, at most 253 characters), ignored`
      context.report('error', namesLine(), message)
      return false
    })
    .map((name) => ({ namespace, name }))
}

function targetNamespaceOf(value: unknown, context: DocContext, subject: string): string | null {
  if (value === undefined || value === null) return context.options.defaultNamespace
  const namespace = typeof value === 'string' ? value.trim() : value
  if (typeof namespace === 'string' && isDnsLabel(namespace)) return namespace
  const { targetNamespace } = context.keys
  const message = `${subject}: ${targetNamespace} ${quote(value)} is not a valid namespace name (DNS-1123 label), targets ignored`
  context.report('error', context.lineOf(['metadata', 'annotations', targetNamespace]), message)
  return null
}

/** SOPS leaves a top-level `sops` block and `ENC[…]` values. */
export function isEncrypted(object: JsonRecord): boolean {
  if (object.sops !== undefined) return true
  return [object.data, object.stringData, object.binaryData].some((field) => isRecord(field) && Object.values(field).some((value) => startsWith(value, 'ENC[')))
}

interface ContentContext {
  readonly subject: string
  readonly encrypted: boolean
}

/** The digest content, or null (after reporting) when the apiserver would reject the object. */
function readContent(kind: SourceKind, object: JsonRecord, context: DocContext, about: ContentContext): DigestContent | null {
  const errorsBefore = context.errorCount()
  const content = kind === 'ConfigMap' ? configMapContent(object, context, about) : secretContent(object, context, about)
  return context.errorCount() > errorsBefore ? null : content
}

function configMapContent(object: JsonRecord, context: DocContext, about: ContentContext): DigestContent {
  const data = stringMap(object, 'data', context, about)
  const binaryData = stringMap(object, 'binaryData', context, about)
  if (!about.encrypted) checkBase64(binaryData, 'binaryData', context, about)
  for (const key of Object.keys(binaryData)) {
    if (Object.hasOwn(data, key)) {
      const message = `${about.subject}: key ${quote(key)} is in both data and binaryData, skipped`
      context.report('error', context.lineOf(['binaryData', key]), message)
    }
  }
  return contentOfConfigMap({ data, binaryData })
}

function secretContent(object: JsonRecord, context: DocContext, about: ContentContext): DigestContent {
  const data = stringMap(object, 'data', context, about)
  const stringData = stringMap(object, 'stringData', context, about)
  // Ciphertext is not base64: the digest of an encrypted Secret only tracks its git changes.
  if (about.encrypted) return { data: { ...data, ...stringData } }
  checkBase64(data, 'data', context, about)
  return contentOfSecret({ data, stringData })
}

const DATA_KEY = /^[-._a-zA-Z0-9]+$/
const MAX_KEY = 253

/** A map of string values; every non-string value is reported at its own line. */
function stringMap(object: JsonRecord, field: string, context: DocContext, about: ContentContext): Record<string, string> {
  const value = object[field]
  if (value === undefined || value === null) return {}
  if (!isRecord(value)) {
    context.report('error', context.lineOf([field]), `${about.subject}: ${field} must be a mapping, skipped`)
    return {}
  }
  const entries: [string, string][] = []
  for (const [key, item] of Object.entries(value)) {
    if (!DATA_KEY.test(key) || key.length > MAX_KEY) {
      const message = `${about.subject}: ${field} key ${quote(key)} is not a valid key (letters, digits, '-', '_', '.'), skipped`
      context.report('error', context.lineOf([field, key]), message)
    } else if (typeof item !== 'string') {
      const message = `${about.subject}: ${field}.${key} is ${describe(item)}, not a string; quote it ` + `(the apiserver rejects non-string values), skipped`
      context.report('error', context.lineOf([field, key]), message)
    } else {
      entries.push([key, item])
    }
  }
  return Object.fromEntries(entries)
}

// Go's encoding/base64 (StdEncoding) as the apiserver decodes []byte: padded, newlines ignored.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

function checkBase64(map: Readonly<Record<string, string>>, field: string, context: DocContext, about: ContentContext) {
  for (const [key, value] of Object.entries(map)) {
    if (BASE64.test(value.replace(/[\r\n]/g, ''))) continue
    const message = `${about.subject}: ${field}.${key} is not valid base64, skipped`
    context.report('error', context.lineOf([field, key]), message)
  }
}

// ---------------------------------------------------------------------------------------
// HelmReleases

function readRelease(object: JsonRecord, context: DocContext): ParsedRelease | null {
  const metadata = readMetadata(object, 'HelmRelease', context)
  if (metadata === null) return null
  const spec = isRecord(object.spec) ? object.spec : {}
  return {
    name: metadata.name,
    ...(metadata.namespace === undefined ? {} : { namespace: metadata.namespace }),
    origin: { file: context.file, line: context.line },
    valuesFrom: readValuesFrom(spec.valuesFrom, context, `HelmRelease ${metadata.name}`),
  }
}

/** One reference per (kind, name); optional only when every entry naming it is optional. */
function readValuesFrom(value: unknown, context: DocContext, subject: string): ValuesReference[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) {
    context.report('error', context.lineOf(['spec', 'valuesFrom']), `${subject}: spec.valuesFrom must be a list`)
    return []
  }
  const references = new Map<string, ValuesReference>()
  value.forEach((entry: unknown, index) => {
    const reference = valuesReference(entry, context, `${subject}: spec.valuesFrom[${index}]`, index)
    if (reference === null) return
    const key = `${reference.kind}/${reference.name}`
    const seen = references.get(key)
    references.set(key, { ...reference, optional: reference.optional && (seen?.optional ?? true) })
  })
  return [...references.values()]
}

function valuesReference(entry: unknown, context: DocContext, subject: string, index: number): ValuesReference | null {
  const line = () => context.lineOf(['spec', 'valuesFrom', String(index)])
  if (!isRecord(entry)) {
    context.report('error', line(), `${subject} must be a mapping with kind and name, ignored`)
    return null
  }
  const { kind, name } = entry
  if (kind !== 'ConfigMap' && kind !== 'Secret') {
    context.report('error', line(), `${subject}.kind must be ConfigMap or Secret (found ${quote(kind)}), ignored`)
    return null
  }
  if (typeof name !== 'string' || !isDnsSubdomain(name)) {
    context.report('error', line(), `${subject}.name ${quote(name)} is not a valid ${kind} name, ignored`)
    return null
  }
  return { kind, name, optional: entry.optional === true }
}

// ---------------------------------------------------------------------------------------
// Small helpers

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function startsWith(value: unknown, prefix: string): boolean {
  return typeof value === 'string' && value.startsWith(prefix)
}

function optionalList<T>(item: T | null): T[] {
  return item === null ? [] : [item]
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'a mapping'
  if (typeof value === 'string') return 'a string'
  return `a ${typeof value} (${String(value)})`
}

function quote(value: unknown): string {
  return typeof value === 'string' ? quoted(value) : describe(value)
}
