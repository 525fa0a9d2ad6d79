// Mode `discover`: label the HelmReleases that read values from ConfigMaps/Secrets (and
// unlabel those that stopped), then lint the wiring. `from-git` lints the repository's
// manifests at head alone, with no cluster: a pull-request check.

import { mapLimit } from '../../lib/concurrency.ts'
import { ConfigurationError, messageOf } from '../../lib/errors.ts'
import type { GitReader } from '../../git/reader.ts'
import { keysFor, type Keys } from '../../core/keys.ts'
import { ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient, SourceObject } from '../../kube/cluster.ts'
import { toReleaseManifest, type HelmRelease } from '../../core/helmrelease.ts'
import { FindingCode, lint, problemFindings, untargetedFindings, type Finding, type LintSource } from './lint.ts'
import { parseManifestFile } from '../../core/manifest.ts'
import {
  releaseKey,
  sourceId,
  type HeadFile,
  type ReleaseManifest,
  type SourceId,
  type SourceKind,
  type SourceManifest,
  type SourceRef,
} from '../../core/model.ts'
import { pathFilter, repositoryManifests, type RepositoryManifests } from '../../core/plan.ts'
import { renderedManifests } from '../../core/plan-rendered.ts'
import type { RenderedRepository } from '../../core/rendered.ts'
import type { DiscoverOptions } from '../../settings.ts'
import { eventRecorder, systemClock, type Logger } from '../../engine/ports.ts'
import { tokenSequence } from '../../engine/tokens.ts'
import { writeRelease, type WriteContext } from '../../engine/write-release.ts'
import { labelChangeOf, relabelAction, type LabelChange } from './label.ts'

export { labelAction, type LabelChange } from './label.ts'

export interface DiscoverReport {
  /** What was read: namespaces of the cluster, or the repository commit. */
  readonly scope: string
  readonly fromGit: boolean
  readonly dryRun: boolean
  /** HelmReleases examined. */
  readonly releases: number
  readonly labels: readonly LabelChange[]
  readonly findings: readonly Finding[]
  readonly notes: readonly string[]
}

/** Renders a commit as Flux applies it; undefined when no Flux Kustomization applies the repository. */
export type RenderCommit = (head: string) => Promise<RenderedRepository | undefined>

export interface DiscoverDeps {
  readonly git: () => Promise<GitReader>
  /** Absent: the repository's files are read one by one. */
  readonly render?: RenderCommit
  readonly connect: () => Promise<ClusterClient>
  readonly log: Logger
}

export async function runDiscover(settings: DiscoverOptions, sha: string, deps: DiscoverDeps): Promise<DiscoverReport> {
  return settings.fromGit ? discoverFromGit(settings, sha, await deps.git(), deps.render) : discoverInCluster(settings, await deps.connect(), deps.log)
}

// ---- Cluster ------------------------------------------------------------------------------

async function discoverInCluster(settings: DiscoverOptions, cluster: ClusterClient, log: Logger): Promise<DiscoverReport> {
  const keys = keysFor(settings.annotationPrefix)
  const scoped = settings.namespaces.length > 0 ? settings.namespaces : [undefined]
  const notes: string[] = []
  const releases = (await mapLimit(scoped, settings.maxConcurrency, (ns) => cluster.listReleases(ns))).flat()
  const labels = await relabelAll(cluster, releases, keys, settings, log)

  const listed = await annotatedSources(cluster, scoped, settings, notes, log)
  const known = [...releases.map(toReleaseManifest), ...(await outsideScope(cluster, releases, listed.sources, settings))]
  const lookup = await referencedSources(cluster, releases, keys, settings, notes, log)
  const findings = [
    ...listed.findings,
    ...lint({ keys, where: 'cluster', releases: known, annotatedSources: listed.sources, lookup: (ref) => lookup.get(sourceId(ref)) ?? 'unknown' }),
  ]
  const scope = settings.namespaces.length > 0 ? `namespaces ${settings.namespaces.join(', ')}` : 'all namespaces'
  return { scope, fromGit: false, dryRun: settings.dryRun, releases: releases.length, labels, findings, notes }
}

/** Adds or removes our label through the write engine; every release is decided on its listed copy first. */
async function relabelAll(
  cluster: ClusterClient,
  releases: readonly HelmRelease[],
  keys: Keys,
  settings: DiscoverOptions,
  log: Logger,
): Promise<LabelChange[]> {
  const write: WriteContext = {
    cluster,
    requestedAtKey: keys.requestedAt,
    dryRun: settings.dryRun,
    clock: systemClock,
    log,
    tokens: tokenSequence(),
    events: eventRecorder(cluster, log),
  }
  const action = relabelAction(keys)
  const changes = await mapLimit(releases, settings.maxConcurrency, async (release) => {
    const outcome = await writeRelease(release, action, { ...write, observed: { live: release } })
    return labelChangeOf(release, outcome, settings.dryRun)
  })
  return changes.flatMap((c) => (c === undefined ? [] : [c]))
}

interface ListedSources {
  readonly sources: readonly LintSource[]
  readonly findings: readonly Finding[]
}

/** The sources carrying our label, their annotations parsed by the same code that reads manifests. */
async function annotatedSources(
  cluster: ClusterClient,
  scoped: readonly (string | undefined)[],
  settings: DiscoverOptions,
  notes: string[],
  log: Logger,
): Promise<ListedSources> {
  const keys = keysFor(settings.annotationPrefix)
  const selector = `${keys.triggerLabel}=${keys.triggerLabelValue}`
  const kinds: readonly SourceKind[] = ['ConfigMap', 'Secret']
  const lists = await Promise.all(
    kinds.flatMap((kind) =>
      scoped.map(async (ns) => {
        try {
          return await cluster.listSources(kind, ns, selector)
        } catch (error) {
          if (!(error instanceof ForbiddenError)) throw error
          warn(notes, log, `Could not list ${kind}s${ns === undefined ? '' : ` in ${ns}`} (${messageOf(error)}); their annotations were not checked.`)
          return []
        }
      }),
    ),
  )
  const parsed = lists.flat().map((object) => liveSource(object, settings))
  return { sources: parsed.flatMap((p) => (p.source === undefined ? [] : [p.source])), findings: parsed.flatMap((p) => p.findings) }
}

/** A live object's metadata read as a manifest would be, so annotations obey exactly the same rules. */
function liveSource(object: SourceObject, settings: DiscoverOptions): { source?: LintSource; findings: Finding[] } {
  const id = sourceId(object)
  const manifest = {
    apiVersion: 'v1',
    kind: object.kind,
    metadata: { name: object.name, namespace: object.namespace, labels: object.labels, annotations: object.annotations },
  }
  const parsed = parseManifestFile(
    id,
    { type: 'file', bytes: new TextEncoder().encode(JSON.stringify(manifest)) },
    { prefix: settings.annotationPrefix, defaultNamespace: settings.defaultNamespace, semanticDigest: false },
  )
  const findings = parsed.problems.map((p): Finding => ({
    severity: p.severity,
    code: FindingCode.InvalidManifest,
    message: `${id}: ${p.message}`,
    source: id,
  }))
  const first = parsed.sources[0]
  if (first === undefined) return { findings }
  return {
    source: { kind: first.kind, namespace: object.namespace, name: first.name, labelled: first.labelled, annotatedTargets: first.annotatedTargets },
    findings,
  }
}

/** Releases named by annotations in namespaces we did not list: looked up one by one. */
async function outsideScope(
  cluster: ClusterClient,
  releases: readonly HelmRelease[],
  sources: readonly LintSource[],
  settings: DiscoverOptions,
): Promise<ReleaseManifest[]> {
  if (settings.namespaces.length === 0) return []
  const listed = new Set(settings.namespaces)
  const seen = new Set(releases.map(releaseKey))
  const wanted = [
    ...new Map(
      sources
        .flatMap((s) => s.annotatedTargets)
        .filter((t) => !listed.has(t.namespace) && !seen.has(releaseKey(t)))
        .map((t) => [releaseKey(t), t]),
    ).values(),
  ]
  const found = await mapLimit(wanted, settings.maxConcurrency, (t) => cluster.getRelease(t))
  return found.flatMap((r) => (r === undefined ? [] : [toReleaseManifest(r)]))
}

/** Each object a valuesFrom names, read once. */
async function referencedSources(
  cluster: ClusterClient,
  releases: readonly HelmRelease[],
  keys: Keys,
  settings: DiscoverOptions,
  notes: string[],
  log: Logger,
): Promise<ReadonlyMap<SourceId, LintSource | 'missing' | 'unknown'>> {
  const refs = new Map<SourceId, SourceRef>()
  for (const r of releases)
    for (const v of r.valuesFrom)
      refs.set(sourceId({ kind: v.kind, namespace: r.namespace, name: v.name }), { kind: v.kind, namespace: r.namespace, name: v.name })
  const entries = await mapLimit([...refs.entries()], settings.maxConcurrency, async ([id, ref]): Promise<[SourceId, LintSource | 'missing' | 'unknown']> => {
    try {
      const live = await cluster.getSource(ref)
      if (live === undefined) return [id, 'missing']
      const labelled = live.labels[keys.triggerLabel] === keys.triggerLabelValue || live.labels[keys.watchLabel] === keys.watchLabelValue
      return [id, { ...ref, labelled, annotatedTargets: [] }]
    } catch (error) {
      if (!(error instanceof ForbiddenError)) throw error
      warn(notes, log, `Could not read ${id} (${messageOf(error)}); whether it exists and triggers was not checked.`)
      return [id, 'unknown']
    }
  })
  return new Map(entries)
}

function warn(notes: string[], log: Logger, note: string): void {
  notes.push(note)
  log.warning(note)
}

// ---- Repository ---------------------------------------------------------------------------

async function discoverFromGit(settings: DiscoverOptions, sha: string, git: GitReader, render?: RenderCommit): Promise<DiscoverReport> {
  const keys = keysFor(settings.annotationPrefix)
  const rev = settings.head ?? sha
  const head = await git.resolve(rev)
  if (head === undefined)
    throw new ConfigurationError(`Commit '${rev}' is not in the clone; fetch it (actions/checkout with fetch-depth: 0) or set the head input.`)
  const rendered = render === undefined ? undefined : await render(head)
  const flux = rendered !== undefined && rendered.kustomizations.length > 0 ? rendered : undefined
  const files = flux === undefined ? await git.headFiles(head, pathFilter(settings.paths)) : []
  const options = {
    prefix: settings.annotationPrefix,
    defaultNamespace: settings.defaultNamespace,
    semanticDigest: settings.semanticDigest,
    discover: true,
    paths: settings.paths,
    crossNamespaceTargets: settings.crossNamespaceTargets,
  }
  // With Flux Kustomizations, the objects they render: generated sources under their real names.
  const manifests: RepositoryManifests = flux === undefined ? repositoryManifests(files, options) : renderedManifests(flux, options)
  const byId = new Map<SourceId, SourceManifest>()
  for (const s of manifests.sources) if (!byId.has(sourceId(s))) byId.set(sourceId(s), s)
  const texts = new Map(files.map((f) => [f.path, textOf(f)]))
  const annotated = [...byId.values()].filter((s) => s.labelled && s.annotatedTargets.length > 0).map((s) => ({ ...s, ...annotationLine(s, texts, keys) }))
  // A Kustomization that could not be rendered may hold the source: absent is then not "missing".
  const absent = flux !== undefined && (flux.problems.length > 0 || flux.notRendered.length > 0) ? 'unknown' : 'missing'
  const findings = [
    ...problemFindings(manifests.problems),
    ...lint({ keys, where: 'repository', releases: manifests.releases, annotatedSources: annotated, lookup: (ref) => byId.get(sourceId(ref)) ?? absent }),
    // What the pull-request plan warns of on this commit: the same rule, file and line.
    ...untargetedFindings(keys, [...byId.values()], manifests.releases),
  ]
  const notes = (flux?.notRendered ?? []).map((n) => `Flux Kustomization ${n.kustomization} was not rendered: ${n.reason}`)
  return {
    scope: `repository at ${head.slice(0, 12)}`,
    fromGit: true,
    dryRun: settings.dryRun,
    releases: manifests.releases.length,
    labels: [],
    findings,
    notes,
  }
}

function textOf(file: HeadFile): string {
  return file.content.type === 'file' ? new TextDecoder().decode(file.content.bytes) : ''
}

/** The line of `<prefix>/helmreleases-name` in the source's document: the line to fix. */
function annotationLine(source: LintSource, texts: ReadonlyMap<string, string>, keys: Keys): { annotationLine?: number } {
  if (source.origin === undefined) return {}
  const lines = (texts.get(source.origin.file) ?? '').split('\n')
  const key = new RegExp(`^\\s*["']?${keys.targetNames.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}["']?\\s*:`)
  for (let i = source.origin.line - 1; i < lines.length; i++) {
    if (i > source.origin.line - 1 && /^---/.test(lines[i] ?? '')) break
    if (key.test(lines[i] ?? '')) return { annotationLine: i + 1 }
  }
  return {}
}
