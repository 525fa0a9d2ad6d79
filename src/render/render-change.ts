// renderChange: a commit range's repository as Flux applies it, at base and at head.
//
// Contract (the planner codes against this):
// - Input: a git reader able to extract a commit's tree, the two commits, the files the range
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
// - Base reuses head's build of a Kustomization whose closure and spec the range did not touch,
//   and base's tree is head's (hard links) with the range's changes undone: cost follows the change.
// - Never throws for repository content: a build that fails is one RenderProblem naming the Flux
//   Kustomization, its path and kustomize's own error; the others are still rendered.
//   Throws only for what the caller must fix (no kustomize, git failing).

import { mkdtemp, mkdir, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { parseDocument, stringify } from 'yaml'
import type { FileChange } from '../core/model.ts'
import type { Provenance, RenderedObject, RenderedRepository, RenderProblem } from '../core/rendered.ts'
import { mapLimit } from '../lib/concurrency.ts'
import type { GitReader } from '../git/reader.ts'
import { boundedError, type Kustomize } from '../kustomize/kustomize.ts'
import { closureOf, inClosure, kustomizationFileIn, type Closure } from './closure.ts'
import { fluxKustomizationText, generatedResources, outputDocuments, withCommonMetadata } from './flux-layer.ts'
import { FLUX_NAMESPACE, fluxKustomization, isRecord, repositoryKey, type ArtifactSpec, type FluxKustomization } from './flux-objects.ts'
import { documentLine, generatorProvenance, ORIGIN_ANNOTATION, parseOrigin, TreeFiles } from './provenance.ts'
import { objectsIn, scanFluxObjects, type FluxScan, type Written } from './scan.ts'
import { artifactTree, linkInto, listFiles, repositoryTree, type SourceTree } from './source-tree.ts'
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
   * Work shared by several calls over one range (a fleet renders it once per cluster root): each
   * commit extracted once, each kustomize build run once per commit, source, path and Flux layer.
   * The caller closes it; without it, each call works in a directory of its own.
   */
  readonly cache?: RenderCache | undefined
}

export interface RenderedChange {
  readonly base: RenderedRepository
  readonly head: RenderedRepository
}

type Extractor = Pick<GitReader, 'extract' | 'changedFiles'>

const EMPTY: RenderedRepository = { objects: [], problems: [], notRendered: [], kustomizations: [] }

export async function renderChange(reader: Extractor, options: RenderChangeOptions): Promise<RenderedChange | undefined> {
  const { cache } = options
  const work = cache === undefined ? await mkdtemp(join(tmpdir(), 'hrt-render-')) : undefined
  try {
    const { head, base, changes } = await (cache === undefined ? openRange(reader, options, work ?? '') : cache.range(reader, options))
    const changed = new Set([...options.changedFiles, ...changes.map((c) => c.path)])
    const identity = repositoryIdentity(options, head.scan, base?.scan)
    if (!appliesRepository(head.scan, identity) && !(base && appliesRepository(base.scan, identity))) return undefined
    const shared = new Map<string, Promise<Build>>()
    const headView = await renderCommit(head, { options, identity, changed, shared, reuse: false })
    const baseView = base ? await renderCommit(base, { options, identity, changed, shared, reuse: true }) : EMPTY
    return { base: baseView, head: headView }
  } finally {
    if (work !== undefined) await rm(work, { recursive: true, force: true })
  }
}

interface OpenedRange {
  readonly head: Commit
  readonly base: Commit | undefined
  readonly changes: readonly FileChange[]
}

async function openRange(reader: Extractor, options: RenderChangeOptions, work: string): Promise<OpenedRange> {
  const head = await Commit.open(reader, options.head, join(work, 'head'))
  const changes = options.base === undefined ? [] : await reader.changedFiles(options.base, options.head, () => true)
  const base = options.base === undefined ? undefined : await Commit.derive(head, changes, join(work, 'base'), options.base)
  return { head, base, changes }
}

/** kustomize's output for one Flux Kustomization at one commit, or why there is none. */
type KustomizeOutput =
  | { readonly kind: 'documents'; readonly documents: readonly string[] }
  | { readonly kind: 'remote'; readonly reason: string }
  /** The message names the Flux Kustomization given: one build may serve Kustomizations of several clusters. */
  | { readonly kind: 'problem'; readonly message: (id: string) => string; readonly where?: Provenance }

/** See RenderChangeOptions.cache. */
export class RenderCache {
  private readonly ranges = new Map<string, Promise<OpenedRange>>()
  private readonly builds = new Map<string, Promise<KustomizeOutput>>()
  private directory: Promise<string> | undefined

  /** The commits of a range, extracted on first use. */
  range(reader: Extractor, options: RenderChangeOptions): Promise<OpenedRange> {
    const key = `${options.base ?? ''}..${options.head}`
    let found = this.ranges.get(key)
    if (found === undefined) {
      const index = this.ranges.size
      found = this.work().then((work) => openRange(reader, options, join(work, `range-${index}`)))
      this.ranges.set(key, found)
    }
    return found
  }

  /** kustomize's output under `key`, built on first use. */
  build(key: string, run: () => Promise<KustomizeOutput>): Promise<KustomizeOutput> {
    let found = this.builds.get(key)
    if (found === undefined) {
      found = run()
      this.builds.set(key, found)
    }
    return found
  }

  /** Removes every extracted tree and build directory. */
  async close(): Promise<void> {
    const directory = this.directory
    this.directory = undefined
    this.ranges.clear()
    this.builds.clear()
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
        if (!artifacts.has(artifact.id)) artifacts.set(artifact.id, { alias, artifact, foreign })
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

/** One commit's extracted tree, its file list and its written Flux objects. */
class Commit {
  private readonly artifacts = new Map<string, Promise<SourceTree>>()
  private builds = 0
  readonly files: TreeFiles
  /** The commit's SHA: what its builds are cached under. */
  readonly revision: string
  readonly directory: string
  readonly tree: SourceTree
  readonly paths: readonly string[]
  readonly scan: FluxScan

  private constructor(revision: string, directory: string, tree: SourceTree, paths: readonly string[], scan: FluxScan) {
    this.revision = revision
    this.directory = directory
    this.tree = tree
    this.paths = paths
    this.scan = scan
    this.files = new TreeFiles(tree.root)
  }

  static async open(reader: Extractor, sha: string, directory: string): Promise<Commit> {
    const root = join(directory, 'tree')
    await mkdir(root, { recursive: true })
    await reader.extract(sha, root)
    const paths = await listFiles(root)
    return new Commit(sha, directory, repositoryTree(root), paths, await scanFluxObjects(root, paths))
  }

  /** The tree a Kustomization's source holds at this commit. */
  source(k: FluxKustomization, identity: Identity): Promise<SourceTree> | undefined {
    if (k.sourceRef.kind === 'GitRepository') return Promise.resolve(this.tree)
    const id = `${k.sourceRef.namespace}/${k.sourceRef.name}`
    const entry = identity.artifacts.get(id)
    if (entry === undefined) return undefined
    let tree = this.artifacts.get(id)
    if (tree === undefined) {
      tree = artifactTree(this.tree.root, this.paths, entry.artifact, entry.alias, join(this.directory, 'artifacts', String(this.artifacts.size)))
      this.artifacts.set(id, tree)
    }
    return tree
  }

  /**
   * The base commit as head's tree with the range's changes undone: hard links for every file the
   * range left alone, the base content for the others. Cost follows the change, not the repository.
   */
  static async derive(head: Commit, changes: readonly FileChange[], directory: string, revision: string): Promise<Commit> {
    const root = join(directory, 'tree')
    await mkdir(root, { recursive: true })
    await linkInto(head.tree.root, root, [''], [])
    const touched = new Set<string>()
    for (const change of changes) {
      touched.add(change.path)
      const path = join(root, change.path)
      await rm(path, { force: true })
      // Symbolic links are not restored: a build must not follow them out of the tree.
      if (change.before?.type !== 'file') continue
      await mkdir(dirname(path), { recursive: true })
      await writeFile(path, change.before.bytes)
    }
    const paths = await listFiles(root)
    const rescanned = await scanFluxObjects(
      root,
      paths.filter((p) => touched.has(p)),
    )
    const kept = <T>(list: readonly Written<T>[], fresh: readonly Written<T>[]): Written<T>[] => [...list.filter((w) => !touched.has(w.file)), ...fresh]
    const scan: FluxScan = {
      kustomizations: kept(head.scan.kustomizations, rescanned.kustomizations),
      gitRepositories: kept(head.scan.gitRepositories, rescanned.gitRepositories),
      generators: kept(head.scan.generators, rescanned.generators),
    }
    return new Commit(revision, directory, repositoryTree(root), paths, scan)
  }

  newWorkDirectory(): string {
    this.builds += 1
    return join(this.directory, 'builds', String(this.builds))
  }
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
  /** Builds at head by id and spec, for base to reuse when the range did not touch them. */
  readonly shared: Map<string, Promise<Build>>
  readonly reuse: boolean
}

async function renderCommit(commit: Commit, ctx: RenderContext): Promise<RenderedRepository> {
  const objects: RenderedObject[] = []
  const problems: RenderProblem[] = []
  const notRendered: { kustomization: string; reason: string }[] = []
  const seen = new Set<string>()
  const written = commit.scan.kustomizations.filter((k) => readsRepository(k.value, ctx.identity))
  const closures = new Map<string, Promise<Closure | undefined>>()
  const closure = (k: FluxKustomization): Promise<Closure | undefined> => {
    const key = `${k.id}\0${JSON.stringify(k.spec)}`
    let found = closures.get(key)
    if (found === undefined) {
      found = (async () => {
        const tree = await commit.source(k, ctx.identity)
        if (tree === undefined) return undefined
        const components = Array.isArray(k.spec.components) ? k.spec.components.filter((c): c is string => typeof c === 'string') : []
        return closureOf(tree.root, k.path, components)
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

  const concurrency = ctx.options.concurrency ?? Math.max(1, availableParallelism())
  while (frontier.length > 0) {
    const level = frontier.filter(({ k }) => !seen.has(k.id) && (seen.add(k.id), true))
    frontier = []
    const results = await mapLimit(level, concurrency, async ({ k, file }) => {
      const c = await closure(k)
      const tree = await commit.source(k, ctx.identity)
      if (c === undefined || tree === undefined) return { k, build: undefined, reason: 'its ExternalArtifact is not one this repository produces' }
      const entry = k.sourceRef.kind === 'ExternalArtifact' ? ctx.identity.artifacts.get(`${k.sourceRef.namespace}/${k.sourceRef.name}`) : undefined
      if (entry?.foreign) return { k, build: undefined, reason: 'its ExternalArtifact also copies files from sources other than this repository' }
      const touched =
        ctx.options.scope === 'all' ||
        (file !== undefined && ctx.changed.has(file)) ||
        [...ctx.changed].some((p) => tree.fromRepository(p).some((t) => inClosure(c, t)))
      const definesOthers = written.some((w) => w.value.id !== k.id && tree.fromRepository(w.file).some((t) => inClosure(c, t)))
      if (!touched && !definesOthers) return { k, build: undefined, reason: undefined }
      const key = `${k.id}\0${JSON.stringify(k.spec)}`
      let build = !touched && ctx.reuse ? ctx.shared.get(key) : undefined
      if (build === undefined) {
        build = buildKustomization(commit, k, tree, c, objects, ctx)
        if (!ctx.reuse) ctx.shared.set(key, build)
      }
      return { k, build: await build, reason: undefined }
    })
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
  return { objects, problems, notRendered, kustomizations }
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
): Promise<Build> {
  const { cache } = ctx.options
  const output = await (cache === undefined
    ? kustomizeOutput(commit, k, tree, closure, ctx)
    : cache.build(buildKey(commit, k, ctx), () => kustomizeOutput(commit, k, tree, closure, ctx)))
  if (output.kind === 'documents') return renderedObjects(commit, k, tree, closure, output.documents, earlier, ctx)
  if (output.kind === 'remote') return { objects: [], problems: [], notRendered: [{ kustomization: k.id, reason: output.reason }], children: [] }
  return {
    objects: [],
    problems: [{ kustomization: k.id, path: k.path === '' ? './' : `./${k.path}`, message: output.message(k.id), ...(output.where ?? {}) }],
    notRendered: [],
    children: [],
  }
}

/**
 * What kustomize's output for `k` depends on: the commit, the source's tree, the path and the
 * fields Flux writes into the kustomization.yaml (fluxKustomizationText). Not its name, nor
 * postBuild: clusters sharing a path share the build, and each substitutes its own variables.
 */
function buildKey(commit: Commit, k: FluxKustomization, ctx: RenderContext): string {
  const source = k.sourceRef.kind === 'GitRepository' ? 'repository' : `${k.sourceRef.kind}/${k.sourceRef.namespace}/${k.sourceRef.name}`
  const { targetNamespace, namePrefix, nameSuffix, patches, components, images } = k.spec
  const layer = JSON.stringify({ targetNamespace, namePrefix, nameSuffix, patches, components, images })
  return [commit.revision, source, k.path, layer, ctx.options.fetchRemote === true].join('\0')
}

async function kustomizeOutput(commit: Commit, k: FluxKustomization, tree: SourceTree, closure: Closure, ctx: RenderContext): Promise<KustomizeOutput> {
  const problem = (message: (id: string) => string, where?: Provenance): KustomizeOutput => ({ kind: 'problem', message, ...(where ? { where } : {}) })
  if (closure.remote.length > 0 && ctx.options.fetchRemote !== true) {
    const first = boundedError(closure.remote[0] ?? '')
    return { kind: 'remote', reason: `it uses remote bases (${first}), which plan-only runs do not fetch` }
  }
  const work = commit.newWorkDirectory()
  await linkInto(tree.root, work, closure.directories, closure.files)
  const dir = join(work, k.path)
  const shown = k.path === '' ? './' : `./${k.path}`
  const existingName = await kustomizationFileIn(work, k.path)
  const missing = (id: string): string => `Flux Kustomization ${id}: spec.path ${shown} does not exist in the source; fix spec.path.`
  if (existingName === undefined && !closure.directories.has(k.path)) return problem(missing)
  let existing: string | undefined
  let generated: string[] = []
  try {
    if (existingName !== undefined) existing = await readFile(join(work, existingName), 'utf8')
    else generated = await generatedResources(dir)
  } catch {
    return problem(missing)
  }
  const target = join(work, existingName ?? posix.join(k.path, 'kustomization.yaml'))
  try {
    const text = fluxKustomizationText(existing, generated, k)
    // The work tree holds hard links: replace the file, never write through the link.
    await unlink(target).catch(() => {})
    await writeFile(target, text)
  } catch (error) {
    const message = boundedError(String(error))
    return problem(
      (id) => `Flux Kustomization ${id}: ${existingName ?? 'kustomization.yaml'} in ${shown} is not valid YAML (${message}); fix the file.`,
      existingName ? { file: tree.toRepository(existingName) ?? existingName, line: 1 } : undefined,
    )
  }
  const result = await ctx.options.kustomize.build(dir)
  if (!result.ok) {
    const message = result.error.split(`${work}/`).join('').split(work).join('.')
    return problem((id) => `Flux Kustomization ${id} (path ${shown}) does not build: ${message}`)
  }
  return { kind: 'documents', documents: outputDocuments(result.output) }
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
  const files = tree === commit.tree ? commit.files : new TreeFiles(tree.root)
  let firstUnresolved: Provenance | undefined
  for (const text of documents) {
    let object = parse(text)
    if (object === undefined) continue
    const meta = isRecord(object.metadata) ? object.metadata : {}
    const annotations = isRecord(meta.annotations) ? meta.annotations : {}
    const labels = isRecord(meta.labels) ? meta.labels : {}
    const origin = parseOrigin(typeof annotations[ORIGIN_ANNOTATION] === 'string' ? annotations[ORIGIN_ANNOTATION] : undefined)
    let provenance: Provenance | undefined
    let keyOrigins: Record<string, Provenance> = {}
    const kind = typeof object.kind === 'string' ? object.kind : ''
    const name = typeof meta.name === 'string' ? meta.name : ''
    if (origin?.kind === 'file') {
      const path = posix.normalize(posix.join(k.path, origin.path))
      const file = tree.toRepository(path)
      if (file !== undefined) provenance = { file, line: await documentLine(files, path, kind, name) }
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
    if (vars.values !== undefined && labels[SUBSTITUTE_KEY] !== 'disabled' && annotations[SUBSTITUTE_KEY] !== 'disabled') {
      // kustomize-controller substitutes on the object's YAML text, so do we.
      const result = substitute(stringifyObject(object), vars.values)
      for (const v of result.unresolved) unresolved.add(v)
      if (result.unresolved.length > 0 || result.errors.length > 0) firstUnresolved ??= provenance
      for (const error of result.errors.slice(0, 1))
        problems.push({ kustomization: k.id, path: shown, message: `postBuild substitution: ${boundedError(error)}`, ...(provenance ?? {}) })
      const substituted = parse(result.text)
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
  for (const file of commit.paths) {
    if (!/\.ya?ml$/.test(file)) continue
    for (const object of await objectsIn(commit.tree.root, file, new RegExp(`\\b${kind}\\b[\\s\\S]*\\b${name.replace(/[.]/g, '\\.')}\\b`))) {
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
