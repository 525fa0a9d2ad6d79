// renderChange: a commit range's repository as Flux applies it, at base and at head.
//
// Contract (the planner codes against this):
// - Input: a git reader (trees and blobs through one cat-file, and grep), the two commits, the files the range
//   changed (repository paths), how to recognise this repository (its URL, or the GitRepository
//   `<namespace>/<name>` naming it), the optional cluster root (`clusters/production`), and the
//   kustomize to drive (src/kustomize/). Nothing is fetched: remote bases are reported in
//   `notRendered` unless `fetchRemote` is set; substituteFrom values come from the repository
//   and, when connected, from `cluster` (a port the caller fills).
// - Output: undefined when no Flux Kustomization applies this repository at either commit (the
//   caller keeps reading files one by one). Otherwise `{ base, head }`, each a RenderedRepository:
//   the objects of every Flux Kustomization the range can have changed (its input closure holds a
//   changed file, or its own definition changed), plus those of the Kustomizations that define
//   other Kustomizations (the chain is always followed). A Kustomization listed in
//   `kustomizations` but absent from objects, problems and notRendered was untouched by the range:
//   its objects are the same at base and head. With `scope: 'all'` every Kustomization is rendered.
// - Cost follows the change: both commits are listed, not extracted; only the Flux objects (found
//   by git grep), kustomization files and the closures of the builds are read. A Kustomization
//   whose closure and spec the range did not touch is built once for both commits; both commits
//   render side by side, and the Kustomizations a build will define are built as written while
//   it runs (kustomize's output only: Flux's layer follows the chain in order). With `cache`,
//   calls over one range (a fleet's cluster roots) open it once and share kustomize's outputs.
// - Never throws for repository content: a build that fails is one RenderProblem naming the Flux
//   Kustomization, its path and kustomize's own error; the others are still rendered.
//   Throws only for what the caller must fix (no kustomize, git failing).

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { parseDocument, stringify } from 'yaml'
import type { Provenance, RenderedObject, RenderedRepository, RenderProblem } from '../core/rendered.ts'
import { limiter } from '../lib/concurrency.ts'
import type { GitReader, ObjectSession } from '../git/reader.ts'
import { boundedError, type Kustomize } from '../kustomize/kustomize.ts'
import { closureOf, filesIn, inClosure, KUSTOMIZATION_FILES, kustomizationFileIn, type Closure } from './closure.ts'
import { fluxKustomizationText, generatedResources, outputDocuments, withCommonMetadata } from './flux-layer.ts'
import { FLUX_NAMESPACE, fluxKustomization, isRecord, repositoryKey, type ArtifactSpec, type FluxKustomization } from './flux-objects.ts'
import { documentLine, generatorProvenance, ORIGIN_ANNOTATION, parseOrigin, patchFiles, specOrigins, TreeFiles } from './provenance.ts'
import { FLUX_MARK, objectsIn, scanFluxObjects, YAML_FILE, type FluxScan, type Written } from './scan.ts'
import { BlobStore, filteredView, Snapshot, writeFiles } from './snapshot.ts'
import { artifactFilter, SOURCE_IGNORE_FILE } from './source-ignore.ts'
import { artifactTree, type SourceTree } from './source-tree.ts'
import { substitute, VARIABLE_NAME } from './substitute.ts'

/** Values of a ConfigMap/Secret read from the cluster (Secret values decoded); undefined: not there. */
export type ClusterValues = (kind: 'ConfigMap' | 'Secret', namespace: string, name: string) => Promise<Readonly<Record<string, string>> | undefined>

export interface RenderChangeOptions {
  /** Commit before the change; undefined renders head alone (base is then empty). */
  readonly base: string | undefined
  readonly head: string
  /** Repository paths the range changed; the reader's own diff of base..head is added to them. */
  readonly changedFiles: readonly string[]
  /** This repository's URL (any git spelling); GitRepositories with this URL are "this repository". */
  readonly repositoryUrl: string | undefined
  /** `<namespace>/<name>` of the GitRepository that fetches this repository, when its URL is not enough. */
  readonly gitRepository?: string | undefined
  /** Path Flux bootstrap syncs (`clusters/production`): the chain starts there. Undefined: every Flux Kustomization found. */
  readonly clusterRoot?: string | undefined
  readonly kustomize: Kustomize
  /** Let kustomize fetch remote bases (never in plan-only runs). */
  readonly fetchRemote?: boolean
  /** substituteFrom values from the cluster, when connected. */
  readonly cluster?: ClusterValues | undefined
  /** 'all' re-renders every Kustomization (a full sync); default 'changed'. */
  readonly scope?: 'changed' | 'all'
  /** Concurrent kustomize builds; default the number of CPUs. */
  readonly concurrency?: number
  /**
   * Work shared by several calls over one range (a fleet renders it once per cluster root): the
   * commits opened once, and kustomize run once per commit, source, path and Flux layer, whatever
   * the Kustomization's name or postBuild. The caller closes it; without it, each call opens and
   * closes its own.
   */
  readonly cache?: RenderCache | undefined
}

export interface RenderedChange {
  readonly base: RenderedRepository
  readonly head: RenderedRepository
}

type TreeReader = Pick<GitReader, 'openObjects' | 'grep'>

const EMPTY: RenderedRepository = { objects: [], problems: [], notRendered: [], kustomizations: [] }

export async function renderChange(reader: TreeReader, options: RenderChangeOptions): Promise<RenderedChange | undefined> {
  const { cache } = options
  if (cache !== undefined) return renderRange(await cache.range(reader, options), options, cache.limit(options))
  const work = await mkdtemp(join(tmpdir(), 'hrt-render-'))
  const session = reader.openObjects()
  try {
    return await renderRange(await openRange(reader, session, options, work), options, concurrencyLimit(options))
  } finally {
    session.close()
    await rm(work, { recursive: true, force: true })
  }
}

/** A range's two commits, read through one git session, and what renders of it share. */
interface OpenedRange {
  readonly head: Commit
  readonly base: Commit | undefined
  /** Paths the two commits hold differently. */
  readonly changed: readonly string[]
  /** kustomize's outputs: see kustomizeOutput. */
  readonly outputs: Map<string, Promise<BuildOutput>>
  /** Kustomization files parsed, by text: both commits hold most of them alike. */
  readonly parsed: Map<string, unknown>
}

async function openRange(reader: TreeReader, session: ObjectSession, options: RenderChangeOptions, work: string): Promise<OpenedRange> {
  const store = new BlobStore(session)
  // Both listings and the search for Flux objects at once: each is a git process.
  const [headSnapshot, baseSnapshot, marked] = await Promise.all([
    Snapshot.open(session, store, options.head),
    options.base === undefined ? undefined : Snapshot.open(session, store, options.base),
    reader.grep(options.head, FLUX_MARK, YAML_GLOBS),
  ])
  const head = await Commit.open(reader, headSnapshot, marked, join(work, 'head'))
  const base = baseSnapshot === undefined ? undefined : await Commit.derive(head, baseSnapshot, join(work, 'base'))
  const changed = base === undefined ? [] : changedPaths(base.snapshot, head.snapshot)
  return { head, base, changed, outputs: new Map(), parsed: new Map() }
}

function concurrencyLimit(options: RenderChangeOptions): <R>(fn: () => Promise<R>) => Promise<R> {
  return limiter(options.concurrency ?? Math.max(1, availableParallelism()))
}

async function renderRange(
  range: OpenedRange,
  options: RenderChangeOptions,
  limit: <R>(fn: () => Promise<R>) => Promise<R>,
): Promise<RenderedChange | undefined> {
  const { head, base } = range
  const changed = new Set([...options.changedFiles, ...range.changed])
  const identity = repositoryIdentity(options, head.scan, base?.scan)
  if (!appliesRepository(head.scan, identity) && !(base && appliesRepository(base.scan, identity))) return undefined
  // One bound on kustomize processes for both commits, which render side by side.
  const ctx: RenderContext = {
    options,
    identity,
    changed,
    touched: new Set(),
    ignoreChanged: base !== undefined && base.ignoreRules() !== head.ignoreRules(),
    changedMention: mentionsIn([...changed], [head.snapshot, base?.snapshot]),
    shared: new Map(),
    outputs: range.outputs,
    speculative: [],
    parsed: range.parsed,
    limit,
  }
  const [headView, baseView] = await Promise.all([renderCommit(head, ctx), base ? renderCommit(base, ctx) : EMPTY])
  await Promise.allSettled(ctx.speculative)
  return { base: baseView, head: headView }
}

/** See RenderChangeOptions.cache. It owns the git sessions and work directories until closed. */
export class RenderCache {
  private readonly ranges = new Map<string, Promise<OpenedRange>>()
  private readonly sessions: ObjectSession[] = []
  private directory: Promise<string> | undefined
  private bound: (<R>(fn: () => Promise<R>) => Promise<R>) | undefined

  /** The commits of a range, opened on first use. */
  range(reader: TreeReader, options: RenderChangeOptions): Promise<OpenedRange> {
    const key = `${options.base ?? ''}..${options.head}`
    let found = this.ranges.get(key)
    if (found === undefined) {
      const index = this.ranges.size
      const session = reader.openObjects()
      this.sessions.push(session)
      found = this.work().then((work) => openRange(reader, session, options, join(work, `range-${index}`)))
      found.catch(() => {})
      this.ranges.set(key, found)
    }
    return found
  }

  /** One bound on kustomize processes for every render sharing the cache (roots render side by side). */
  limit(options: RenderChangeOptions): <R>(fn: () => Promise<R>) => Promise<R> {
    this.bound ??= concurrencyLimit(options)
    return this.bound
  }

  /** Ends the git sessions and removes every work directory. */
  async close(): Promise<void> {
    await Promise.allSettled(this.ranges.values())
    const directory = this.directory
    this.directory = undefined
    this.ranges.clear()
    for (const session of this.sessions.splice(0)) session.close()
    if (directory !== undefined) await rm(await directory, { recursive: true, force: true })
  }

  private work(): Promise<string> {
    this.directory ??= mkdtemp(join(tmpdir(), 'hrt-render-'))
    return this.directory
  }
}

/** How this repository is named by the Flux objects: GitRepository ids and ExternalArtifacts cut from it. */
interface Identity {
  readonly gitRepositories: ReadonlySet<string>
  /** ExternalArtifact id → the generator alias naming this repository and the artifact's rules. */
  readonly artifacts: ReadonlyMap<string, ArtifactEntry>
}

interface ArtifactEntry {
  readonly alias: string
  /** `<namespace>/<name>` of the GitRepository the alias names. */
  readonly source: string
  readonly artifact: ArtifactSpec
  /** Its rules copy from other sources too: we cannot lay it out. */
  readonly foreign: boolean
}

function repositoryIdentity(options: RenderChangeOptions, ...scans: (FluxScan | undefined)[]): Identity {
  const gitRepositories = new Set<string>()
  if (options.gitRepository) gitRepositories.add(options.gitRepository.includes('/') ? options.gitRepository : `${FLUX_NAMESPACE}/${options.gitRepository}`)
  const key = options.repositoryUrl ? repositoryKey(options.repositoryUrl) : undefined
  for (const scan of scans)
    for (const g of scan?.gitRepositories ?? []) if (key !== undefined && repositoryKey(g.value.url) === key) gitRepositories.add(g.value.id)
  // Flux bootstrap names the repository holding the cluster's tree flux-system/flux-system.
  if (gitRepositories.size === 0) gitRepositories.add(`${FLUX_NAMESPACE}/${FLUX_NAMESPACE}`)
  const artifacts = new Map<string, ArtifactEntry>()
  for (const scan of scans) {
    for (const { value: generator } of scan?.generators ?? []) {
      const aliases = [...generator.sources].filter(([, s]) => s.kind === 'GitRepository' && gitRepositories.has(`${s.namespace}/${s.name}`)).map(([a]) => a)
      const alias = aliases[0]
      if (alias === undefined) continue
      for (const artifact of generator.artifacts) {
        const foreign = artifact.copy.some((rule) => !aliases.some((a) => rule.from.startsWith(`@${a}/`)))
        const source = generator.sources.get(alias)
        const id = source === undefined ? `${FLUX_NAMESPACE}/${FLUX_NAMESPACE}` : `${source.namespace}/${source.name}`
        if (!artifacts.has(artifact.id)) artifacts.set(artifact.id, { alias, source: id, artifact, foreign })
      }
    }
  }
  return { gitRepositories, artifacts }
}

function readsRepository(k: FluxKustomization, identity: Identity): boolean {
  const id = `${k.sourceRef.namespace}/${k.sourceRef.name}`
  if (k.sourceRef.kind === 'GitRepository') return identity.gitRepositories.has(id)
  if (k.sourceRef.kind === 'ExternalArtifact') return identity.artifacts.has(id)
  return false
}

function appliesRepository(scan: FluxScan, identity: Identity): boolean {
  return scan.kustomizations.some((k) => readsRepository(k.value, identity))
}

/** Paths the two commits hold differently (added, deleted or changed). */
function changedPaths(a: Snapshot, b: Snapshot): string[] {
  const out = new Set<string>()
  for (const path of a.paths) if (a.object(path) !== b.object(path)) out.add(path)
  for (const path of b.paths) if (!a.isFile(path)) out.add(path)
  return [...out]
}

const YAML_GLOBS = ['*.yaml', '*.yml']

/** One commit's files (read lazily), its written Flux objects and the builds' work directories. */
class Commit {
  private readonly artifacts = new Map<string, SourceTree>()
  private readonly treeFiles = new WeakMap<SourceTree, TreeFiles>()
  private builds = 0
  readonly directory: string
  private readonly gitTrees = new Map<string, SourceTree>()
  readonly snapshot: Snapshot
  readonly scan: FluxScan
  /** The `.sourceignore` files, path → text. */
  private readonly ignoreFiles: ReadonlyMap<string, string>
  private readonly reader: TreeReader

  private constructor(reader: TreeReader, directory: string, snapshot: Snapshot, scan: FluxScan, ignoreFiles: ReadonlyMap<string, string>) {
    this.reader = reader
    this.directory = directory
    this.snapshot = snapshot
    this.scan = scan
    this.ignoreFiles = ignoreFiles
  }

  /** Kustomization and `.sourceignore` files: every closure and artifact reads them. */
  private static async structure(snapshot: Snapshot): Promise<Map<string, string>> {
    const ignores = snapshot.paths.filter((p) => posix.basename(p) === SOURCE_IGNORE_FILE)
    await snapshot.prefetch([...snapshot.paths.filter(isKustomizationFile), ...ignores])
    return new Map(await Promise.all(ignores.map(async (p) => [p, (await snapshot.text(p)) ?? ''] as const)))
  }

  /** Head: `marked` (git grep) are the files that can hold Flux objects; only those and kustomization files are read. */
  static async open(reader: TreeReader, snapshot: Snapshot, marked: readonly string[], directory: string): Promise<Commit> {
    const [scan, ignoreFiles] = await Promise.all([scanFluxObjects(snapshot, marked), Commit.structure(snapshot)])
    return new Commit(reader, directory, snapshot, scan, ignoreFiles)
  }

  /** Base: head's Flux scan for every file the range left alone; the files it changed are scanned again. */
  static async derive(head: Commit, snapshot: Snapshot, directory: string): Promise<Commit> {
    const touched = new Set(changedPaths(snapshot, head.snapshot))
    const [rescanned, ignoreFiles] = await Promise.all([
      scanFluxObjects(
        snapshot,
        snapshot.paths.filter((p) => touched.has(p)),
      ),
      Commit.structure(snapshot),
    ])
    const kept = <T>(list: readonly Written<T>[], fresh: readonly Written<T>[]): Written<T>[] => [...list.filter((w) => !touched.has(w.file)), ...fresh]
    const scan: FluxScan = {
      kustomizations: kept(head.scan.kustomizations, rescanned.kustomizations),
      gitRepositories: kept(head.scan.gitRepositories, rescanned.gitRepositories),
      generators: kept(head.scan.generators, rescanned.generators),
    }
    return new Commit(head.reader, directory, snapshot, scan, ignoreFiles)
  }

  /** The tree a Kustomization's source holds at this commit. */
  source(k: FluxKustomization, identity: Identity): SourceTree | undefined {
    const id = `${k.sourceRef.namespace}/${k.sourceRef.name}`
    if (k.sourceRef.kind === 'GitRepository') return this.gitRepositoryTree(id)
    const entry = identity.artifacts.get(id)
    if (entry === undefined) return undefined
    let tree = this.artifacts.get(id)
    if (tree === undefined) {
      tree = artifactTree(this.gitRepositoryTree(entry.source).view, entry.artifact, entry.alias)
      this.artifacts.set(id, tree)
    }
    return tree
  }

  /** The repository as the GitRepository `id`'s artifact holds it: without what source-controller ignores. */
  gitRepositoryTree(id: string): SourceTree {
    let tree = this.gitTrees.get(id)
    if (tree === undefined) {
      const filter = artifactFilter(this.ignoreFiles, this.scan.gitRepositories.find((g) => g.value.id === id)?.value.ignore)
      // Asked for the same paths again and again (every decision checks the changed and Flux files).
      const known = new Map<string, boolean>()
      const keep = (path: string): boolean => {
        let kept = known.get(path)
        if (kept === undefined) {
          kept = filter(path)
          known.set(path, kept)
        }
        return kept
      }
      tree = { view: filteredView(this.snapshot, keep), toRepository: (path) => path, fromRepository: (path) => (keep(path) ? [path] : []) }
      this.gitTrees.set(id, tree)
    }
    return tree
  }

  /** How source-controller filters this commit for each GitRepository: a change here changes every artifact. */
  ignoreRules(): string {
    return JSON.stringify([[...this.ignoreFiles].sort(), this.scan.gitRepositories.map((g) => [g.value.id, g.value.ignore ?? null]).sort()])
  }

  /** Each tree's files read and indexed once for provenance. */
  filesOf(tree: SourceTree): TreeFiles {
    let files = this.treeFiles.get(tree)
    if (files === undefined) {
      files = new TreeFiles(tree.view)
      this.treeFiles.set(tree, files)
    }
    return files
  }

  /** YAML files at this commit whose text matches `pattern` (an extended regular expression). */
  grep(pattern: string): Promise<string[]> {
    return this.reader.grep(this.snapshot.sha, pattern, YAML_GLOBS)
  }

  newWorkDirectory(): string {
    this.builds += 1
    return join(this.directory, 'builds', String(this.builds))
  }
}

function isKustomizationFile(path: string): boolean {
  return (KUSTOMIZATION_FILES as readonly string[]).includes(posix.basename(path))
}

interface Build {
  readonly objects: readonly RenderedObject[]
  readonly problems: readonly RenderProblem[]
  readonly notRendered: readonly { kustomization: string; reason: string }[]
  /** Flux Kustomizations this build defines (the chain). */
  readonly children: readonly { k: FluxKustomization; origin: Provenance | undefined }[]
}

interface RenderContext {
  readonly options: RenderChangeOptions
  readonly identity: Identity
  readonly changed: ReadonlySet<string>
  /** Builds of Kustomizations the range did not touch, by id and spec: the same at both commits, built once. */
  readonly shared: Map<string, Promise<Build>>
  /** kustomize's output by commit (or none, when untouched) and spec, for the range: see kustomizeOutput. */
  readonly outputs: Map<string, Promise<BuildOutput>>
  /** Builds started ahead of their level; awaited before the work directory goes. */
  readonly speculative: Promise<void>[]
  /** The range changed what source-controller leaves out (`.sourceignore`, spec.ignore): every artifact may differ. */
  readonly ignoreChanged: boolean
  /** Kustomizations whose output the range can have changed, at either commit. */
  readonly touched: Set<string>
  /** Does a file the range changed (at either commit) mention this text? */
  readonly changedMention: (text: string) => Promise<boolean>
  /** Kustomization files parsed, by text: both commits hold most of them alike. */
  readonly parsed: Map<string, unknown>
  /** Bounds the kustomize builds running at once, across both commits. */
  readonly limit: <R>(fn: () => Promise<R>) => Promise<R>
}

async function renderCommit(commit: Commit, ctx: RenderContext): Promise<RenderedRepository> {
  const objects: RenderedObject[] = []
  const problems: RenderProblem[] = []
  const notRendered: { kustomization: string; reason: string }[] = []
  const seen = new Set<string>()
  const suspended = new Set<string>()
  const written = commit.scan.kustomizations.filter((k) => readsRepository(k.value, ctx.identity))
  const closures = new Map<string, Promise<Closure | undefined>>()
  const closure = (k: FluxKustomization): Promise<Closure | undefined> => {
    const key = specKey(k)
    let found = closures.get(key)
    if (found === undefined) {
      found = (async () => {
        const tree = commit.source(k, ctx.identity)
        if (tree === undefined) return undefined
        const components = Array.isArray(k.spec.components) ? k.spec.components.filter((c): c is string => typeof c === 'string') : []
        return closureOf(tree.view, k.path, components, ctx.parsed)
      })()
      closures.set(key, found)
    }
    return found
  }

  let frontier: { k: FluxKustomization; file: string | undefined }[]
  const root = ctx.options.clusterRoot === undefined ? undefined : posixPath(ctx.options.clusterRoot)
  if (root !== undefined) {
    const declared = written.find((w) => w.value.path === root)
    frontier = [{ k: declared?.value ?? syntheticRoot(root, ctx.identity), file: declared?.file }]
  } else {
    // Roots: written Kustomizations no other written Kustomization's closure holds.
    const holds = await Promise.all(written.map(async (w) => ({ w, c: await closure(w.value) })))
    frontier = written
      .filter((w) => !holds.some((h) => h.w !== w && h.c !== undefined && h.w.value.sourceRef.kind === 'GitRepository' && inClosure(h.c, w.file)))
      .map((w) => ({ k: w.value, file: w.file }))
  }

  const producers = new Map<string, Producer>()
  type Decision = { k: FluxKustomization; build?: { tree: SourceTree; closure: Closure; touched: boolean }; reason?: string }
  const decide = async (k: FluxKustomization, file: string | undefined): Promise<Decision> => {
    // Most Kustomizations of a commit are untouched: one whose input stays inside its directory
    // is known to be without parsing a kustomization file.
    const early = commit.source(k, ctx.identity)
    if (
      early !== undefined &&
      ctx.options.scope !== 'all' &&
      !ctx.ignoreChanged &&
      !(file !== undefined && ctx.changed.has(file)) &&
      (await staysInside(k, early))
    ) {
      const inside = (p: string): boolean => early.fromRepository(p).some((t) => t.startsWith(`${k.path}/`))
      const untouched = ![...ctx.changed].some(inside) && !written.some((w) => w.value.id !== k.id && inside(w.file))
      if (untouched && !(await substitutesChanged(k, objects, producers, commit, ctx))) return { k }
    }
    const c = await closure(k)
    const tree = commit.source(k, ctx.identity)
    if (c === undefined || tree === undefined) return { k, reason: 'its ExternalArtifact is not one this repository produces' }
    const entry = k.sourceRef.kind === 'ExternalArtifact' ? ctx.identity.artifacts.get(`${k.sourceRef.namespace}/${k.sourceRef.name}`) : undefined
    if (entry?.foreign) return { k, reason: 'its ExternalArtifact also copies files from sources other than this repository' }
    const touched =
      ctx.options.scope === 'all' ||
      ctx.ignoreChanged ||
      (file !== undefined && ctx.changed.has(file)) ||
      [...ctx.changed].some((p) => tree.fromRepository(p).some((t) => inClosure(c, t))) ||
      (await substitutesChanged(k, objects, producers, commit, ctx))
    if (touched) ctx.touched.add(k.id)
    producers.set(k.id, { file, tree, closure: c })
    const definesOthers = written.some((w) => w.value.id !== k.id && tree.fromRepository(w.file).some((t) => inClosure(c, t)))
    if (!touched && !definesOthers) return { k }
    return { k, build: { tree, closure: c, touched } }
  }

  while (frontier.length > 0) {
    const level = frontier.filter(({ k }) => !seen.has(k.id) && (seen.add(k.id), true))
    for (const { k } of level) if (k.spec.suspend === true) suspended.add(k.id)
    frontier = []
    const decisions = await Promise.all(level.map(({ k, file }) => decide(k, file)))
    const builds = decisions.map((d) => {
      if (d.build === undefined) return undefined
      const key = specKey(d.k)
      return { ...d.build, k: d.k, key, reused: d.build.touched ? undefined : ctx.shared.get(key) }
    })
    // Everything this level's builds read, from git in one batch.
    const prefetched = Promise.all(builds.map((b) => (b === undefined || b.reused ? undefined : b.tree.view.prefetch(filesIn(b.tree.view, b.closure)))))
    // Registered before any await: the other commit, rendering alongside, reuses what is started here.
    const started = builds.map((b) => {
      if (b === undefined) return undefined
      if (b.reused) return b.reused
      const build = prefetched.then(() => buildKustomization(commit, b.k, b.tree, b.closure, objects, ctx, b.touched))
      if (!b.touched) ctx.shared.set(b.key, build)
      return build
    })
    // The Kustomizations these builds will define are written in their closures: start building
    // those as written while the parents build. A child whose rendered spec differs (a parent's
    // patch, substitution or prefix) is built again when its level comes; kustomize's output is
    // all that is taken early, Flux's layer always runs in order.
    for (const w of written) {
      if (seen.has(w.value.id)) continue
      if (!builds.some((b) => b !== undefined && b.tree.fromRepository(w.file).some((t) => inClosure(b.closure, t)))) continue
      ctx.speculative.push(
        // After this level's own builds have their place in the queue.
        Promise.all([decide(w.value, w.file), prefetched]).then(async ([d]) => {
          if (d.build === undefined || (d.build.closure.remote.length > 0 && ctx.options.fetchRemote !== true) || !d.build.tree.view.isDirectory(d.k.path))
            return
          await kustomizeOutput(commit, d.k, d.build.tree, d.build.closure, ctx, d.build.touched)
        }),
      )
    }
    const built = await Promise.all(started)
    const results = decisions.map((d, i) => ({ k: d.k, build: built[i], reason: d.reason }))
    for (const { k, build, reason } of results) {
      if (reason !== undefined) notRendered.push({ kustomization: k.id, reason })
      if (build === undefined) continue
      objects.push(...build.objects)
      problems.push(...build.problems)
      notRendered.push(...build.notRendered)
      for (const child of build.children) {
        if (!seen.has(child.k.id) && readsRepository(child.k, ctx.identity)) frontier.push({ k: child.k, file: child.origin?.file })
      }
    }
  }
  // Kustomizations written in the repository but reached by no chain from the root are not applied.
  const kustomizations = [...seen].sort()
  return { objects, problems, notRendered, kustomizations, suspended: [...suspended].sort() }
}

function syntheticRoot(path: string, identity: Identity): FluxKustomization {
  const source = [...identity.gitRepositories][0] ?? `${FLUX_NAMESPACE}/${FLUX_NAMESPACE}`
  const [namespace = FLUX_NAMESPACE, name = FLUX_NAMESPACE] = source.split('/')
  return {
    id: `${FLUX_NAMESPACE}/${FLUX_NAMESPACE}`,
    namespace: FLUX_NAMESPACE,
    name: FLUX_NAMESPACE,
    sourceRef: { kind: 'GitRepository', name, namespace },
    path,
    spec: { path: `./${path}`, sourceRef: { kind: 'GitRepository', name, namespace } },
  }
}

function posixPath(path: string): string {
  return posix
    .normalize(path.replace(/\\/g, '/'))
    .replace(/^\.\/?|\/$/g, '')
    .replace(/^\.$/, '')
}

async function buildKustomization(
  commit: Commit,
  k: FluxKustomization,
  tree: SourceTree,
  closure: Closure,
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
  touched: boolean,
): Promise<Build> {
  const problem = (message: string, where?: Provenance): Build => ({
    objects: [],
    problems: [{ kustomization: k.id, path: k.path === '' ? './' : `./${k.path}`, message, ...(where ?? {}) }],
    notRendered: [],
    children: [],
  })
  if (closure.remote.length > 0 && ctx.options.fetchRemote !== true) {
    const first = boundedError(closure.remote[0] ?? '')
    return {
      objects: [],
      problems: [],
      notRendered: [{ kustomization: k.id, reason: `it uses remote bases (${first}), which plan-only runs do not fetch` }],
      children: [],
    }
  }
  const shown = k.path === '' ? './' : `./${k.path}`
  if (!tree.view.isDirectory(k.path)) return problem(`Flux Kustomization ${k.id}: spec.path ${shown} does not exist in the source; fix spec.path.`)
  const built = await kustomizeOutput(commit, k, tree, closure, ctx, touched)
  if ('problem' in built) return problem(built.problem(k.id), built.where)
  return renderedObjects(commit, k, tree, closure, outputDocuments(built.output), earlier, ctx)
}

/** The problem names the Flux Kustomization given: with a cache, one build serves Kustomizations of several clusters. */
type BuildOutput = { output: string } | { problem: (id: string) => string; where?: Provenance }

/**
 * kustomize's output for `k` at this commit, built once: a build the range did not touch is the
 * same at both commits and shared between them; with a cache, Kustomizations of other calls
 * (other cluster roots) that build the same share it too. Bounded by the run's kustomize concurrency.
 */
function kustomizeOutput(commit: Commit, k: FluxKustomization, tree: SourceTree, closure: Closure, ctx: RenderContext, touched: boolean): Promise<BuildOutput> {
  const key = `${touched ? commit.snapshot.sha : ''}\0${ctx.options.cache === undefined ? specKey(k) : buildKey(k, ctx)}`
  let output = ctx.outputs.get(key)
  if (output === undefined) {
    output = ctx.limit(() => writeAndBuild(commit, k, tree, closure, ctx))
    output.catch(() => {})
    ctx.outputs.set(key, output)
  }
  return output
}

/** A Flux Kustomization by id and spec, keys in a stable order (a rendered one may list them differently). */
function specKey(k: FluxKustomization): string {
  const sorted = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sorted)
      : isRecord(value)
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, sorted(value[key])]),
          )
        : value
  return `${k.id}\0${JSON.stringify(sorted(k.spec))}`
}

/**
 * What kustomize's output for `k` depends on beyond the commit: its source, its path and the
 * fields Flux writes into the kustomization.yaml (fluxKustomizationText). Not its name, nor
 * postBuild: clusters sharing a path share the build, and each substitutes its own variables.
 */
function buildKey(k: FluxKustomization, ctx: RenderContext): string {
  const { targetNamespace, namePrefix, nameSuffix, patches, components, images } = k.spec
  const layer = JSON.stringify({ targetNamespace, namePrefix, nameSuffix, patches, components, images })
  const source = `${k.sourceRef.kind}/${k.sourceRef.namespace}/${k.sourceRef.name}`
  return [source, k.path, layer, ctx.options.fetchRemote === true].join('\0')
}

/** Writes the closure into a work directory, with Flux's kustomization.yaml, and runs kustomize there. */
async function writeAndBuild(commit: Commit, k: FluxKustomization, tree: SourceTree, closure: Closure, ctx: RenderContext): Promise<BuildOutput> {
  const shown = k.path === '' ? './' : `./${k.path}`
  const work = commit.newWorkDirectory()
  await writeFiles(tree.view, work, filesIn(tree.view, closure))
  const dir = join(work, k.path)
  const existingName = kustomizationFileIn(tree.view, k.path)
  let existing: string | undefined
  let generated: string[] = []
  try {
    if (existingName !== undefined) existing = await readFile(join(work, existingName), 'utf8')
    else generated = await generatedResources(dir)
  } catch {
    return { problem: (id) => `Flux Kustomization ${id}: spec.path ${shown} does not exist in the source; fix spec.path.` }
  }
  const target = join(work, existingName ?? posix.join(k.path, 'kustomization.yaml'))
  try {
    const text = fluxKustomizationText(existing, generated, k)
    await writeFile(target, text)
  } catch (error) {
    return {
      problem: (id) =>
        `Flux Kustomization ${id}: ${existingName ?? 'kustomization.yaml'} in ${shown} is not valid YAML (${boundedError(String(error))}); fix the file.`,
      ...(existingName ? { where: { file: tree.toRepository(existingName) ?? existingName, line: 1 } } : {}),
    }
  }
  const result = await ctx.options.kustomize.build(dir)
  if (!result.ok) {
    const message = result.error.split(`${work}/`).join('').split(work).join('.')
    return { problem: (id) => `Flux Kustomization ${id} (path ${shown}) does not build: ${message}` }
  }
  return { output: result.output }
}

async function renderedObjects(
  commit: Commit,
  k: FluxKustomization,
  tree: SourceTree,
  closure: Closure,
  documents: readonly string[],
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
): Promise<Build> {
  const objects: RenderedObject[] = []
  const problems: RenderProblem[] = []
  const children: Build['children'][number][] = []
  const shown = k.path === '' ? './' : `./${k.path}`
  const vars = await substitutionVariables(commit, k, earlier, ctx)
  if (vars.problem) problems.push({ kustomization: k.id, path: shown, message: vars.problem })
  const unresolved = new Set<string>()
  const files = commit.filesOf(tree)
  let firstUnresolved: Provenance | undefined
  for (const text of documents) {
    // kustomize-controller substitutes on each object's YAML as kyaml writes it, which is what
    // kustomize printed: substitute that text and parse once. The opt-out needs the object read
    // first; those few take the long way below.
    const optOut = text.includes(SUBSTITUTE_KEY)
    const early = vars.values !== undefined && !optOut && text.includes('$') ? substitute(text, vars.values) : undefined
    let object = parse(early?.text ?? text)
    const invalid = object === undefined && early !== undefined
    if (invalid) object = parse(text)
    if (object === undefined) continue
    const meta = isRecord(object.metadata) ? object.metadata : {}
    const annotations = isRecord(meta.annotations) ? meta.annotations : {}
    const labels = isRecord(meta.labels) ? meta.labels : {}
    const origin = parseOrigin(typeof annotations[ORIGIN_ANNOTATION] === 'string' ? annotations[ORIGIN_ANNOTATION] : undefined)
    let provenance: Provenance | undefined
    let keyOrigins: Record<string, Provenance> = {}
    const kind = typeof object.kind === 'string' ? object.kind : ''
    const name = typeof meta.name === 'string' ? meta.name : ''
    let fields: Record<string, Provenance> | undefined
    if (origin?.kind === 'file') {
      const path = posix.normalize(posix.join(k.path, origin.path))
      const file = tree.toRepository(path)
      if (file !== undefined) provenance = { file, line: await documentLine(files, path, kind, name) }
      // A spec change points at the field edited; the source document's name is before any prefix or suffix.
      if (file !== undefined && (kind === 'HelmRelease' || kind === 'OCIRepository' || kind === 'HelmChart')) {
        const written = await specOrigins(files, closure, path, kind, writtenName(name, k))
        fields = Object.fromEntries(
          Object.entries(written).flatMap(([field, at]) => {
            const repositoryFile = tree.toRepository(at.file)
            return repositoryFile === undefined ? [] : [[field, { file: repositoryFile, line: at.line }]]
          }),
        )
      }
    } else if (origin?.kind === 'generator' && (kind === 'ConfigMap' || kind === 'Secret')) {
      const found = await generatorProvenance(files, closure, posix.normalize(posix.join(k.path, origin.configuredIn)), kind, name)
      if (found) {
        const map = (p: Provenance): Provenance | undefined => {
          const file = tree.toRepository(p.file)
          return file === undefined ? undefined : { file, line: p.line }
        }
        provenance = map(found.origin)
        keyOrigins = Object.fromEntries(Object.entries(found.keys).flatMap(([key, p]) => (map(p) ? [[key, map(p) as Provenance]] : [])))
      }
    }
    object = withoutOrigin(object)
    const substituting =
      optOut && vars.values !== undefined && text.includes('$') && labels[SUBSTITUTE_KEY] !== 'disabled' && annotations[SUBSTITUTE_KEY] !== 'disabled'
    if (early !== undefined || substituting) {
      const result = early ?? substitute(stringifyObject(object), vars.values ?? new Map())
      for (const v of result.unresolved) unresolved.add(v)
      if (result.unresolved.length > 0 || result.errors.length > 0) firstUnresolved ??= provenance
      for (const error of result.errors.slice(0, 1))
        problems.push({ kustomization: k.id, path: shown, message: `postBuild substitution: ${boundedError(error)}`, ...(provenance ?? {}) })
      const substituted = early !== undefined ? (invalid ? undefined : object) : parse(result.text)
      if (substituted === undefined) {
        problems.push({
          kustomization: k.id,
          path: shown,
          message: `postBuild substitution makes ${kind}/${name} invalid YAML; quote the variable's use or fix its value.`,
          ...(provenance ?? {}),
        })
        continue
      }
      object = substituted
    }
    object = withCommonMetadata(object, k.spec)
    const finalMeta = isRecord(object.metadata) ? object.metadata : {}
    const rendered: RenderedObject = {
      apiVersion: typeof object.apiVersion === 'string' ? object.apiVersion : '',
      kind,
      namespace: typeof finalMeta.namespace === 'string' ? finalMeta.namespace : undefined,
      name: typeof finalMeta.name === 'string' ? finalMeta.name : name,
      object,
      origin: provenance,
      keyOrigins,
      ...(fields === undefined ? {} : { specOrigins: fields }),
      kustomization: k.id,
    }
    objects.push(rendered)
    const child = fluxKustomization(object)
    if (child) children.push({ k: child, origin: provenance })
  }
  if (unresolved.size > 0) {
    const names = [...unresolved].slice(0, 10).join(', ')
    const more = unresolved.size > 10 ? ` and ${unresolved.size - 10} more` : ''
    problems.push({
      kustomization: k.id,
      path: shown,
      message: `postBuild substitution: no value for ${names}${more} in spec.postBuild.substitute or the substituteFrom objects found; left unsubstituted (add the values, a \${var:=default}, or connect to the cluster).`,
      ...(firstUnresolved ?? {}),
    })
  }
  return { objects, problems, notRendered: [], children }
}

/**
 * Whether a build of `k` reads only files under its own directory: Flux adds no components and
 * no kustomization file there names a path with `..`, a URL or an absolute path.
 */
async function staysInside(k: FluxKustomization, tree: SourceTree): Promise<boolean> {
  if (k.path === '' || (Array.isArray(k.spec.components) && k.spec.components.length > 0)) return false
  const prefix = `${k.path}/`
  for (const path of tree.view.paths) {
    if (!path.startsWith(prefix) || !isKustomizationFile(path)) continue
    const text = await tree.view.text(path)
    if (text === undefined || /\.\.|:\/\/|git@|\?ref=|^\s*-?\s*\/|:\s*\//m.test(text)) return false
  }
  return true
}

/** A Kustomization as decided at one commit: what the objects it renders came from. */
interface Producer {
  readonly file: string | undefined
  readonly tree: SourceTree
  readonly closure: Closure
}

/**
 * A Kustomization's postBuild substitution changed with the range when an object it substitutes
 * from did: one rendered earlier whose own file, value files, kustomization files or patches the
 * range changed (or whose Kustomization's definition it changed), or one written in a file the
 * range changed. Values from the cluster are not the commit's.
 */
async function substitutesChanged(
  k: FluxKustomization,
  earlier: readonly RenderedObject[],
  producers: ReadonlyMap<string, Producer>,
  commit: Commit,
  ctx: RenderContext,
): Promise<boolean> {
  const postBuild = isRecord(k.spec.postBuild) ? k.spec.postBuild : undefined
  const refs = Array.isArray(postBuild?.substituteFrom) ? postBuild.substituteFrom.filter(isRecord) : []
  for (const ref of refs) {
    if ((ref.kind !== 'ConfigMap' && ref.kind !== 'Secret') || typeof ref.name !== 'string') continue
    const rendered = earlier.find((o) => o.kind === ref.kind && o.name === ref.name && (o.namespace ?? FLUX_NAMESPACE) === k.namespace)
    if (rendered === undefined) {
      if (await ctx.changedMention(ref.name)) return true
      continue
    }
    const producer = producers.get(rendered.kustomization)
    if (producer === undefined || !ctx.touched.has(rendered.kustomization)) continue
    if (producer.file !== undefined && ctx.changed.has(producer.file)) return true
    const files = commit.filesOf(producer.tree)
    const patches = (await Promise.all(producer.closure.kustomizations.map((f) => patchFiles(files, f)))).flat()
    const influences = new Set(
      [rendered.origin?.file, ...Object.values(rendered.keyOrigins).map((p) => p.file)]
        .filter((f): f is string => f !== undefined)
        .concat([...producer.closure.kustomizations, ...patches].map((p) => producer.tree.toRepository(p) ?? p)),
    )
    if ([...ctx.changed].some((c) => influences.has(c))) return true
  }
  return false
}

/** Whether any of `paths` (YAML files) mentions a text at any of the snapshots; each text asked once. */
function mentionsIn(paths: readonly string[], snapshots: readonly (Snapshot | undefined)[]): (text: string) => Promise<boolean> {
  const yaml = paths.filter((p) => YAML_FILE.test(p))
  const texts = async (): Promise<string[]> => {
    const read = await Promise.all(snapshots.flatMap((s) => (s === undefined ? [] : yaml.map((p) => s.text(p)))))
    return read.filter((t): t is string => t !== undefined)
  }
  let all: Promise<string[]> | undefined
  const answers = new Map<string, Promise<boolean>>()
  return (text) => {
    let answer = answers.get(text)
    if (answer === undefined) {
      all ??= texts()
      answer = all.then((list) => list.some((t) => t.includes(text)))
      answers.set(text, answer)
    }
    return answer
  }
}

/** An object's name as written, before the Flux Kustomization's namePrefix/nameSuffix. */
function writtenName(name: string, k: FluxKustomization): string {
  const prefix = typeof k.spec.namePrefix === 'string' ? k.spec.namePrefix : ''
  const suffix = typeof k.spec.nameSuffix === 'string' ? k.spec.nameSuffix : ''
  const bare = name.startsWith(prefix) ? name.slice(prefix.length) : name
  return suffix !== '' && bare.endsWith(suffix) ? bare.slice(0, -suffix.length) : bare
}

const SUBSTITUTE_KEY = 'kustomize.toolkit.fluxcd.io/substitute'

/**
 * The variables a Kustomization substitutes: substituteFrom objects in order (later win), then
 * spec.postBuild.substitute. Undefined values when there is no postBuild (no substitution).
 */
async function substitutionVariables(
  commit: Commit,
  k: FluxKustomization,
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
): Promise<{ values: Map<string, string> | undefined; problem?: string }> {
  const postBuild = isRecord(k.spec.postBuild) ? k.spec.postBuild : undefined
  if (postBuild === undefined) return { values: undefined }
  const values = new Map<string, string>()
  const missing: string[] = []
  for (const ref of Array.isArray(postBuild.substituteFrom) ? postBuild.substituteFrom.filter(isRecord) : []) {
    const kind = ref.kind === 'Secret' ? 'Secret' : ref.kind === 'ConfigMap' ? 'ConfigMap' : undefined
    const name = typeof ref.name === 'string' ? ref.name : undefined
    if (kind === undefined || name === undefined) continue
    const data = (await repositoryValues(commit, earlier, kind, k.namespace, name)) ?? (await ctx.options.cluster?.(kind, k.namespace, name))
    if (data === undefined) {
      if (ref.optional !== true) missing.push(`${kind}/${k.namespace}/${name}`)
      continue
    }
    for (const [key, value] of Object.entries(data)) values.set(key, value.replace(/\n/g, ''))
  }
  if (isRecord(postBuild.substitute))
    for (const [key, value] of Object.entries(postBuild.substitute)) if (typeof value === 'string') values.set(key, value.replace(/\n/g, ''))
  const invalid = [...values.keys()].filter((v) => !VARIABLE_NAME.test(v))
  for (const v of invalid) values.delete(v)
  const problems: string[] = []
  if (missing.length > 0)
    problems.push(
      `postBuild.substituteFrom names ${missing.join(', ')}, which is neither in the repository nor readable from a cluster; its variables stay unresolved (connect to the cluster, or mark it optional)`,
    )
  if (invalid.length > 0)
    problems.push(`variable names ${invalid.slice(0, 5).join(', ')} are invalid (Flux refuses them); rename them to match ${VARIABLE_NAME.source}`)
  return { values, ...(problems.length > 0 ? { problem: `${problems.join('; ')}.` } : {}) }
}

/** A ConfigMap/Secret's data as Flux would read it, from what is already rendered, else from the files. */
async function repositoryValues(
  commit: Commit,
  earlier: readonly RenderedObject[],
  kind: 'ConfigMap' | 'Secret',
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  const rendered = earlier.find((o) => o.kind === kind && o.name === name && (o.namespace ?? FLUX_NAMESPACE) === namespace)
  if (rendered) return dataOf(rendered.object)
  // git grep narrows the search to the files naming it; only those are read.
  const escaped = name.replace(/[.]/g, '\\.')
  const files = (await commit.grep(escaped)).filter((f) => YAML_FILE.test(f))
  await commit.snapshot.prefetch(files)
  for (const file of files) {
    for (const object of await objectsIn(commit.snapshot, file, new RegExp(`\\b${kind}\\b[\\s\\S]*\\b${escaped}\\b`))) {
      const meta = isRecord(object.metadata) ? object.metadata : {}
      if (object.kind === kind && meta.name === name && (meta.namespace ?? namespace) === namespace) return dataOf(object)
    }
  }
  return undefined
}

function dataOf(object: Readonly<Record<string, unknown>>): Record<string, string> {
  const out: Record<string, string> = {}
  if (isRecord(object.data)) {
    for (const [key, value] of Object.entries(object.data)) {
      if (typeof value !== 'string') continue
      out[key] = object.kind === 'Secret' ? Buffer.from(value, 'base64').toString('utf8') : value
    }
  }
  if (object.kind === 'Secret' && isRecord(object.stringData))
    for (const [key, value] of Object.entries(object.stringData)) if (typeof value === 'string') out[key] = value
  return out
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const doc = parseDocument(text, { uniqueKeys: false })
    if (doc.errors.length > 0) return undefined
    const value: unknown = doc.toJS()
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

function stringifyObject(object: Readonly<Record<string, unknown>>): string {
  return stringify(object, { lineWidth: 0 })
}

function withoutOrigin(object: Record<string, unknown>): Record<string, unknown> {
  const meta = isRecord(object.metadata) ? object.metadata : undefined
  if (meta === undefined || !isRecord(meta.annotations) || !(ORIGIN_ANNOTATION in meta.annotations)) return object
  const { [ORIGIN_ANNOTATION]: _origin, ...annotations } = meta.annotations
  const { annotations: _all, ...rest } = meta
  return { ...object, metadata: Object.keys(annotations).length > 0 ? { ...rest, annotations } : rest }
}
