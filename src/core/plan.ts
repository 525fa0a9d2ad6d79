// The plan: a pure function from (changed files, head files, settings) to the sources whose
// content changed, the HelmReleases they trigger and the problems found on the way.
// No git, no cluster, no clock: everything it needs is in its input.

import { addedKeys, keyChanges } from './key-changes.ts'
import { capProblems, MAX_PROBLEMS_PER_RUN } from './problem-caps.ts'
import { posix } from 'node:path'
import { keysFor } from './keys.ts'
import type { Keys } from './keys.ts'
import { isKustomizationFile, parseManifestFile, resolveRelease, resolveSource } from './manifest.ts'
import type { ManifestFile, ManifestOptions } from './manifest.ts'
import { byReleaseKey, releaseKey, sourceId } from './model.ts'
import { mayTarget, refusedTargetMessage, type CrossNamespaceTargets } from './namespace-rule.ts'
import { untargetedPrefix, untargetedProblem } from './untargeted-source.ts'
import { compareText } from '../lib/sort.ts'
import type {
  FileChange,
  FileContent,
  FileProblem,
  HeadFile,
  Origin,
  Plan,
  PlannedRelease,
  PlannedSource,
  PlannedTarget,
  ReleaseManifest,
  ReleaseRef,
  SourceId,
  SourceManifest,
  TargetReason,
} from './model.ts'

export interface PlanOptions {
  readonly prefix: string
  /** Namespace of annotated targets without `<prefix>/helmreleases-namespace`. */
  readonly defaultNamespace: string
  readonly semanticDigest: boolean
  /** Any changed ConfigMap/Secret also triggers the HelmReleases whose spec.valuesFrom names it. */
  readonly discover: boolean
  /** Globs (`**`, `*`, `?`, `[…]`, `{a,b}`; a leading `!` excludes) of the files to consider. */
  readonly paths: readonly string[]
  /** Namespaces a source may target besides its own (namespace-rule.ts); [] for its own only. */
  readonly crossNamespaceTargets: CrossNamespaceTargets
}

export interface PlanInput {
  readonly changes: readonly FileChange[]
  /** Files at head: HelmReleases for discovery, kustomization namespaces, unchanged sources. */
  readonly headFiles: readonly HeadFile[]
  /** Plan every labelled source at head, changed or not. */
  readonly fullSync: boolean
  readonly options: PlanOptions
  /**
   * Files already parsed (with manifestOptionsOf(options)), by their content object: a large
   * commit's files are parsed on several threads first (see parse-pool.ts). Any file not in it
   * is parsed here.
   */
  readonly parsed?: ReadonlyMap<FileContent, ManifestFile>
}

/** Namespace of a document that has none and no kustomization above it says otherwise. */
export const FALLBACK_NAMESPACE = 'default'

export function planChanges(input: PlanInput): Plan {
  const { options } = input
  const keys = keysFor(options.prefix)
  const files = readFiles(input)
  const namespaceOf = namespaceResolver(files.kustomizations)
  const head = definitions(files.head, namespaceOf)
  const base = definitions(files.base, namespaceOf)
  const consumers = indexConsumers(headReleases(files.head, namespaceOf))
  const changedIds = [...new Set([...head.changedIds, ...base.changedIds])].sort(compareText)

  const changed = changedSources(changedIds, head.defs, base.defs, options.discover)
  const candidates = input.fullSync ? [...changed, ...fullSyncSources(head.defs, changed)] : changed
  const context: TargetContext = {
    keys,
    consumers,
    discover: options.discover,
    semanticDigest: options.semanticDigest,
    crossNamespaceTargets: options.crossNamespaceTargets,
  }
  const planned = candidates.map((candidate) => ({ candidate, source: withTargets(candidate, context) }))
  const sources = planned.map(({ source }) => source)
  const problems = [
    ...files.problems,
    ...duplicateProblems(head.defs, files.reportable),
    ...candidates.flatMap((candidate) => [...refusedTargetProblems(candidate, context), ...untargetedProblems(candidate, context)]),
    ...deletedButReadProblems(sources, consumers),
  ]
  return finishPlan(sources, problems)
}

/**
 * Adds the targets found in the cluster (releases whose spec.valuesFrom names a planned source),
 * the same way repository releases are found. Call it only when `discover` is on.
 */
export function retarget(plan: Plan, releases: readonly ReleaseManifest[]): Plan {
  const consumers = indexConsumers(releases)
  const sources = plan.sources.map((source) =>
    source.change === 'deleted' ? source : { ...source, targets: addValuesFromTargets(source.targets, consumers.get(source.id)) },
  )
  const targetedAt = new Map(sources.filter((s) => s.targets.length > 0).map((s) => [originKey(s.origin), s.id]))
  const problems = plan.problems.filter((problem) => !isResolvedUntargeted(problem, targetedAt))
  const next = finishPlan(sources, problems)
  return { ...next, releases: keptReleases(next.releases, plan.releases), ...(plan.notes === undefined ? {} : { notes: plan.notes }) }
}

/** The entries rebuilt from the sources keep what the plan knew of them: spec and chart changes, where each read was edited. */
function keptReleases(rebuilt: readonly PlannedRelease[], before: readonly PlannedRelease[]): PlannedRelease[] {
  const known = new Map(before.map((r) => [releaseKey(r), r]))
  const merged = rebuilt.map((r): PlannedRelease => {
    const previous = known.get(releaseKey(r))
    known.delete(releaseKey(r))
    if (previous === undefined) return r
    const sources = r.sources.map((s) => previous.sources.find((p) => p.id === s.id) ?? s)
    return {
      ...r,
      sources,
      ...(previous.spec === undefined ? {} : { spec: previous.spec }),
      ...(previous.chart === undefined ? {} : { chart: previous.chart }),
    }
  })
  return [...merged, ...known.values()].sort(byReleaseKey)
}

/** What the repository declares at head: the view `discover --from-git` lints. */
export interface RepositoryManifests {
  /** Every ConfigMap/Secret definition, namespaces resolved (duplicates kept, reported in problems). */
  readonly sources: readonly SourceManifest[]
  readonly releases: readonly ReleaseManifest[]
  readonly problems: readonly FileProblem[]
}

/** Every in-scope file at head parsed as the plan parses it (same namespaces, same problems). */
export function repositoryManifests(headFiles: readonly HeadFile[], options: PlanOptions): RepositoryManifests {
  const files = readFiles({ changes: [], headFiles, fullSync: true, options })
  const namespaceOf = namespaceResolver(files.kustomizations)
  const { defs } = definitions(files.head, namespaceOf)
  return {
    sources: [...defs.values()].flat(),
    releases: headReleases(files.head, namespaceOf),
    problems: [...files.problems, ...duplicateProblems(defs, files.reportable)].sort(compareProblem),
  }
}

// ---------------------------------------------------------------------------------------
// Paths

/** A predicate for repository-relative paths. No positive pattern matches nothing. */
export function pathFilter(globs: readonly string[]): (path: string) => boolean {
  const include = globs.filter((g) => !g.startsWith('!')).map(compileGlob)
  const exclude = globs.filter((g) => g.startsWith('!')).map((g) => compileGlob(g.slice(1)))
  return (path) => {
    const relative = path.replace(/^\.\//, '')
    return include.some((re) => re.test(relative)) && !exclude.some((re) => re.test(relative))
  }
}

/** Glob → anchored RegExp. `**` spans directories, `*` and `?` stay within one; `dir/` means `dir/**`. */
export function compileGlob(glob: string): RegExp {
  const trimmed = glob.trim().replace(/^\.\//, '').replace(/^\/+/, '')
  const whole = trimmed.endsWith('/') ? `${trimmed}**` : trimmed
  return new RegExp(`^${translateGlob(whole, 0, false).source}$`)
}

interface Translated {
  readonly source: string
  /** Index of the first character not consumed. */
  readonly end: number
}

function translateGlob(glob: string, start: number, inBraces: boolean): Translated {
  let source = ''
  let i = start
  while (i < glob.length) {
    const c = glob.charAt(i)
    if (inBraces && (c === ',' || c === '}')) break
    if (c === '*' && glob.charAt(i + 1) === '*' && segmentStart(glob, i) && segmentEnd(glob, i + 2, inBraces)) {
      const slash = glob.charAt(i + 2) === '/'
      source += slash ? '(?:.*/)?' : '.*'
      i += slash ? 3 : 2
    } else if (c === '*') {
      source += '[^/]*'
      i += 1
    } else if (c === '?') {
      source += '[^/]'
      i += 1
    } else if (c === '[' && classEnd(glob, i) > 0) {
      const end = classEnd(glob, i)
      source += characterClass(glob.slice(i + 1, end))
      i = end + 1
    } else if (c === '{' && braceEnd(glob, i) > 0) {
      const alternatives = braceAlternatives(glob, i)
      source += `(?:${alternatives.sources.join('|')})`
      i = alternatives.end
    } else if (c === '\\' && i + 1 < glob.length) {
      source += escapeRegExp(glob.charAt(i + 1))
      i += 2
    } else {
      source += escapeRegExp(c)
      i += 1
    }
  }
  return { source, end: i }
}

function braceAlternatives(glob: string, open: number): { sources: string[]; end: number } {
  const sources: string[] = []
  let i = open + 1
  for (;;) {
    const part = translateGlob(glob, i, true)
    sources.push(part.source)
    i = part.end + 1
    if (glob.charAt(part.end) !== ',') return { sources, end: i }
  }
}

function segmentStart(glob: string, i: number): boolean {
  return i === 0 || '/{,'.includes(glob.charAt(i - 1))
}

function segmentEnd(glob: string, i: number, inBraces: boolean): boolean {
  return i === glob.length || glob.charAt(i) === '/' || (inBraces && ',}'.includes(glob.charAt(i)))
}

/** Index of the `}` closing the brace at `open`, or -1 when unbalanced (then `{` is literal). */
function braceEnd(glob: string, open: number): number {
  let depth = 0
  for (let i = open; i < glob.length; i++) {
    const c = glob.charAt(i)
    if (c === '\\') i++
    else if (c === '{') depth++
    else if (c === '}' && --depth === 0) return i
  }
  return -1
}

/** Index of the `]` closing the class at `open`, or -1 (then `[` is literal). */
function classEnd(glob: string, open: number): number {
  const first = '!^'.includes(glob.charAt(open + 1)) ? open + 2 : open + 1
  const end = glob.indexOf(']', first + 1)
  return end > first && !glob.slice(first, end).includes('/') ? end : -1
}

function characterClass(body: string): string {
  const negated = body.startsWith('!') || body.startsWith('^')
  const members = (negated ? body.slice(1) : body).replace(/[\\\]^]/g, '\\$&')
  return negated ? `[^/${members}]` : `[${members}]`
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

// ---------------------------------------------------------------------------------------
// Reading the files, each once

interface ParsedAt {
  readonly path: string
  readonly parsed: ManifestFile
  /** Content of a changed file (at base or head), as opposed to an unchanged head file. */
  readonly changed: boolean
}

interface Files {
  /** Head content of every file in scope (changed or not), by path. */
  readonly head: readonly ParsedAt[]
  /** Base content: changed files before the change, plus unchanged files (same at base and head). */
  readonly base: readonly ParsedAt[]
  /** Kustomization files at head, in scope or not: they decide namespaces. */
  readonly kustomizations: readonly ParsedAt[]
  /** Problems of head content we report (changed files; every file under full-sync). */
  readonly problems: readonly FileProblem[]
  /** Files whose problems we report: a duplicate is only news when one of its files is. */
  readonly reportable: ReadonlySet<string>
}

/** The options every manifest of a plan is parsed with. */
export function manifestOptionsOf(options: PlanOptions): ManifestOptions {
  return { prefix: options.prefix, defaultNamespace: options.defaultNamespace, semanticDigest: options.semanticDigest }
}

/** A file's content to parse, with the path it is parsed under. */
export interface FileToRead {
  readonly path: string
  readonly content: FileContent
}

/** The changed files' contents the plan parses: both sides of each change in scope. */
export function changedToRead(input: Pick<PlanInput, 'changes' | 'options'>): { readonly head: FileToRead[]; readonly base: FileToRead[] } {
  const inScope = pathFilter(input.options.paths)
  const changes = input.changes.filter((change) => inScope(change.path))
  return {
    // The changed files' head content is the head file at that path: parse it once.
    head: changes.flatMap((c) => (c.after === undefined ? [] : [{ path: c.path, content: c.after }])),
    base: changes.flatMap((c) => (c.before === undefined ? [] : [{ path: c.path, content: c.before }])),
  }
}

/**
 * The unchanged head files the plan parses, given the names of the sources the changed files
 * define (both sides): kustomizations, and files that may define or read one of those sources.
 */
export function unchangedToRead(input: Omit<PlanInput, 'parsed'>, changedNames: ReadonlySet<string>): FileToRead[] {
  const inScope = pathFilter(input.options.paths)
  const changedPaths = new Set(input.changes.filter((change) => inScope(change.path)).map((change) => change.path))
  const relevant = unchangedFilter(input.fullSync ? undefined : changedNames)
  return input.headFiles.filter((f) => !changedPaths.has(f.path) && (isKustomizationFile(f.path) || (inScope(f.path) && relevant(f.content))))
}

/** Names of the sources these parsed files define. */
export function sourceNamesIn(files: Iterable<ManifestFile>): Set<string> {
  const names = new Set<string>()
  for (const file of files) for (const source of file.sources) names.add(source.name)
  return names
}

function readFiles(input: PlanInput): Files {
  const { options } = input
  const manifestOptions = manifestOptionsOf(options)
  const inScope = pathFilter(options.paths)
  const parse =
    (changed: boolean) =>
    (file: FileToRead): ParsedAt => ({
      path: file.path,
      parsed: input.parsed?.get(file.content) ?? parseManifestFile(file.path, file.content, manifestOptions),
      changed,
    })
  const toRead = changedToRead(input)
  const changedHead = toRead.head.map(parse(true))
  const changedBase = toRead.base.map(parse(true))
  const unchanged = unchangedToRead(input, sourceNamesIn([...changedHead, ...changedBase].map((f) => f.parsed))).map(parse(false))
  const unchangedInScope = unchanged.filter((f) => inScope(f.path))
  const head = byPath([...changedHead, ...unchangedInScope])
  const reportable = new Set(input.fullSync ? head.map((f) => f.path) : changedHead.map((f) => f.path))
  return {
    head,
    // Base documents without metadata.namespace resolve through the HEAD kustomizations too: the
    // base tree is not read, and a namespace move shows up as delete + add either way.
    base: byPath([...changedBase, ...unchangedInScope]),
    kustomizations: [...changedHead, ...unchanged].filter((f) => isKustomizationFile(f.path)),
    // Base-content problems are not reported: the committer cannot fix the past, and a base
    // document that fails to parse only makes its head sources look added (they still trigger).
    problems: [...changedHead, ...(input.fullSync ? unchangedInScope : [])].flatMap((f) => f.parsed.problems),
    reportable,
  }
}

const KIND_MARKERS = ['ConfigMap', 'Secret', 'HelmRelease']
// Object names as they can appear in YAML text, quoted or not.
const NAME_TOKEN = /[a-z0-9][-a-z0-9.]*/g

/**
 * Unchanged files matter only when they define or read a changed source (duplicates, moves,
 * valuesFrom consumers), so only those are parsed: a one-file commit in a large repository
 * does not parse the whole repository. A name reaches the text literally (YAML escapes aside),
 * so a file without any changed name cannot mention a changed source. Full-sync reads everything.
 */
function unchangedFilter(changedNames: ReadonlySet<string> | undefined): (content: FileContent) => boolean {
  return (content) => {
    if (content.type !== 'file') return false
    const bytes = Buffer.from(content.bytes.buffer, content.bytes.byteOffset, content.bytes.byteLength)
    if (!KIND_MARKERS.some((marker) => bytes.includes(marker))) return false
    if (changedNames === undefined) return true
    if (changedNames.size === 0) return false
    for (const [token] of bytes.toString('utf8').matchAll(NAME_TOKEN)) if (changedNames.has(token)) return true
    return false
  }
}

function byPath(files: readonly ParsedAt[]): ParsedAt[] {
  return [...files].sort((a, b) => compareText(a.path, b.path))
}

// ---------------------------------------------------------------------------------------
// Namespaces

type NamespaceOf = (path: string) => string

/** Nearest kustomization (the file's directory, then each ancestor) that sets `namespace:`. */
function namespaceResolver(kustomizations: readonly ParsedAt[]): NamespaceOf {
  const byDir = new Map<string, string>()
  for (const { path, parsed } of kustomizations) {
    if (parsed.kustomizationNamespace !== undefined) byDir.set(posix.dirname(path), parsed.kustomizationNamespace)
  }
  const cache = new Map<string, string>()
  const forDir = (dir: string): string => {
    const known = byDir.get(dir) ?? cache.get(dir)
    if (known !== undefined) return known
    const parent = posix.dirname(dir)
    const namespace = parent === dir ? FALLBACK_NAMESPACE : forDir(parent)
    cache.set(dir, namespace)
    return namespace
  }
  return (path) => forDir(posix.dirname(path))
}

// ---------------------------------------------------------------------------------------
// Sources

/** Every definition of each source, in path then document order: the first one wins. */
type Definitions = ReadonlyMap<SourceId, readonly SourceManifest[]>

interface View {
  readonly defs: Definitions
  /** Sources defined in changed files. */
  readonly changedIds: ReadonlySet<SourceId>
}

function definitions(files: readonly ParsedAt[], namespaceOf: NamespaceOf): View {
  const defs = new Map<SourceId, SourceManifest[]>()
  const changedIds = new Set<SourceId>()
  for (const { path, parsed, changed } of files) {
    for (const parsedSource of parsed.sources) {
      const source = resolveSource(parsedSource, namespaceOf(path))
      const id = sourceId(source)
      const list = defs.get(id)
      if (list === undefined) defs.set(id, [source])
      else list.push(source)
      if (changed) changedIds.add(id)
    }
  }
  return { defs, changedIds }
}

function duplicateProblems(head: Definitions, reportable: ReadonlySet<string>): FileProblem[] {
  const problems: FileProblem[] = []
  for (const [id, list] of head) {
    const [first, ...others] = list
    if (first === undefined || !list.some((s) => reportable.has(s.origin.file))) continue
    for (const other of others) {
      const message =
        `${id} is defined more than once (first at ${first.origin.file}:${first.origin.line}); this ` +
        'definition is ignored. Narrow `paths` when the repository holds several clusters.'
      problems.push({ severity: 'error', file: other.origin.file, line: other.origin.line, message })
    }
  }
  return problems
}

/** A planned source before its targets are known. */
type Candidate =
  | { readonly id: SourceId; readonly change: 'added'; readonly head: SourceManifest }
  /** `base` absent under full-sync: no previous digest. */
  | { readonly id: SourceId; readonly change: 'modified'; readonly head: SourceManifest; readonly base?: SourceManifest }
  | { readonly id: SourceId; readonly change: 'deleted'; readonly base: SourceManifest }

function changedSources(ids: readonly SourceId[], head: Definitions, base: Definitions, discover: boolean): Candidate[] {
  return ids.flatMap((id): Candidate[] => {
    const now = head.get(id)?.[0]
    const before = base.get(id)?.[0]
    // An unlabelled source can only trigger through discovery.
    const relevant = discover || (now ?? before)?.labelled === true
    if (!relevant) return []
    if (now === undefined) return before === undefined ? [] : [{ id, change: 'deleted', base: before }]
    if (before === undefined) return [{ id, change: 'added', head: now }]
    return now.digest === before.digest ? [] : [{ id, change: 'modified', head: now, base: before }]
  })
}

/** Under full-sync every labelled source at head is planned, with no previous digest. */
function fullSyncSources(head: Definitions, changed: readonly Candidate[]): Candidate[] {
  const planned = new Set(changed.map((c) => c.id))
  return [...head.entries()].flatMap(([id, list]): Candidate[] => {
    const now = list[0]
    return now === undefined || !now.labelled || planned.has(id) ? [] : [{ id, change: 'modified', head: now }]
  })
}

// ---------------------------------------------------------------------------------------
// Releases and targets

/** HelmReleases that read each source through spec.valuesFrom (same namespace as the release). */
type Consumers = ReadonlyMap<SourceId, readonly ConsumingRelease[]>

interface ConsumingRelease extends ReleaseRef {
  readonly optional: boolean
  readonly origin?: Origin
}

function headReleases(files: readonly ParsedAt[], namespaceOf: NamespaceOf): ReleaseManifest[] {
  return files.flatMap(({ path, parsed }) => parsed.releases.map((release) => resolveRelease(release, namespaceOf(path))))
}

function indexConsumers(releases: readonly ReleaseManifest[]): Consumers {
  const index = new Map<SourceId, ConsumingRelease[]>()
  for (const release of releases) {
    for (const reference of release.valuesFrom) {
      const id = sourceId({ kind: reference.kind, namespace: release.namespace, name: reference.name })
      const consumer: ConsumingRelease = {
        namespace: release.namespace,
        name: release.name,
        optional: reference.optional,
        ...(release.origin === undefined ? {} : { origin: release.origin }),
      }
      const list = index.get(id)
      if (list === undefined) index.set(id, [consumer])
      else list.push(consumer)
    }
  }
  return index
}

interface TargetContext {
  readonly keys: Keys
  readonly consumers: Consumers
  readonly discover: boolean
  /** Key changes are told as the digest tells changes. */
  readonly semanticDigest: boolean
  readonly crossNamespaceTargets: CrossNamespaceTargets
}

function withTargets(candidate: Candidate, context: TargetContext): PlannedSource {
  const source = candidate.change === 'deleted' ? candidate.base : candidate.head
  const common = {
    kind: source.kind,
    namespace: source.namespace,
    name: source.name,
    id: candidate.id,
    encrypted: source.encrypted,
    origin: source.origin,
  }
  switch (candidate.change) {
    case 'deleted': // reported, never triggered
      return { ...common, change: 'deleted', previousDigest: candidate.base.digest, targets: [] }
    case 'added':
      return { ...common, change: 'added', digest: candidate.head.digest, targets: targetsOf(candidate.head, context), keyChanges: addedKeys(candidate.head) }
    case 'modified':
      return {
        ...common,
        change: 'modified',
        digest: candidate.head.digest,
        ...(candidate.base === undefined
          ? {}
          : { previousDigest: candidate.base.digest, keyChanges: keyChanges(candidate.base, candidate.head, { semantic: context.semanticDigest }) }),
        targets: targetsOf(candidate.head, context),
      }
  }
}

function targetsOf(source: SourceManifest, context: TargetContext): PlannedTarget[] {
  const annotated: PlannedTarget[] = source.labelled
    ? source.annotatedTargets
        .filter((ref) => mayTarget(context.crossNamespaceTargets, source.namespace, ref.namespace))
        .map((ref) => ({ namespace: ref.namespace, name: ref.name, reasons: ['annotation'] }))
    : []
  const consumers = context.discover ? context.consumers.get(sourceId(source)) : undefined
  return addValuesFromTargets(annotated, consumers)
}

function addValuesFromTargets(targets: readonly PlannedTarget[], consumers: readonly ReleaseRef[] | undefined): PlannedTarget[] {
  const extra: PlannedTarget[] = (consumers ?? []).map((ref) => ({ namespace: ref.namespace, name: ref.name, reasons: ['valuesFrom'] }))
  return mergeTargets([...targets, ...extra])
}

/** One target per release, reasons merged; sorted. */
function mergeTargets(targets: readonly PlannedTarget[]): PlannedTarget[] {
  const byRelease = new Map<string, { ref: ReleaseRef; reasons: Set<TargetReason> }>()
  for (const target of targets) {
    const key = releaseKey(target)
    const entry = byRelease.get(key) ?? { ref: { namespace: target.namespace, name: target.name }, reasons: new Set() }
    for (const reason of target.reasons) entry.reasons.add(reason)
    byRelease.set(key, entry)
  }
  return [...byRelease.values()].map(({ ref, reasons }) => ({ ...ref, reasons: [...reasons].sort(compareText) })).sort(byReleaseKey)
}

// ---------------------------------------------------------------------------------------
// Problems the plan itself finds

/** Annotated targets outside the source's namespace that cross-namespace-targets does not allow: one warning each. */
function refusedTargetProblems(candidate: Candidate, context: TargetContext): FileProblem[] {
  if (candidate.change === 'deleted' || !candidate.head.labelled) return []
  const { head } = candidate
  return head.annotatedTargets
    .filter((ref) => !mayTarget(context.crossNamespaceTargets, head.namespace, ref.namespace))
    .map((ref) => ({ severity: 'warning', file: head.origin.file, line: head.origin.line, message: refusedTargetMessage(candidate.id, ref, head.namespace) }))
}

/** A labelled source that triggers nothing is a mistake (see untargeted-source.ts); an unlabelled one is a config nobody reads. */
function untargetedProblems(candidate: Candidate, context: TargetContext): FileProblem[] {
  if (candidate.change === 'deleted') return []
  const { head } = candidate
  const problem = untargetedProblem({ ...head, id: candidate.id }, context.consumers.get(candidate.id)?.length ?? 0, context)
  return problem === undefined ? [] : [problem]
}

const originKey = (origin: Origin): string => `${origin.file}\0${origin.line}`

/** The "triggers no HelmRelease" warning of a source that has targets by now. */
function isResolvedUntargeted(problem: FileProblem, targetedAt: ReadonlyMap<string, SourceId>): boolean {
  if (problem.severity !== 'warning' || problem.line === undefined) return false
  const id = targetedAt.get(originKey({ file: problem.file, line: problem.line }))
  return id !== undefined && problem.message.startsWith(untargetedPrefix(id))
}

function deletedButReadProblems(sources: readonly PlannedSource[], consumers: Consumers): FileProblem[] {
  return sources.flatMap((source) => {
    if (source.change !== 'deleted') return []
    return (consumers.get(source.id) ?? []).flatMap((release) => {
      if (release.optional || release.origin === undefined) return []
      const message = `${source.id} is deleted but HelmRelease ${releaseKey(release)} still reads it (spec.valuesFrom, not optional)`
      return [{ severity: 'warning' as const, file: release.origin.file, line: release.origin.line, message }]
    })
  })
}

// ---------------------------------------------------------------------------------------
// The plan

function finishPlan(sources: readonly PlannedSource[], problems: readonly FileProblem[]): Plan {
  return {
    sources: [...sources].sort((a, b) => compareText(a.id, b.id)),
    releases: plannedReleases(sources),
    problems: capProblems([...problems].sort(compareProblem), MAX_PROBLEMS_PER_RUN, 'run'),
  }
}

/** One entry per target HelmRelease with every changed (not deleted) source it reads. */
function plannedReleases(sources: readonly PlannedSource[]): PlannedRelease[] {
  const byRelease = new Map<string, { ref: ReleaseRef; sources: Map<SourceId, PlannedRelease['sources'][number]> }>()
  for (const source of sources) {
    if (source.digest === undefined) continue
    for (const target of source.targets) {
      const key = releaseKey(target)
      const entry = byRelease.get(key) ?? { ref: { namespace: target.namespace, name: target.name }, sources: new Map() }
      // A Secret's digest is keyed once the run holds the cluster's key: the plan records none.
      entry.sources.set(source.id, { id: source.id, ...(source.kind === 'Secret' ? {} : { digest: source.digest }), encrypted: source.encrypted })
      byRelease.set(key, entry)
    }
  }
  return [...byRelease.values()]
    .map(({ ref, sources: read }) => ({ ...ref, sources: [...read.values()].sort((a, b) => compareText(a.id, b.id)) }))
    .sort(byReleaseKey)
}

function compareProblem(a: FileProblem, b: FileProblem): number {
  return compareText(a.file, b.file) || (a.line ?? 0) - (b.line ?? 0)
}
