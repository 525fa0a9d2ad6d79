// What the watch mode knows, kept from the watch events alone (no GET per event): the
// labelled sources with their digest and annotated targets, the HelmReleases with their
// valuesFrom and config-digest. Pure: answers which releases a source change concerns and
// what to plan for a release, with the same rules as trigger mode (annotation targets, and
// with `discover` every release whose valuesFrom names the source).

import { mayTarget, refusedTargetMessage, type CrossNamespaceTargets } from '../../core/namespace-rule.ts'
import { decide, SkipReason, type Decision } from '../trigger/action.ts'
import { contentOfConfigMap, digestOf, keyedDigest, type DigestKey } from '../../core/digest.ts'
import type { Keys } from '../../core/keys.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import { toHelmRelease } from '../../core/helmrelease.ts'
import { parseManifestFile } from '../../core/manifest.ts'
import {
  releaseKey,
  sourceId,
  type Digest,
  type PlainDigest,
  type PlannedRead,
  type PlannedRelease,
  type ReleaseRef,
  type SourceId,
  type SourceKind,
  type SourceRef,
} from '../../core/model.ts'
import { liveDigest } from '../../core/digest.ts'

/** Which label put a source in scope: ours, or Flux's reconcile.fluxcd.io/watch. */
export type Selector = 'trigger' | 'watch'

export interface WatchedSource extends SourceRef {
  readonly id: SourceId
  /** Reflector store key (the id). */
  readonly key: string
  readonly resourceVersion: string
  /** As config-digest records it: a Secret's keyed (the live Secret is decrypted: its plain digest is never published). */
  readonly digest: Digest
  /** A Secret's unkeyed digest, in memory only: config-digest written before keying may hold it. */
  readonly legacyDigest?: PlainDigest
  readonly annotatedTargets: readonly ReleaseRef[]
  /** Annotation mistakes, said once per version. */
  readonly problems: readonly string[]
}

export interface WatchedRelease extends HelmRelease {
  readonly key: string
}

export interface ViewOptions {
  readonly keys: Keys
  readonly defaultNamespace: string
  /** Namespaces a source may target besides its own (core/namespace-rule.ts). */
  readonly crossNamespaceTargets: CrossNamespaceTargets
  readonly semanticDigest: boolean
  readonly discover: boolean
  /** The key of Secret digests (kube/digest-key.ts). */
  readonly digestKey: DigestKey
}

/** What a source's annotations say: its targets and its mistakes. */
interface AnnotationReading {
  readonly annotatedTargets: readonly ReleaseRef[]
  readonly problems: readonly string[]
}

/**
 * The last reading of each source's annotations, by id: a change of data only (the common
 * one) reuses it instead of parsing the same annotations again. Bounded by the sources in view.
 */
export class AnnotationMemo {
  private readonly readings = new Map<SourceId, { readonly text: string; readonly reading: AnnotationReading }>()
  private readonly limit: number

  constructor(limit = 100_000) {
    this.limit = limit
  }

  read(id: SourceId, text: string, parse: () => AnnotationReading): AnnotationReading {
    const last = this.readings.get(id)
    if (last?.text === text) return last.reading
    const reading = parse()
    if (this.readings.size >= this.limit) this.readings.clear()
    this.readings.set(id, { text, reading })
    return reading
  }

  forget(id: SourceId): void {
    this.readings.delete(id)
  }
}

/** A live ConfigMap/Secret as the watch sees it; undefined when it is not one. */
export function parseSource(kind: SourceKind, object: unknown, options: ViewOptions, memo?: AnnotationMemo): WatchedSource | undefined {
  const o = record(object)
  const metadata = record(o['metadata'])
  const name = text(metadata['name'])
  const namespace = text(metadata['namespace'])
  if (name === '' || namespace === '') return undefined
  const ref = { kind, namespace, name }
  const id = sourceId(ref)
  const plain = liveDigest({ kind, data: strings(o['data']), binaryData: strings(o['binaryData']), labels: {} }, options.semanticDigest)
  const digest = kind === 'Secret' ? keyedDigest(plain, options.digestKey) : plain
  // The annotations read by the code that reads manifests, so both obey the same rules.
  const manifest = { apiVersion: 'v1', kind, metadata: { name, namespace, labels: strings(metadata['labels']), annotations: strings(metadata['annotations']) } }
  const manifestText = JSON.stringify(manifest)
  const readAnnotations = (): AnnotationReading => {
    const parsed = parseManifestFile(
      id,
      { type: 'file', bytes: new TextEncoder().encode(manifestText) },
      { prefix: options.keys.prefix, defaultNamespace: options.defaultNamespace, semanticDigest: false },
    )
    const named = parsed.sources[0]?.annotatedTargets ?? []
    // A source triggers in another namespace only where the operator allowed it: refused ones are said once.
    const allowed = (ref: ReleaseRef): boolean => mayTarget(options.crossNamespaceTargets, namespace, ref.namespace)
    return {
      annotatedTargets: named.filter(allowed),
      problems: [
        ...parsed.problems.filter((p) => p.severity === 'error').map((p) => p.message),
        ...named.filter((ref) => !allowed(ref)).map((ref) => refusedTargetMessage(id, ref, namespace)),
      ],
    }
  }
  const { annotatedTargets, problems } = memo === undefined ? readAnnotations() : memo.read(id, manifestText, readAnnotations)
  return {
    ...ref,
    id,
    key: id,
    resourceVersion: text(metadata['resourceVersion']),
    digest,
    ...(kind === 'Secret' ? { legacyDigest: plain } : {}),
    annotatedTargets,
    problems,
  }
}

export function parseRelease(object: unknown): WatchedRelease | undefined {
  const release = toHelmRelease(object)
  if (release.name === '' || release.namespace === '') return undefined
  return { ...release, key: releaseKey(release) }
}

/** The digest a deleted optional source stands for: it contributes no values, like an empty one. */
export function absentDigest(semantic: boolean): Digest {
  return digestOf(contentOfConfigMap({}), { semantic })
}

export class WatchView {
  private readonly options: ViewOptions
  /** Per source, what each selector's reflector holds (a source may carry both labels). */
  private readonly held = new Map<SourceId, Map<Selector, WatchedSource>>()
  private readonly releaseMap = new Map<string, WatchedRelease>()
  /** releaseKey → sources naming it in `<prefix>/helmreleases-name`. */
  private readonly annotated = new Map<string, Set<SourceId>>()
  /** Deleted sources a release reads with `optional: true`, until they come back. */
  private readonly absent = new Map<SourceId, SourceRef>()
  /**
   * sourceId → keys of the releases whose valuesFrom names it: a source event finds its
   * readers without scanning every release (a scan per event, and per source in a full pass).
   */
  private readonly readers = new Map<SourceId, Set<string>>()

  constructor(options: ViewOptions) {
    this.options = options
  }

  get sourceCount(): number {
    return this.held.size
  }

  get releaseCount(): number {
    return this.releaseMap.size
  }

  source(id: SourceId): WatchedSource | undefined {
    const bySelector = this.held.get(id)
    return bySelector?.get('trigger') ?? bySelector?.get('watch')
  }

  release(key: string): WatchedRelease | undefined {
    return this.releaseMap.get(key)
  }

  releases(): WatchedRelease[] {
    return [...this.releaseMap.values()]
  }

  /** Releases the source triggers: annotated targets, and with discover the releases whose valuesFrom names it. */
  targetsOf(source: WatchedSource | SourceRef): ReleaseRef[] {
    const annotated = 'annotatedTargets' in source ? source.annotatedTargets : []
    const readers = this.options.discover ? this.readersOf(source).map((r) => ({ namespace: r.namespace, name: r.name })) : []
    return unique([...annotated, ...readers])
  }

  /** Releases whose spec.valuesFrom names the source (same kind, same namespace). */
  readersOf(ref: SourceRef): WatchedRelease[] {
    const keys = this.readers.get(sourceId(ref))
    if (keys === undefined) return []
    return [...keys].flatMap((key) => this.releaseMap.get(key) ?? [])
  }

  /** Records a source seen by one selector; returns the releases to look at (before and after targets). */
  upsertSource(selector: Selector, source: WatchedSource): ReleaseRef[] {
    const before = this.source(source.id)
    const bySelector = this.held.get(source.id) ?? new Map<Selector, WatchedSource>()
    bySelector.set(selector, source)
    this.held.set(source.id, bySelector)
    this.absent.delete(source.id)
    if (before !== undefined) this.unindex(before)
    this.index(source)
    return unique([...(before === undefined ? [] : this.targetsOf(before)), ...this.targetsOf(source)])
  }

  /**
   * A selector no longer holds the source. Returns the source when no selector holds it any
   * more (deleted, or unlabelled: the caller tells them apart), undefined when it is still in scope.
   */
  removeSource(selector: Selector, id: SourceId): WatchedSource | undefined {
    const bySelector = this.held.get(id)
    const gone = bySelector?.get(selector)
    if (bySelector === undefined || gone === undefined) return undefined
    bySelector.delete(selector)
    if (bySelector.size > 0) return undefined
    this.held.delete(id)
    this.unindex(gone)
    return gone
  }

  /** The source was deleted: releases reading it with optional: true will be planned without it. */
  markAbsent(ref: SourceRef): void {
    if (this.readersOf(ref).some((r) => readsOptionally(r, ref))) this.absent.set(sourceId(ref), { kind: ref.kind, namespace: ref.namespace, name: ref.name })
  }

  upsertRelease(release: WatchedRelease): WatchedRelease | undefined {
    const previous = this.releaseMap.get(release.key)
    this.releaseMap.set(release.key, release)
    const before = previous === undefined ? new Set<SourceId>() : sourcesRead(previous)
    const after = sourcesRead(release)
    for (const id of before) if (!after.has(id)) this.unindexReader(id, release.key)
    for (const id of after) if (!before.has(id)) this.readers.set(id, (this.readers.get(id) ?? new Set<string>()).add(release.key))
    return previous
  }

  removeRelease(key: string): void {
    const previous = this.releaseMap.get(key)
    if (previous === undefined) return
    this.releaseMap.delete(key)
    for (const id of sourcesRead(previous)) this.unindexReader(id, key)
  }

  /** Every release some watched source (or an absent optional one) concerns. */
  allTargets(): ReleaseRef[] {
    const fromSources = [...this.held.keys()].flatMap((id) => {
      const s = this.source(id)
      return s === undefined ? [] : this.targetsOf(s)
    })
    const fromAbsent = [...this.absent.values()].flatMap((ref) => this.readersOf(ref))
    return unique([...fromSources, ...fromAbsent.map((r) => ({ namespace: r.namespace, name: r.name }))])
  }

  /** The plan for one release: every watched source that triggers it, at its current digest. */
  plan(ref: ReleaseRef): PlannedRelease {
    const key = releaseKey(ref)
    const ids = new Set(this.annotated.get(key) ?? [])
    const release = this.releaseMap.get(key)
    const sources: PlannedRead[] = []
    if (release !== undefined && this.options.discover) {
      for (const v of release.valuesFrom) ids.add(sourceId({ kind: v.kind, namespace: release.namespace, name: v.name }))
    }
    for (const id of [...ids].sort()) {
      const source = this.source(id)
      if (source !== undefined) {
        sources.push({ id, digest: source.digest, ...(source.legacyDigest === undefined ? {} : { legacyDigest: source.legacyDigest }), encrypted: false })
      } else if (this.absent.has(id) && release !== undefined && this.options.discover)
        sources.push({ id, digest: absentDigest(this.options.semanticDigest), encrypted: false })
    }
    return { namespace: ref.namespace, name: ref.name, sources }
  }

  /**
   * Decides from the cached release, without any API call: only a `trigger` is worth the
   * engine's GET and patch. undefined when the release is not in view (outside the namespaces).
   */
  precheck(planned: PlannedRelease): Decision | undefined {
    const live = this.releaseMap.get(releaseKey(planned))
    if (live === undefined) return undefined
    if (planned.sources.length === 0) return { action: 'skip', reason: SkipReason.UpToDate, message: 'no watched source triggers it' }
    return decide({ planned, live, digestKey: this.options.keys.configDigest, force: false, reset: false })
  }

  private index(source: WatchedSource): void {
    for (const t of source.annotatedTargets) {
      const key = releaseKey(t)
      const set = this.annotated.get(key) ?? new Set<SourceId>()
      set.add(source.id)
      this.annotated.set(key, set)
    }
  }

  private unindexReader(id: SourceId, key: string): void {
    const keys = this.readers.get(id)
    keys?.delete(key)
    if (keys?.size === 0) this.readers.delete(id)
  }

  private unindex(source: WatchedSource): void {
    for (const t of source.annotatedTargets) {
      const set = this.annotated.get(releaseKey(t))
      set?.delete(source.id)
      if (set?.size === 0) this.annotated.delete(releaseKey(t))
    }
  }
}

/** `ConfigMap/<namespace>/<name>` back to its parts; undefined for anything else. */
export function parseSourceId(id: string): (SourceRef & { readonly id: SourceId }) | undefined {
  const [kind, namespace, name, ...rest] = id.split('/')
  if ((kind !== 'ConfigMap' && kind !== 'Secret') || namespace === undefined || namespace === '' || name === undefined || name === '' || rest.length > 0)
    return undefined
  const ref = { kind, namespace, name } satisfies SourceRef
  return { ...ref, id: sourceId(ref) }
}

/** The sources a release's valuesFrom names (in its own namespace, as helm-controller reads them). */
function sourcesRead(release: HelmRelease): Set<SourceId> {
  return new Set(release.valuesFrom.map((v) => sourceId({ kind: v.kind, namespace: release.namespace, name: v.name })))
}

export function readsOptionally(release: HelmRelease, ref: SourceRef): boolean {
  return release.namespace === ref.namespace && release.valuesFrom.some((v) => v.kind === ref.kind && v.name === ref.name && v.optional)
}

function unique(refs: readonly ReleaseRef[]): ReleaseRef[] {
  return [...new Map(refs.map((r) => [releaseKey(r), { namespace: r.namespace, name: r.name }])).values()]
}

function record(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : ''
}

function strings(value: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(record(value)).filter((e): e is [string, string] => typeof e[1] === 'string'))
}
