// renderChange: a commit range's repository as Flux applies it, at base and at head.
//
// Contract (the planner codes against this):
// - Input: a git reader (trees and blobs through one cat-file, and grep), the two commits, the files the range
//   changed (repository paths), how to recognise this repository (its URL, or the GitRepository
//   `<namespace>/<name>` naming it), the optional cluster root (`clusters/production`), and the
//   sandbox every build runs in (src/sandbox/: Flux's own kustomize code in WebAssembly, seeing only
//   the files of the build). Nothing is fetched: a build that needs a remote reference is reported
//   in `notRendered`, and the Kustomizations it defines locally are still followed; substituteFrom
//   values come from the repository and, when connected, from `cluster` (a port the caller fills).
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
//   Throws only for what the caller must fix (the renderer missing, git failing).

import { availableParallelism } from 'node:os'
import { posix } from 'node:path'
import type { Provenance, RenderedObject, RenderedRepository, RenderProblem } from '../core/rendered.ts'
import { limiter } from '../lib/concurrency.ts'
import type { ObjectSession } from '../git/reader.ts'
import { closureOf, filesIn, inClosure, type Closure } from './closure.ts'
import { changedPaths, Commit, isKustomizationFile, YAML_GLOBS } from './commit.ts'
import { buildKustomization, kustomizeOutput } from './flux-build.ts'
import { FLUX_NAMESPACE, isRecord, repositoryKey, type FluxKustomization } from './flux-objects.ts'
import type { ArtifactEntry, Build, Identity, Producer, RenderChangeOptions, RenderContext, TreeReader } from './render-context.ts'
import { FLUX_MARK, type FluxScan, type Written } from './scan.ts'
import { clusterTrees } from './cluster-trees.ts'
import type { ClusterSpec } from '../core/cluster-list.ts'
import { compareText } from '../lib/sort.ts'
import { BlobStore, Snapshot } from './snapshot.ts'
import type { SourceTree } from './source-tree.ts'
import { mentionsIn, substitutesChanged } from './substitution.ts'

export type { ClusterValues, RenderChangeOptions } from './render-context.ts'

export interface RenderedChange {
  readonly base: RenderedRepository
  readonly head: RenderedRepository
  /** The GitRepositories taken as this repository (`<namespace>/<name>`), and how they were found. */
  readonly source: { readonly gitRepositories: readonly string[]; readonly by: Identity['by'] }
}

/** No Flux Kustomization applies this repository at either commit: what the repository holds instead. */
export interface Unapplied {
  readonly unapplied: true
  /** Flux Kustomizations found at head (none of them reads this repository). */
  readonly kustomizations: number
  /** The GitRepositories defined at head: `<namespace>/<name>` and the URL they fetch (repository content). */
  readonly gitRepositories: readonly { readonly id: string; readonly url: string }[]
}

export function isRendered(result: RenderedChange | Unapplied): result is RenderedChange {
  return !('unapplied' in result)
}

const EMPTY: RenderedRepository = { objects: [], problems: [], notRendered: [], kustomizations: [] }

export async function renderChange(
  reader: TreeReader,
  options: RenderChangeOptions & { readonly cache?: RenderCache | undefined },
): Promise<RenderedChange | Unapplied> {
  const { cache } = options
  if (cache !== undefined) return renderRange(await cache.range(reader, options), options, cache.limit(options))
  const session = reader.openObjects()
  try {
    return await renderRange(await openRange(reader, session, options), options, concurrencyLimit(options))
  } finally {
    session.close()
  }
}

/** A range's two commits, read through one git session, and what renders of it share. */
interface OpenedRange {
  readonly head: Commit
  readonly base: Commit | undefined
  /** Paths the two commits hold differently. */
  readonly changed: readonly string[]
  /** kustomize's outputs: see kustomizeOutput. */
  readonly outputs: RenderContext['outputs']
  /** Kustomization files parsed, by text: both commits hold most of them alike. */
  readonly parsed: Map<string, unknown>
}

async function openRange(reader: TreeReader, session: ObjectSession, options: RenderChangeOptions): Promise<OpenedRange> {
  const store = new BlobStore(session)
  // Both listings and the search for Flux objects at once: each is a git process.
  const [headSnapshot, baseSnapshot, marked] = await Promise.all([
    Snapshot.open(session, store, options.head),
    options.base === undefined ? undefined : Snapshot.open(session, store, options.base),
    reader.grep(options.head, FLUX_MARK, YAML_GLOBS).then((files) => {
      // Flux objects: the renderer module loads and starts while the commits are read.
      if (files.length > 0) options.sandbox.warm()
      return files
    }),
  ])
  const head = await Commit.open(reader, headSnapshot, marked)
  const base = baseSnapshot === undefined ? undefined : await Commit.derive(head, baseSnapshot)
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
): Promise<RenderedChange | Unapplied> {
  const { head, base } = range
  const changed = new Set([...options.changedFiles, ...range.changed])
  const identity = repositoryIdentity(options, head.scan, base?.scan)
  if (!appliesRepository(head.scan, identity) && !(base && appliesRepository(base.scan, identity))) {
    const gitRepositories = head.scan.gitRepositories.map((g) => ({ id: g.value.id, url: g.value.url }))
    return { unapplied: true, kustomizations: head.scan.kustomizations.length, gitRepositories }
  }
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
  return { base: baseView, head: headView, source: { gitRepositories: [...identity.gitRepositories].sort(), by: identity.by } }
}

/** See renderChange's `cache`: the commits of a range opened once for several renders. It owns the git sessions until closed. */
export class RenderCache {
  private readonly ranges = new Map<string, Promise<OpenedRange>>()
  private readonly sessions: ObjectSession[] = []
  private bound: (<R>(fn: () => Promise<R>) => Promise<R>) | undefined

  /** The commits of a range, opened on first use. */
  range(reader: TreeReader, options: RenderChangeOptions): Promise<OpenedRange> {
    const key = `${options.base ?? ''}..${options.head}`
    let found = this.ranges.get(key)
    if (found === undefined) {
      const session = reader.openObjects()
      this.sessions.push(session)
      found = openRange(reader, session, options)
      found.catch(() => {})
      this.ranges.set(key, found)
    }
    return found
  }

  /** One bound on builds for every render sharing the cache (roots render side by side). */
  limit(options: RenderChangeOptions): <R>(fn: () => Promise<R>) => Promise<R> {
    this.bound ??= concurrencyLimit(options)
    return this.bound
  }

  /** Ends the git sessions. */
  async close(): Promise<void> {
    await Promise.allSettled(this.ranges.values())
    this.ranges.clear()
    for (const session of this.sessions.splice(0)) session.close()
  }
}

function repositoryIdentity(options: RenderChangeOptions, ...scans: (FluxScan | undefined)[]): Identity {
  const gitRepositories = new Set<string>()
  if (options.gitRepository) gitRepositories.add(options.gitRepository.includes('/') ? options.gitRepository : `${FLUX_NAMESPACE}/${options.gitRepository}`)
  const named = gitRepositories.size > 0
  const keys = new Set(options.repositoryUrls.map(repositoryKey))
  for (const scan of scans) for (const g of scan?.gitRepositories ?? []) if (keys.has(repositoryKey(g.value.url))) gitRepositories.add(g.value.id)
  const by: Identity['by'] = named ? 'name' : gitRepositories.size > 0 ? 'url' : 'bootstrap'
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
  return { gitRepositories, by, artifacts }
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
      found = closureAt(commit, k, ctx.identity, ctx.parsed)
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
    frontier = (await rootsOf(written, closure)).map((w) => ({ k: w.value, file: w.file }))
  }

  const producers = new Map<string, Producer>()
  type Decision = { k: FluxKustomization; build?: { tree: SourceTree; closure: Closure; touched: boolean }; reason?: string }
  const decide = async (k: FluxKustomization, file: string | undefined): Promise<Decision> => {
    // Most Kustomizations of a commit are untouched: one whose input stays inside its directory
    // is known to be without reading its closure.
    const early = commit.source(k, ctx.identity)
    if (
      early !== undefined &&
      ctx.options.scope !== 'all' &&
      !ctx.ignoreChanged &&
      !(file !== undefined && ctx.changed.has(file)) &&
      (await staysInside(k, early, ctx.parsed))
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
          if (d.build === undefined || !d.build.tree.view.isDirectory(d.k.path)) return
          await kustomizeOutput(commit, d.k, d.build.tree, d.build.closure, ctx, d.build.touched)
        }),
      )
    }
    const built = await withSiblingValues(await Promise.all(started), builds, commit, objects, ctx)
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

/**
 * A level's builds, those whose substituteFrom objects were found nowhere built again when a
 * sibling of the level rendered them (a config Kustomization generating the cluster's variables
 * beside the apps reading them: Flux reads them from the cluster once applied). kustomize's
 * output is reused: only Flux's post-build runs again.
 */
async function withSiblingValues(
  built: readonly (Build | undefined)[],
  builds: readonly ({ k: FluxKustomization; tree: SourceTree; closure: Closure; touched: boolean } | undefined)[],
  commit: Commit,
  earlier: readonly RenderedObject[],
  ctx: RenderContext,
): Promise<(Build | undefined)[]> {
  const level = built.flatMap((b) => b?.objects ?? [])
  return Promise.all(
    built.map(async (build, i) => {
      const b = builds[i]
      if (build?.absent === undefined || b === undefined) return build
      const found = build.absent.some((ref) => level.some((o) => `${o.kind}/${o.name}` === ref && (o.namespace ?? FLUX_NAMESPACE) === b.k.namespace))
      return found ? buildKustomization(commit, b.k, b.tree, b.closure, [...earlier, ...level], ctx, b.touched) : build
    }),
  )
}

/** The closure of `k`'s build at `commit` (its path and Flux's components); undefined when its source is not this repository's. */
async function closureAt(commit: Commit, k: FluxKustomization, identity: Identity, parsed: Map<string, unknown>): Promise<Closure | undefined> {
  const tree = commit.source(k, identity)
  if (tree === undefined) return undefined
  const components = Array.isArray(k.spec.components) ? k.spec.components.filter((c): c is string => typeof c === 'string') : []
  return closureOf(tree.view, k.path, components, parsed)
}

/** Roots: written Kustomizations no other written Kustomization's closure holds. */
async function rootsOf(
  written: readonly Written<FluxKustomization>[],
  closure: (k: FluxKustomization) => Promise<Closure | undefined>,
): Promise<Written<FluxKustomization>[]> {
  const holds = await Promise.all(written.map(async (w) => ({ w, c: await closure(w.value) })))
  return written.filter((w) => !holds.some((h) => h.w !== w && h.c !== undefined && h.w.value.sourceRef.kind === 'GitRepository' && inClosure(h.c, w.file)))
}

/**
 * The cluster trees of a range (see clusterTrees), found at head and at base without building
 * anything: a cluster removed by the range is still one whose deletion is planned.
 */
export async function clusterRoots(reader: TreeReader, options: RenderChangeOptions & { readonly cache: RenderCache }): Promise<ClusterSpec[]> {
  const range = await options.cache.range(reader, options)
  const identity = repositoryIdentity(options, range.head.scan, range.base?.scan)
  const found = await Promise.all(
    [range.head, range.base].map(async (commit) => {
      if (commit === undefined) return []
      const written = commit.scan.kustomizations.filter((k) => readsRepository(k.value, identity))
      const roots = await rootsOf(written, (k) => closureAt(commit, k, identity, range.parsed))
      return clusterTrees(roots, commit.scan.gitRepositories, identity.gitRepositories)
    }),
  )
  const byRoot = new Map(found.flat().map((c) => [c.root, c]))
  return [...byRoot.values()].sort((a, b) => compareText(a.root, b.root))
}

/**
 * Whether a build of `k` reads only files under its own directory: Flux adds no components and
 * every path its kustomization files name is plain, relative and stays below the file. Parsed,
 * never matched against a pattern (the files are repository content).
 */
async function staysInside(k: FluxKustomization, tree: SourceTree, parsed: Map<string, unknown>): Promise<boolean> {
  if (k.path === '' || (Array.isArray(k.spec.components) && k.spec.components.length > 0)) return false
  const prefix = `${k.path}/`
  for (const path of tree.view.paths) {
    if (!path.startsWith(prefix) || !isKustomizationFile(path)) continue
    const text = (await tree.view.text(path)) ?? ''
    const closure = await closureOf(singleFile(path, text), posix.dirname(path), [], parsed)
    if ([...closure.files].some((f) => !f.startsWith(prefix)) || [...closure.directories].some((d) => d !== k.path && !d.startsWith(prefix)) || closure.outside)
      return false
  }
  return true
}

/** A view holding one kustomization file: its references are read, not followed. */
function singleFile(path: string, text: string): Parameters<typeof closureOf>[0] {
  const encoded = new TextEncoder().encode(text)
  return {
    paths: [path],
    isFile: (p) => p === path,
    isDirectory: (p) => p === posix.dirname(path),
    bytes: async (p) => (p === path ? encoded : undefined),
    text: async (p) => (p === path ? text : undefined),
    prefetch: async () => {},
  }
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

export type { Build, Provenance }
