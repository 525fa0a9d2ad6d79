// The plan on a repository as Flux applies it: base and head rendered by src/render/, compared
// object by object. Same Plan shape as the file-by-file planner, so waiting, patching and
// reporting do not care which one ran. Pure: no git, no kustomize, no cluster, no clock.
//
// A release triggers on a changed source only when a value it reads changed, which is
// helm-controller's own rule for composing values: each spec.valuesFrom entry reads one key
// (`valuesKey`, default `values.yaml`) of `data` (a Secret's decoded data; a ConfigMap's
// binaryData is never read), merged as YAML, or taken verbatim as a string at `targetPath`.

import { contentOfConfigMap, contentOfSecret, digestOf, type DigestContent } from './digest.ts'
import { addedKeys, keyChanges } from './key-changes.ts'
import { isDnsLabel, isDnsSubdomain, keysFor, type Keys } from './keys.ts'
import { isEncrypted } from './manifest.ts'
import { mayTarget, refusedTargetMessage } from './namespace-rule.ts'
import { untargetedProblem } from './untargeted-source.ts'
import { byReleaseKey, chartSourceId, releaseKey, sourceId } from './model.ts'
import { compareText } from '../lib/sort.ts'
import { quoted } from '../lib/untrusted.ts'
import type {
  ChartChange,
  ChartSourceKind,
  PlainDigest,
  FieldValue,
  FileProblem,
  KeyEdit,
  Origin,
  Plan,
  PlannedRead,
  PlannedRelease,
  PlannedSource,
  PlannedTarget,
  ReleaseRef,
  SourceId,
  SourceKind,
  SpecChange,
  TargetReason,
  ValuesReference,
} from './model.ts'
import { FALLBACK_NAMESPACE, type PlanOptions, type RepositoryManifests } from './plan.ts'
import type { Provenance, RenderedObject, RenderedRepository } from './rendered.ts'

export interface RenderedPlanInput {
  readonly base: RenderedRepository
  readonly head: RenderedRepository
  /** Plan every labelled source at head, changed or not (no spec changes then). */
  readonly fullSync: boolean
  readonly options: Pick<PlanOptions, 'prefix' | 'defaultNamespace' | 'semanticDigest' | 'discover' | 'crossNamespaceTargets'>
}

/** helm-controller's default `valuesKey`. */
export const DEFAULT_VALUES_KEY = 'values.yaml'

export function planRendered(input: RenderedPlanInput): Plan {
  const keys = keysFor(input.options.prefix)
  const context: Context = { keys, options: input.options }
  const base = readSide(input.base, context)
  const head = readSide(input.head, context)
  const renames = renamedSources(base.sources, head.sources)
  const consumers = indexReads(head.releases)
  const unbuilt = failedBuilds(input.head)
  const candidates = input.fullSync ? fullSyncCandidates(head.sources) : changedCandidates(base.sources, head.sources, renames, input.options.discover, unbuilt)
  const suspended = new Set(input.head.suspended ?? [])
  const held = new Map<string, string[]>()
  const hold = (kustomization: string, what: string): void => void held.set(kustomization, [...(held.get(kustomization) ?? []), what])
  const planned = candidates.map((c) => {
    const p = planSource(c, { context, base, consumers, head, renames, fullSync: input.fullSync })
    // A suspended Kustomization applies nothing: the change is planned, but neither triggers nor is waited for.
    const kustomization = (c.change === 'deleted' ? c.base : c.head).kustomization
    if (!suspended.has(kustomization)) return p
    hold(kustomization, p.source.id)
    return { source: { ...p.source, targets: [], suspended: kustomization }, readOrigins: new Map<string, Origin>(), problems: [] }
  })
  const specs = input.fullSync ? new Map<string, SpecChange>() : specChanges(base.releases, head.releases)
  for (const [key, release] of head.releases) {
    if (!specs.has(key) || !suspended.has(release.kustomization)) continue
    specs.delete(key)
    hold(release.kustomization, `HelmRelease/${key}`)
  }
  const charts = new Map<string, ChartChange>()
  const chartNotes: string[] = []
  if (!input.fullSync) {
    for (const change of chartChanges(base.chartSources, head.chartSources)) {
      const source = head.chartSources.get(chartSourceId(change))
      if (source === undefined) continue
      const id = chartSourceId(change)
      if (suspended.has(source.kustomization)) hold(source.kustomization, id)
      else if (source.spec['suspend'] === true)
        chartNotes.push(
          `${id} changed but is suspended (spec.suspend: true): source-controller fetches nothing until it is resumed, so it is planned without a wait`,
        )
      else for (const release of chartReaders(head.releases, change)) charts.set(releaseKey(release), change)
    }
  }
  const problems = [
    ...renderProblems(input.head),
    ...head.problems,
    ...planned.flatMap((p) => p.problems),
    ...deletedButRead(
      planned.map((p) => p.source),
      consumers,
    ),
  ]
  return {
    sources: planned.map((p) => p.source).sort((a, b) => compareText(a.id, b.id)),
    releases: plannedReleases(planned, specs, charts),
    problems: problems.sort(compareProblem),
    notes: [
      ...input.head.notRendered.map((n) => `Flux Kustomization ${n.kustomization} was not rendered: ${n.reason}`),
      ...[...held].map(
        ([kustomization, ids]) =>
          `Flux Kustomization ${kustomization} is suspended (spec.suspend: true): kustomize-controller applies none of its changes until it is resumed, so ${ids.join(', ')} ${ids.length === 1 ? 'is' : 'are'} planned without a trigger or a wait`,
      ),
      ...chartNotes,
    ],
  }
}

/** The releases the rendered head holds: discovery in the cluster must not re-add them without the key rule. */
export function renderedReleaseKeys(head: RenderedRepository): Set<string> {
  return new Set(head.objects.filter(isHelmRelease).map((o) => releaseKey({ namespace: o.namespace ?? FALLBACK_NAMESPACE, name: o.name })))
}

/**
 * What the rendered head declares, for `discover --from-git`: every ConfigMap/Secret (generated
 * ones under their rendered names) and HelmRelease (valuesFrom as rewritten by kustomize).
 */
export function renderedManifests(head: RenderedRepository, options: RenderedPlanInput['options']): RepositoryManifests {
  const side = readSide(head, { keys: keysFor(options.prefix), options })
  return {
    sources: [...side.sources.values()].map((s) => ({
      kind: s.kind,
      namespace: s.namespace,
      name: s.name,
      origin: s.origin,
      labelled: s.labelled,
      annotatedTargets: s.annotatedTargets,
      encrypted: s.encrypted,
      digest: s.digest,
    })),
    releases: [...side.releases.values()].map((r) => ({
      namespace: r.namespace,
      name: r.name,
      origin: r.origin,
      valuesFrom: uniqueReferences(r.reads),
    })),
    problems: [...renderProblems(head), ...side.problems].sort(compareProblem),
  }
}

/** One reference per (kind, name); optional only when every entry naming it is. */
function uniqueReferences(reads: readonly Read[]): ValuesReference[] {
  const byName = new Map<string, ValuesReference>()
  for (const read of reads) {
    const key = `${read.kind}/${read.name}`
    const seen = byName.get(key)
    byName.set(key, { kind: read.kind, name: read.name, optional: read.optional && (seen?.optional ?? true) })
  }
  return [...byName.values()]
}

// ---------------------------------------------------------------------------------------
// Reading one side

interface Context {
  readonly keys: Keys
  readonly options: RenderedPlanInput['options']
}

/** A rendered ConfigMap/Secret as the plan needs it. */
interface Source {
  readonly id: SourceId
  readonly kind: SourceKind
  readonly namespace: string
  readonly name: string
  readonly origin: Origin
  readonly keyOrigins: Readonly<Record<string, Provenance>>
  readonly labelled: boolean
  readonly annotatedTargets: readonly ReleaseRef[]
  readonly encrypted: boolean
  readonly digest: PlainDigest
  /** The values helm-controller can read, by key: ConfigMap data; Secret data decoded (stringData folded in). */
  readonly values: ReadonlyMap<string, string>
  /** What the digest covers, for the values diff (key-changes.ts); a Secret's values never leave it. */
  readonly content: DigestContent
  /** The Flux Kustomization applying it. */
  readonly kustomization: string
}

/** One spec.valuesFrom entry of a rendered release. */
interface Read {
  readonly kind: SourceKind
  readonly name: string
  readonly key: string
  readonly targetPath: string | undefined
  readonly optional: boolean
}

interface Release extends ReleaseRef {
  readonly origin: Origin
  /** The Flux Kustomization applying it. */
  readonly kustomization: string
  /** Where each spec field is written, by path as JSON. */
  readonly specOrigins: Readonly<Record<string, Provenance>>
  readonly spec: JsonRecord
  readonly reads: readonly Read[]
}

/** A rendered OCIRepository or HelmChart: a chart source a release's spec.chartRef can name. */
interface ChartSource {
  readonly kind: ChartSourceKind
  readonly namespace: string
  readonly name: string
  readonly origin: Origin
  readonly kustomization: string
  readonly specOrigins: Readonly<Record<string, Provenance>>
  readonly spec: JsonRecord
}

interface Side {
  readonly sources: ReadonlyMap<SourceId, Source>
  readonly releases: ReadonlyMap<string, Release>
  /** By chartSourceId. */
  readonly chartSources: ReadonlyMap<string, ChartSource>
  readonly problems: readonly FileProblem[]
}

type JsonRecord = Readonly<Record<string, unknown>>

function readSide(repository: RenderedRepository, context: Context): Side {
  const sources = new Map<SourceId, Source>()
  const releases = new Map<string, Release>()
  const chartSources = new Map<string, ChartSource>()
  const problems: FileProblem[] = []
  const firstBy = new Map<string, RenderedObject>()
  for (const object of repository.objects) {
    const isSource = isConfigSource(object)
    if (!isSource && !isHelmRelease(object) && !isChartSource(object)) continue
    const namespace = object.namespace ?? FALLBACK_NAMESPACE
    const identity = `${object.kind}/${namespace}/${object.name}`
    const first = firstBy.get(identity)
    if (first !== undefined) {
      problems.push(duplicateProblem(identity, first, object))
      continue
    }
    firstBy.set(identity, object)
    if (isSource) {
      const source = readSource(object, namespace, context, problems)
      if (source !== undefined) sources.set(source.id, source)
    } else if (isChartSource(object)) {
      const source = readChartSource(object, namespace)
      chartSources.set(chartSourceId(source), source)
    } else {
      const release = readRelease(object, namespace)
      releases.set(releaseKey(release), release)
    }
  }
  return { sources, releases, chartSources, problems }
}

function isConfigSource(object: RenderedObject): boolean {
  return (object.kind === 'ConfigMap' || object.kind === 'Secret') && object.apiVersion === 'v1'
}

function isHelmRelease(object: RenderedObject): boolean {
  return object.kind === 'HelmRelease' && object.apiVersion.startsWith('helm.toolkit.fluxcd.io/')
}

function isChartSource(object: RenderedObject): object is RenderedObject & { kind: ChartSourceKind } {
  return (object.kind === 'OCIRepository' || object.kind === 'HelmChart') && object.apiVersion.startsWith('source.toolkit.fluxcd.io/')
}

function readChartSource(object: RenderedObject & { kind: ChartSourceKind }, namespace: string): ChartSource {
  const spec = record(object.object['spec'])
  return {
    kind: object.kind,
    namespace,
    name: object.name,
    origin: originOf(object),
    kustomization: object.kustomization,
    specOrigins: object.specOrigins ?? {},
    spec,
  }
}

function duplicateProblem(identity: string, first: RenderedObject, other: RenderedObject): FileProblem {
  const where = originOf(other)
  const message =
    `${identity} is applied by Flux Kustomization ${other.kustomization} and also by ${first.kustomization}` +
    `${first.origin === undefined ? '' : ` (${first.origin.file}:${first.origin.line})`}; this one is ignored. ` +
    'In one cluster the two fight over it; for a repository of several clusters, set the cluster-root input'
  return { severity: 'warning', file: where.file, line: where.line, message }
}

/** Where an object came from; a Kustomization that cannot say is named instead. */
function originOf(object: RenderedObject): Origin {
  return object.origin ?? { file: object.kustomization, line: 1 }
}

function readSource(object: RenderedObject, namespace: string, context: Context, problems: FileProblem[]): Source | undefined {
  const kind: SourceKind = object.kind === 'Secret' ? 'Secret' : 'ConfigMap'
  const origin = originOf(object)
  const subject = `${kind} ${namespace}/${object.name}`
  const report = (message: string): void => void problems.push({ severity: 'error', file: origin.file, line: origin.line, message: `${subject}: ${message}` })
  const metadata = record(object.object['metadata'])
  const labels = record(metadata['labels'])
  const annotations = record(metadata['annotations'])
  const encrypted = isEncrypted(object.object)
  const data = strings(object.object['data'], 'data', report)
  const binaryData = strings(object.object['binaryData'], 'binaryData', report)
  const stringData = strings(object.object['stringData'], 'stringData', report)
  if (data === undefined || binaryData === undefined || stringData === undefined) return undefined
  const { keys } = context
  const content =
    kind === 'ConfigMap' ? contentOfConfigMap({ data, binaryData }) : encrypted ? { data: { ...data, ...stringData } } : contentOfSecret({ data, stringData })
  const values = new Map(Object.entries(kind === 'Secret' && !encrypted ? secretValues(data, stringData) : { ...data, ...stringData }))
  return {
    id: sourceId({ kind, namespace, name: object.name }),
    kind,
    namespace,
    name: object.name,
    origin,
    keyOrigins: object.keyOrigins,
    labelled: labels[keys.triggerLabel] === keys.triggerLabelValue || labels[keys.watchLabel] === keys.watchLabelValue,
    annotatedTargets: annotatedTargets(annotations, context, report),
    encrypted,
    digest: digestOf(content, { semantic: context.options.semanticDigest }),
    values,
    content,
    kustomization: object.kustomization,
  }
}

/** A string map, or undefined (reported) when a value is not a string: the apiserver rejects it. */
function strings(value: unknown, field: string, report: (message: string) => void): Record<string, string> | undefined {
  const entries = Object.entries(record(value))
  const bad = entries.find(([, v]) => typeof v !== 'string')
  if (bad !== undefined) {
    report(`${field}.${bad[0]} is not a string; quote it (the apiserver rejects non-string values), skipped`)
    return undefined
  }
  return Object.fromEntries(entries as [string, string][])
}

/** A Secret's values as helm-controller reads them: bytes, compared here as text or base64. */
function secretValues(data: Readonly<Record<string, string>>, stringData: Readonly<Record<string, string>>): Record<string, string> {
  const content = contentOfSecret({ data, stringData })
  const binary = Object.entries(content.binaryData ?? {}).map(([k, v]) => [k, `base64:${v}`] as const)
  return { ...content.data, ...Object.fromEntries(binary) }
}

function annotatedTargets(annotations: JsonRecord, context: Context, report: (message: string) => void): ReleaseRef[] {
  const { targetNames, targetNamespace } = context.keys
  const names = annotations[targetNames]
  if (typeof names !== 'string') return []
  const rawNamespace = annotations[targetNamespace]
  const namespace = typeof rawNamespace === 'string' ? rawNamespace.trim() : context.options.defaultNamespace
  if (!isDnsLabel(namespace)) {
    report(`${targetNamespace} ${quoted(namespace)} is not a valid namespace name (DNS-1123 label), targets ignored`)
    return []
  }
  return names
    .split(',')
    .map((name) => name.trim())
    .filter((name) => {
      if (name === '') return false
      if (isDnsSubdomain(name)) return true
      report(`${quoted(name)} in ${targetNames} is not a valid HelmRelease name (DNS-1123 subdomain), ignored`)
      return false
    })
    .map((name) => ({ namespace, name }))
}

function readRelease(object: RenderedObject, namespace: string): Release {
  const spec = record(object.object['spec'])
  const reads = list(spec['valuesFrom']).flatMap((entry): Read[] => {
    const e = record(entry)
    const kind = e['kind']
    const name = e['name']
    if ((kind !== 'ConfigMap' && kind !== 'Secret') || typeof name !== 'string' || name === '') return []
    const key = typeof e['valuesKey'] === 'string' && e['valuesKey'] !== '' ? e['valuesKey'] : DEFAULT_VALUES_KEY
    const targetPath = typeof e['targetPath'] === 'string' && e['targetPath'] !== '' ? e['targetPath'] : undefined
    return [{ kind, name, key, targetPath, optional: e['optional'] === true }]
  })
  return { namespace, name: object.name, origin: originOf(object), kustomization: object.kustomization, specOrigins: object.specOrigins ?? {}, spec, reads }
}

// ---------------------------------------------------------------------------------------
// Which sources changed

/** A planned source before its targets are known. */
type Candidate =
  | { readonly change: 'added'; readonly head: Source }
  /** `base` absent under full-sync. A hash-suffixed rename pairs two names. */
  | { readonly change: 'modified'; readonly head: Source; readonly base?: Source }
  | { readonly change: 'deleted'; readonly base: Source }

// kustomize's hash suffix: a dash and ten lowercase letters or digits.
const HASH_SUFFIX = /-[a-z0-9]{10}$/

/**
 * Generated sources whose hash-suffixed name changed with their content, head id → base id:
 * the same generator at both ends, paired by name without the suffix when the pair is unique.
 */
function renamedSources(base: ReadonlyMap<SourceId, Source>, head: ReadonlyMap<SourceId, Source>): Map<SourceId, SourceId> {
  const stemOf = (s: Source): string | undefined => (HASH_SUFFIX.test(s.name) ? `${s.kind}/${s.namespace}/${s.name.replace(HASH_SUFFIX, '')}` : undefined)
  const group = (sources: Iterable<Source>, other: ReadonlyMap<SourceId, Source>): Map<string, Source[]> => {
    const byStem = new Map<string, Source[]>()
    for (const s of sources) {
      const stem = stemOf(s)
      if (stem === undefined || other.has(s.id)) continue
      byStem.set(stem, [...(byStem.get(stem) ?? []), s])
    }
    return byStem
  }
  const gone = group(base.values(), head)
  const renames = new Map<SourceId, SourceId>()
  for (const [stem, [added, ...moreAdded]] of group(head.values(), base)) {
    const [removed, ...moreRemoved] = gone.get(stem) ?? []
    if (added !== undefined && removed !== undefined && moreAdded.length === 0 && moreRemoved.length === 0) renames.set(added.id, removed.id)
  }
  return renames
}

/**
 * Kustomizations whose head build failed: a problem and no object. What they applied before is
 * unknown at head, not deleted; the problem is what the plan reports.
 */
function failedBuilds(head: RenderedRepository): ReadonlySet<string> {
  const built = new Set(head.objects.map((o) => o.kustomization))
  return new Set(head.problems.map((p) => p.kustomization).filter((k) => !built.has(k)))
}

function changedCandidates(
  base: ReadonlyMap<SourceId, Source>,
  head: ReadonlyMap<SourceId, Source>,
  renames: ReadonlyMap<SourceId, SourceId>,
  discover: boolean,
  unbuilt: ReadonlySet<string>,
): Candidate[] {
  const renamed = new Set(renames.values())
  const ids = [...new Set([...base.keys(), ...head.keys()])].sort(compareText)
  return ids.flatMap((id): Candidate[] => {
    const now = head.get(id)
    const before = base.get(renames.get(id) ?? id)
    // An unlabelled source can only trigger through discovery.
    if (!discover && !(now ?? before)?.labelled) return []
    if (now === undefined) return before === undefined || renamed.has(id) || unbuilt.has(before.kustomization) ? [] : [{ change: 'deleted', base: before }]
    if (before === undefined) return [{ change: 'added', head: now }]
    return now.digest === before.digest && now.id === before.id ? [] : [{ change: 'modified', head: now, base: before }]
  })
}

function fullSyncCandidates(head: ReadonlyMap<SourceId, Source>): Candidate[] {
  return [...head.values()].filter((s) => s.labelled).map((s) => ({ change: 'modified', head: s }))
}

// ---------------------------------------------------------------------------------------
// Who reads what, and whether it changed for them

interface Reader {
  readonly release: Release
  readonly read: Read
}

/** Head releases reading each source through spec.valuesFrom (their own namespace). */
function indexReads(releases: ReadonlyMap<string, Release>): Map<SourceId, Reader[]> {
  const index = new Map<SourceId, Reader[]>()
  for (const release of releases.values()) {
    for (const read of release.reads) {
      const id = sourceId({ kind: read.kind, namespace: release.namespace, name: read.name })
      index.set(id, [...(index.get(id) ?? []), { release, read }])
    }
  }
  return index
}

interface SourceScope {
  readonly context: Context
  readonly base: Side
  readonly head: Side
  readonly consumers: ReadonlyMap<SourceId, readonly Reader[]>
  readonly renames: ReadonlyMap<SourceId, SourceId>
  readonly fullSync: boolean
}

interface PlannedWithReads {
  readonly source: PlannedSource
  /** Per target release: where the key it reads was edited. */
  readonly readOrigins: ReadonlyMap<string, Origin>
  readonly problems: readonly FileProblem[]
}

function planSource(candidate: Candidate, scope: SourceScope): PlannedWithReads {
  if (candidate.change === 'deleted') {
    const s = candidate.base
    const source: PlannedSource = { ...common(s), change: 'deleted', previousDigest: s.digest, targets: [] }
    return { source, readOrigins: new Map(), problems: [] }
  }
  const now = candidate.head
  const before = candidate.change === 'modified' ? candidate.base : undefined
  const edits = keyEdits(before, now, scope.fullSync)
  const readOrigins = new Map<string, Origin>()
  const targets: PlannedTarget[] = []
  const byRelease = new Map<string, Reader[]>()
  for (const r of scope.consumers.get(now.id) ?? []) byRelease.set(releaseKey(r.release), [...(byRelease.get(releaseKey(r.release)) ?? []), r])
  const consider = (ref: ReleaseRef, reason: TargetReason): void => {
    const reads = byRelease.get(releaseKey(ref))
    // A release known to read this source triggers only when a value it reads changed; one that
    // reads it some other way (annotation alone, another namespace) on any change.
    const changed = reads === undefined || scope.fullSync ? (edits[0] ?? now.origin) : firstChangedRead(reads, before, now, scope)
    if (changed === undefined) return
    targets.push({ ...ref, reasons: [reason] })
    if (!readOrigins.has(releaseKey(ref))) readOrigins.set(releaseKey(ref), changed)
  }
  const allowed = (ref: ReleaseRef): boolean => mayTarget(scope.context.options.crossNamespaceTargets, now.namespace, ref.namespace)
  const annotated = now.labelled ? now.annotatedTargets.filter(allowed) : []
  const refused = now.labelled ? now.annotatedTargets.filter((ref) => !allowed(ref)) : []
  const discovered = scope.context.options.discover ? [...byRelease.values()].flatMap((reads) => reads.slice(0, 1).map((r) => r.release)) : []
  for (const ref of annotated) consider(ref, 'annotation')
  for (const ref of discovered) consider(ref, 'valuesFrom')
  const merged = mergeTargets(targets)
  const origin = [...readOrigins.values()][0] ?? edits[0] ?? now.origin
  const source: PlannedSource = {
    ...common(now),
    origin,
    change: candidate.change,
    digest: now.digest,
    ...(before === undefined ? {} : { previousDigest: before.digest }),
    ...(before !== undefined && before.id !== now.id ? { renamedFrom: before.id } : {}),
    targets: merged,
    ...(scope.fullSync
      ? {}
      : { keyChanges: before === undefined ? addedKeys(now) : keyChanges(before, now, { semantic: scope.context.options.semanticDigest }) }),
    ...(edits.length > 0 ? { edits } : {}),
  }
  const refusals: FileProblem[] = refused.map((ref) => ({
    severity: 'warning',
    file: now.origin.file,
    line: now.origin.line,
    message: refusedTargetMessage(now.id, ref, now.namespace),
  }))
  // A source whose only targets were refused was said to be so already.
  return {
    source,
    readOrigins,
    problems:
      refusals.length > 0 && merged.length === 0
        ? refusals
        : [...refusals, ...untargeted(now, merged, scope.consumers.get(now.id) ?? [], annotated.length + discovered.length, edits, scope.context)],
  }
}

function common(s: Source): Pick<PlannedSource, 'kind' | 'namespace' | 'name' | 'id' | 'encrypted' | 'origin'> {
  return { kind: s.kind, namespace: s.namespace, name: s.name, id: s.id, encrypted: s.encrypted, origin: s.origin }
}

/** Where the first value this release reads changed, or undefined when none did. */
function firstChangedRead(reads: readonly Reader[], before: Source | undefined, now: Source, scope: SourceScope): Origin | undefined {
  for (const { release, read } of reads) {
    const previous = previousValue(release, read, before, scope)
    const current = now.values.get(read.key)
    if (!sameRead(previous, current, read, scope.context.options.semanticDigest)) return editOrigin(now, read.key, previous, current)
  }
  return undefined
}

/**
 * What the release read at base through this entry: from the same source, or from the source
 * its base self read under the name before a hash-suffixed rename.
 */
function previousValue(release: Release, read: Read, before: Source | undefined, scope: SourceScope): string | undefined {
  if (before !== undefined) return before.values.get(read.key)
  const baseRelease = scope.base.releases.get(releaseKey(release))
  const baseRead = baseRelease?.reads.find((r) => r.kind === read.kind && r.key === read.key && r.targetPath === read.targetPath)
  if (baseRead === undefined) return undefined
  return scope.base.sources.get(sourceId({ kind: read.kind, namespace: release.namespace, name: baseRead.name }))?.values.get(read.key)
}

/** Merged as YAML: compared as values (semantic digest); at a targetPath: as the string it is. */
function sameRead(a: string | undefined, b: string | undefined, read: Read, semantic: boolean): boolean {
  if (a === undefined || b === undefined) return a === b
  if (a === b) return true
  if (read.targetPath !== undefined || !semantic) return false
  return digestOf({ data: { v: a } }, { semantic: true }) === digestOf({ data: { v: b } }, { semantic: true })
}

/** Each data key whose value changed (every key under full-sync), with where it was edited. */
function keyEdits(before: Source | undefined, now: Source, fullSync: boolean): KeyEdit[] {
  const keys = [...new Set([...now.values.keys(), ...(before?.values.keys() ?? [])])].sort(compareText)
  return keys.flatMap((key): KeyEdit[] => {
    const previous = before?.values.get(key)
    const current = now.values.get(key)
    if (!fullSync && before !== undefined && previous === current) return []
    return [{ key, ...editOrigin(now, key, previous, current) }]
  })
}

/**
 * The line the user edited: the generated key's origin (the values file, the literal, the env
 * line), moved down to the first line that differs; the object's document when the key has none.
 */
function editOrigin(source: Source, key: string, previous: string | undefined, current: string | undefined): Origin {
  const at = source.keyOrigins[key]
  if (at === undefined) return source.origin
  return { file: at.file, line: at.line + firstDifferentLine(previous, current) }
}

function firstDifferentLine(a: string | undefined, b: string | undefined): number {
  if (a === undefined || b === undefined) return 0
  const left = a.split('\n')
  const right = b.split('\n')
  const n = Math.min(left.length, right.length)
  for (let i = 0; i < n; i++) if (left[i] !== right[i]) return i
  // One is the other plus lines: the first added (or removed) line; never past the end.
  return Math.max(0, Math.min(n, Math.max(left.length, right.length) - 1))
}

function mergeTargets(targets: readonly PlannedTarget[]): PlannedTarget[] {
  const byRelease = new Map<string, PlannedTarget>()
  for (const t of targets) {
    const seen = byRelease.get(releaseKey(t))
    const reasons = [...new Set([...(seen?.reasons ?? []), ...t.reasons])].sort(compareText)
    byRelease.set(releaseKey(t), { namespace: t.namespace, name: t.name, reasons })
  }
  return [...byRelease.values()].sort(byReleaseKey)
}

// ---------------------------------------------------------------------------------------
// Problems

function renderProblems(head: RenderedRepository): FileProblem[] {
  return head.problems.map((p) => ({
    severity: 'error',
    file: p.file ?? p.path,
    ...(p.line === undefined ? {} : { line: p.line }),
    message: `Flux Kustomization ${p.kustomization} (${p.path}) could not be rendered: ${p.message}`,
  }))
}

function untargeted(
  source: Source,
  targets: readonly PlannedTarget[],
  readers: readonly Reader[],
  candidates: number,
  edits: readonly KeyEdit[],
  context: Context,
): FileProblem[] {
  if (targets.length > 0) return []
  if (candidates > 0) {
    // Read, but not the keys that changed: helm-controller would compose the same values.
    const at = edits[0] ?? source.origin
    const changed = edits.map((e) => e.key).join(', ')
    const message = `${source.id} changed only keys no HelmRelease reads (${changed || 'none'}); nothing to trigger`
    return [{ severity: 'notice', file: at.file, line: at.line, message }]
  }
  // Said where the object is defined, as discover --from-git says it: the label or annotation is fixed there.
  const problem = untargetedProblem(source, new Set(readers.map((r) => releaseKey(r.release))).size, { keys: context.keys, discover: context.options.discover })
  return problem === undefined ? [] : [problem]
}

function deletedButRead(sources: readonly PlannedSource[], consumers: ReadonlyMap<SourceId, readonly Reader[]>): FileProblem[] {
  return sources.flatMap((source) =>
    source.change !== 'deleted'
      ? []
      : (consumers.get(source.id) ?? [])
          .filter((r) => !r.read.optional)
          .map(({ release }) => ({
            severity: 'warning' as const,
            file: release.origin.file,
            line: release.origin.line,
            message: `${source.id} is deleted but HelmRelease ${releaseKey(release)} still reads it (spec.valuesFrom, not optional)`,
          })),
  )
}

// ---------------------------------------------------------------------------------------
// Spec changes

// Past this many changed fields, the parents are named instead.
const MAX_FIELDS = 8

/** Head releases whose rendered spec differs from base (or that are new), by release key. */
function specChanges(base: ReadonlyMap<string, Release>, head: ReadonlyMap<string, Release>): Map<string, SpecChange> {
  const changes = new Map<string, SpecChange>()
  for (const [key, now] of head) {
    const before = base.get(key)
    const diff = changedFields(before?.spec ?? {}, now.spec)
    if (diff.length === 0) continue
    changes.set(key, {
      change: before === undefined ? 'added' : 'modified',
      origin: before === undefined ? now.origin : fieldOrigin(now, diff),
      fields: diff.map((f) => ['spec', ...f.path].join('.')),
      expect: diff,
    })
  }
  return changes
}

/**
 * Where the user edited a release's (or chart source's) spec: for the first changed field, the field itself or the
 * nearest enclosing one written (a field added under it), in the document or the patch that sets
 * it; the document when none is known.
 */
function fieldOrigin(object: Pick<Release, 'specOrigins' | 'origin'>, diff: readonly FieldValue[]): Origin {
  for (const { path } of diff) {
    for (let n = path.length; n > 0; n--) {
      const at = object.specOrigins[JSON.stringify(path.slice(0, n))]
      if (at !== undefined) return { file: at.file, line: at.line }
    }
  }
  return object.origin
}

/** Leaf differences under spec; lists are compared whole. Folded to top-level fields when many. */
export function changedFields(before: JsonRecord, after: JsonRecord): FieldValue[] {
  const leaves: FieldValue[] = []
  const walk = (a: unknown, b: unknown, path: readonly string[]): void => {
    if (isRecord(a) && isRecord(b)) {
      for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort(compareText)) walk(a[key], b[key], [...path, key])
    } else if (!sameJson(a, b)) {
      leaves.push({ path, value: b })
    }
  }
  walk(before, after, [])
  if (leaves.length <= MAX_FIELDS) return leaves
  const tops = [...new Set(leaves.map((l) => l.path[0] ?? ''))].sort(compareText)
  return tops.map((top) => ({ path: [top], value: after[top] }))
}

/** The live spec holds every expected field (a subset: the apiserver may add defaults). */
export function specHolds(live: JsonRecord, expect: readonly FieldValue[]): boolean {
  return expect.every(({ path, value }) => {
    const actual = path.reduce<unknown>((node, key) => (isRecord(node) ? node[key] : undefined), live)
    return value === undefined ? actual === undefined : containsJson(actual, value)
  })
}

function sameJson(a: unknown, b: unknown): boolean {
  return containsJson(a, b) && containsJson(b, a)
}

/** `actual` has everything `wanted` has, recursively; lists item by item, same length. */
function containsJson(actual: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) return Array.isArray(actual) && actual.length === wanted.length && wanted.every((w, i) => containsJson(actual[i], w))
  if (isRecord(wanted)) return isRecord(actual) && Object.entries(wanted).every(([k, w]) => w === undefined || containsJson(actual[k], w))
  return actual === wanted
}

// ---------------------------------------------------------------------------------------
// Chart sources

// How often and how long source-controller polls: changing them fetches no other chart.
const UNCHARTED_FIELDS: ReadonlySet<string> = new Set(['interval', 'timeout'])

/** Chart sources at head whose spec changed from base in a field that can change the artifact. */
function chartChanges(base: ReadonlyMap<string, ChartSource>, head: ReadonlyMap<string, ChartSource>): ChartChange[] {
  return [...head.values()].flatMap((now): ChartChange[] => {
    const before = base.get(chartSourceId(now))
    // A new repository reaches a release only through a changed chartRef: that spec change is waited for.
    if (before === undefined) return []
    const diff = changedFields(before.spec, now.spec).filter((f) => !UNCHARTED_FIELDS.has(f.path[0] ?? ''))
    if (diff.length === 0) return []
    return [
      {
        kind: now.kind,
        namespace: now.namespace,
        name: now.name,
        origin: fieldOrigin(now, diff),
        fields: diff.map((f) => ['spec', ...f.path].join('.')),
        expect: diff,
      },
    ]
  })
}

/** Head releases whose spec.chartRef names the source (chartRef.namespace defaults to the release's). */
function chartReaders(releases: ReadonlyMap<string, Release>, source: ChartChange): Release[] {
  return [...releases.values()].filter((release) => {
    const ref = record(release.spec['chartRef'])
    const namespace = typeof ref['namespace'] === 'string' && ref['namespace'] !== '' ? ref['namespace'] : release.namespace
    return ref['kind'] === source.kind && ref['name'] === source.name && namespace === source.namespace
  })
}

// ---------------------------------------------------------------------------------------
// The plan's releases

function plannedReleases(
  planned: readonly PlannedWithReads[],
  specs: ReadonlyMap<string, SpecChange>,
  charts: ReadonlyMap<string, ChartChange>,
): PlannedRelease[] {
  const byRelease = new Map<string, { ref: ReleaseRef; reads: Map<SourceId, PlannedRead> }>()
  const entry = (ref: ReleaseRef) => {
    const key = releaseKey(ref)
    const found = byRelease.get(key) ?? { ref: { namespace: ref.namespace, name: ref.name }, reads: new Map() }
    byRelease.set(key, found)
    return found
  }
  for (const { source, readOrigins } of planned) {
    if (source.digest === undefined) continue
    for (const target of source.targets) {
      const origin = readOrigins.get(releaseKey(target)) ?? source.origin
      // A Secret's digest is keyed once the run holds the cluster's key: the plan records none.
      const digest = source.kind === 'Secret' ? {} : { digest: source.digest }
      entry(target).reads.set(source.id, { id: source.id, ...digest, encrypted: source.encrypted, origin })
    }
  }
  for (const key of [...specs.keys(), ...charts.keys()]) {
    const [namespace = '', ...rest] = key.split('/')
    entry({ namespace, name: rest.join('/') })
  }
  return [...byRelease.entries()]
    .map(([key, { ref, reads }]): PlannedRelease => {
      const spec = specs.get(key)
      const chart = charts.get(key)
      const sources = [...reads.values()].sort((a, b) => compareText(a.id, b.id))
      return { ...ref, sources, ...(spec === undefined ? {} : { spec }), ...(chart === undefined ? {} : { chart }) }
    })
    .sort(byReleaseKey)
}

// ---------------------------------------------------------------------------------------
// Small helpers

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function record(value: unknown): JsonRecord {
  return isRecord(value) ? value : {}
}

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : []
}

function compareProblem(a: FileProblem, b: FileProblem): number {
  return compareText(a.file, b.file) || (a.line ?? 0) - (b.line ?? 0) || compareText(a.message, b.message)
}
