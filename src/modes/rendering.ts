// The rendering trigger and discover plan on: src/render/ driven with the run's settings. Flux
// Kustomizations that read this repository found → the range rendered as Flux applies it, every
// build in the run's one sandbox; otherwise the modes read files one by one, and the run's notes
// say which way it read and why (never a silent fall-back).

import type { GitReader } from '../git/reader.ts'
import type { Range } from '../git/range.ts'
import { oneLine, quoted } from '../lib/untrusted.ts'
import { repositoryKey } from '../render/flux-objects.ts'
import type { ClusterSpec } from '../core/cluster-list.ts'
import type { RenderedRepository } from '../core/rendered.ts'
import { clusterRoots, isRendered, RenderCache, renderChange, type RenderChangeOptions, type RenderedChange, type Unapplied } from '../render/render-change.ts'
import type { Sandbox } from '../sandbox/sandbox.ts'
import type { Settings } from '../settings.ts'
import type { RenderCommit } from './discover/run.ts'
import type { RangeReading, RenderRange } from './trigger/pipeline.ts'

type Env = Readonly<Record<string, string | undefined>>

export interface RenderingOptions {
  /** GITHUB_REPOSITORY (on GITHUB_SERVER_URL) names this repository; unset, the clone's remotes do. */
  readonly env: Env
  /** Where the builds run; the module loads on the first one. */
  readonly sandbox: Sandbox
  /** Shared by every render of the run (a fleet's cluster roots); absent: one per range. */
  readonly cache?: RenderCache
  /** `all`: every Kustomization rendered, touched by the range or not (the diff reads chart sources anywhere). */
  readonly scope?: 'all'
}

/** This repository as the GitRepositories that fetch it may spell it, and what said so. */
export interface ThisRepository {
  /** Any git spelling; may hold credentials (a remote's URL): shown only as repositoryKey. */
  readonly urls: readonly string[]
  /** For the notes: `GITHUB_REPOSITORY` or `the remote 'origin'`. */
  readonly from: string
}

/** GITHUB_REPOSITORY when set (the run's own statement), else every remote of the clone, `origin` first. */
export async function thisRepositoryOf(env: Env, git: Pick<GitReader, 'remotes'>): Promise<ThisRepository> {
  const repository = env['GITHUB_REPOSITORY']
  if (repository) return { urls: [`${env['GITHUB_SERVER_URL'] ?? 'https://github.com'}/${repository}`], from: 'GITHUB_REPOSITORY' }
  const remotes = await git.remotes()
  const names = remotes.map((r) => `'${oneLine(r.name, 40)}'`)
  return { urls: remotes.map((r) => r.url), from: names.length === 1 ? `the remote ${names[0]}` : `the remotes ${names.join(', ')}` }
}

/** The range rendered at base and head, only what it can have changed (everything under full-sync or from the empty tree). */
export function renderRangeOf(settings: Settings, git: GitReader, options: RenderingOptions): RenderRange {
  const render = renderResultOf(settings, git, options)
  return async (range, locate): Promise<RangeReading> => {
    if (settings.clusterRoot !== undefined) {
      const { result, repository } = await render(range, settings.clusterRoot)
      return { rendered: renderedOf(result), reading: readingOf(result, repository, settings.clusterRoot) }
    }
    // A repository of several cluster trees: each rendered apart, sharing the commits and kustomize's outputs.
    return withTrees(render, range, options, async (trees, cache) => {
      if (trees.length < 2) {
        const { result, repository } = await render(range, undefined, cache)
        return { rendered: renderedOf(result), reading: readingOf(result, repository, undefined) }
      }
      if (locate !== undefined) {
        const own = await locate(trees, (await render.repository()).urls)
        const { result, repository } = await render(range, own.tree.root, cache)
        return { rendered: renderedOf(result), reading: `${readingOf(result, repository, own.tree.root)} ${own.reading}`, cluster: own.tree.name }
      }
      const clusters = await Promise.all(
        trees.map(async (tree) => {
          const { result, repository } = await render(range, tree.root, cache)
          return { name: tree.name, rendered: renderedOf(result), reading: readingOf(result, repository, tree.root) }
        }),
      )
      const names = trees.map((t) => quoted(t.root)).join(', ')
      return {
        rendered: undefined,
        reading: `Read as Flux applies it, one cluster tree at a time: ${trees.length} cluster trees found (${names}).`,
        clusters,
      }
    })
  }
}

/** `use` given the range's cluster trees and the cache their renders share: the run's, else one for this call, closed after. */
async function withTrees<T>(
  render: RenderResult,
  range: Range,
  options: RenderingOptions,
  use: (trees: ClusterSpec[], cache: RenderCache) => Promise<T>,
): Promise<T> {
  const cache = options.cache ?? new RenderCache()
  try {
    return await use(await render.roots(range, cache), cache)
  } finally {
    if (options.cache === undefined) await cache.close()
  }
}

/** Renders a range from one cluster root (undefined: every Flux Kustomization found); undefined when nothing there reads this repository. */
export type ClusterRenderer = (range: Range, clusterRoot: string | undefined) => Promise<RenderedChange | undefined>

/** The range rendered once per cluster root, for the fleet: with `cache` the commits read once and each shared Kustomization built once for every root. */
export function clusterRendererOf(settings: Settings, git: GitReader, options: RenderingOptions & { readonly cache?: RenderCache }): ClusterRenderer {
  const render = renderResultOf(settings, git, options)
  return async (range, clusterRoot) => renderedOf((await render(range, clusterRoot, options.cache)).result)
}

/** One commit rendered whole, for `discover --from-git`: every cluster tree of it, each rendered apart. */
export function renderCommitOf(settings: Settings, git: GitReader, options: RenderingOptions): RenderCommit {
  const render = renderResultOf(settings, git, options)
  return async (head) => {
    const range: Range = { base: undefined, head, fullSync: true, notes: [] }
    if (settings.clusterRoot !== undefined) return renderedOf((await render(range, settings.clusterRoot)).result)?.head
    return withTrees(render, range, options, async (trees, cache) => {
      if (trees.length < 2) return renderedOf((await render(range, undefined, cache)).result)?.head
      const heads = await Promise.all(trees.map(async (tree) => renderedOf((await render(range, tree.root, cache)).result)?.head))
      return joined(heads.filter((h): h is RenderedRepository => h !== undefined))
    })
  }
}

/** Several cluster trees' renders as one list of what the repository declares (discover lints declarations, not a cluster). */
function joined(heads: readonly RenderedRepository[]): RenderedRepository | undefined {
  if (heads.length === 0) return undefined
  return {
    objects: heads.flatMap((h) => h.objects),
    problems: heads.flatMap((h) => h.problems),
    notRendered: heads.flatMap((h) => h.notRendered),
    kustomizations: [...new Set(heads.flatMap((h) => h.kustomizations))].sort(),
    suspended: [...new Set(heads.flatMap((h) => h.suspended ?? []))].sort(),
  }
}

interface RenderResult {
  (range: Range, clusterRoot: string | undefined, cache?: RenderCache): Promise<{ result: RenderedChange | Unapplied; repository: ThisRepository }>
  /** The cluster trees of the range (clusterRoots). */
  roots(range: Range, cache: RenderCache): Promise<ClusterSpec[]>
  repository(): Promise<ThisRepository>
}

function renderResultOf(settings: Settings, git: GitReader, options: RenderingOptions): RenderResult {
  let known: Promise<ThisRepository> | undefined
  const repository = (): Promise<ThisRepository> => (known ??= thisRepositoryOf(options.env, git))
  const optionsFor = async (range: Range, clusterRoot: string | undefined): Promise<RenderChangeOptions> => {
    const whole = range.fullSync || range.base === undefined
    return {
      base: whole ? undefined : range.base,
      head: range.head,
      changedFiles: [],
      repositoryUrls: (await repository()).urls,
      gitRepository: settings.gitRepository,
      clusterRoot,
      sandbox: options.sandbox,
      scope: whole || options.scope === 'all' ? 'all' : 'changed',
    }
  }
  // renderChange compares the two commits' trees itself: no diff (and no blob read) here.
  const render = async (range: Range, clusterRoot: string | undefined, cache?: RenderCache) => {
    const result = await renderChange(git, { ...(await optionsFor(range, clusterRoot)), cache })
    return { result, repository: await repository() }
  }
  return Object.assign(render, {
    roots: async (range: Range, cache: RenderCache) => clusterRoots(git, { ...(await optionsFor(range, undefined)), cache }),
    repository,
  })
}

function renderedOf(result: RenderedChange | Unapplied): RenderedChange | undefined {
  return isRendered(result) && result.head.kustomizations.length > 0 ? result : undefined
}

/** GitRepositories named in the one-line explanation; the rest are counted. */
const LISTED = 3

/** Which way the repository was read and why, in one sentence for the run's notes. Repository content is quoted. */
export function readingOf(result: RenderedChange | Unapplied, repository: ThisRepository, clusterRoot: string | undefined): string {
  const known =
    repository.urls[0] === undefined
      ? `this repository's URL is unknown (no GITHUB_REPOSITORY, no remote)`
      : `${repositoryKey(repository.urls[0])}, from ${repository.from}`
  if (!isRendered(result)) {
    if (result.kustomizations === 0) return 'Read file by file: the repository holds no Flux Kustomization.'
    const found = result.gitRepositories.slice(0, LISTED).map((g) => `${quoted(g.url)} (${quoted(g.id)})`)
    const more = result.gitRepositories.length > LISTED ? ` and ${result.gitRepositories.length - LISTED} more` : ''
    const listed = found.length === 0 ? 'it defines no GitRepository' : `its GitRepositories fetch ${found.join(', ')}${more}`
    const kustomizations = result.kustomizations === 1 ? '1 Flux Kustomization' : `${result.kustomizations} Flux Kustomizations`
    return (
      `Read file by file: ${kustomizations} found, but none reads this repository (${known}); ${listed}. ` +
      `Name the one that fetches this repository with --git-repository NAMESPACE/NAME (input git-repository) or set GITHUB_REPOSITORY=owner/name.`
    )
  }
  if (result.head.kustomizations.length === 0)
    return `Read file by file: no Flux Kustomization under the cluster root ${quoted(clusterRoot ?? '')} reads this repository.`
  const count = result.head.kustomizations.length
  const kustomizations = count === 1 ? '1 Flux Kustomization' : `${count} Flux Kustomizations`
  const sources = result.source.gitRepositories.map((id) => quoted(id)).join(', ')
  const why =
    result.source.by === 'name'
      ? `named by git-repository`
      : result.source.by === 'url'
        ? `its URL is this repository's (${known})`
        : `Flux bootstrap's name, as no GitRepository's URL is this repository's (${known})`
  return `Read as Flux applies it: ${kustomizations} from GitRepository ${sources}, ${why}.`
}
