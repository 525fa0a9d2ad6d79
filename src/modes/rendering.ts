// The rendering trigger and discover plan on: src/render/ driven with the run's settings. Flux
// Kustomizations found → the range rendered as Flux applies it, every build in the run's one
// sandbox; none → undefined, and the modes read files one by one as before.

import type { GitReader } from '../git/reader.ts'
import type { Range } from '../git/range.ts'
import { renderChange, type RenderCache } from '../render/render-change.ts'
import type { Sandbox } from '../sandbox/sandbox.ts'
import type { Settings } from '../settings.ts'
import type { RenderCommit } from './discover/run.ts'
import type { RenderedChange, RenderRange } from './trigger/pipeline.ts'

export interface RenderingOptions {
  /** This repository's URL (GITHUB_SERVER_URL/GITHUB_REPOSITORY): GitRepositories with it are "this repository". */
  readonly repositoryUrl: string | undefined
  /** Where the builds run; the module loads on the first one. */
  readonly sandbox: Sandbox
}

/** This repository as Flux's GitRepository names it (`https://github.com/<owner>/<repo>`), when GITHUB_REPOSITORY says which. */
export function repositoryUrlOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const repository = env['GITHUB_REPOSITORY']
  return repository ? `${env['GITHUB_SERVER_URL'] ?? 'https://github.com'}/${repository}` : undefined
}

/** The range rendered at base and head, only what it can have changed (everything under full-sync or from the empty tree). */
export function renderRangeOf(settings: Settings, git: GitReader, options: RenderingOptions): RenderRange {
  const render = clusterRendererOf(settings, git, options)
  return (range) => render(range, settings.clusterRoot)
}

/** Renders a range from one cluster root (undefined: every Flux Kustomization found). */
export type ClusterRenderer = (range: Range, clusterRoot: string | undefined) => Promise<RenderedChange | undefined>

/** The range rendered once per cluster root, for the fleet: with `cache` the commits read once and each shared Kustomization built once for every root. */
export function clusterRendererOf(settings: Settings, git: GitReader, options: RenderingOptions & { readonly cache?: RenderCache }): ClusterRenderer {
  return async (range, clusterRoot) => {
    const whole = range.fullSync || range.base === undefined
    // renderChange compares the two commits' trees itself: no diff (and no blob read) here.
    return renderChange(git, {
      base: whole ? undefined : range.base,
      head: range.head,
      changedFiles: [],
      repositoryUrl: options.repositoryUrl,
      gitRepository: settings.gitRepository,
      clusterRoot,
      sandbox: options.sandbox,
      scope: whole ? 'all' : 'changed',
      cache: options.cache,
    })
  }
}

/** One commit rendered whole, for `discover --from-git`. */
export function renderCommitOf(settings: Settings, git: GitReader, options: RenderingOptions): RenderCommit {
  return async (head) => {
    const rendered = await renderChange(git, {
      base: undefined,
      head,
      changedFiles: [],
      repositoryUrl: options.repositoryUrl,
      gitRepository: settings.gitRepository,
      clusterRoot: settings.clusterRoot,
      sandbox: options.sandbox,
      scope: 'all',
    })
    return rendered?.head
  }
}
