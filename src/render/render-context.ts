// What one render of a range carries through its steps: the caller's options, how this
// repository is named, what the range changed, and the work the two commits (and, with a cache,
// a fleet's cluster roots) share. Types only.

import type { Provenance, RenderedObject, RenderProblem } from '../core/rendered.ts'
import type { GitReader } from '../git/reader.ts'
import type { Sandbox } from '../sandbox/sandbox.ts'
import type { Closure } from './closure.ts'
import type { ArtifactSpec, FluxKustomization } from './flux-objects.ts'
import type { SourceTree } from './source-tree.ts'

/** Values of a ConfigMap/Secret read from the cluster (Secret values decoded); undefined: not there. */
export type ClusterValues = (kind: 'ConfigMap' | 'Secret', namespace: string, name: string) => Promise<Readonly<Record<string, string>> | undefined>

export type TreeReader = Pick<GitReader, 'openObjects' | 'grep'>

export interface RenderChangeOptions {
  /** Commit before the change; undefined renders head alone (base is then empty). */
  readonly base: string | undefined
  readonly head: string
  /** Repository paths the range changed; the reader's own diff of base..head is added to them. */
  readonly changedFiles: readonly string[]
  /** This repository's URLs (any git spelling, credentials ignored); GitRepositories with one of them are "this repository". */
  readonly repositoryUrls: readonly string[]
  /** `<namespace>/<name>` of the GitRepository that fetches this repository, when its URL is not enough. */
  readonly gitRepository?: string | undefined
  /** Path Flux bootstrap syncs (`clusters/production`): the chain starts there. Undefined: every Flux Kustomization found. */
  readonly clusterRoot?: string | undefined
  /** Where every build runs: Flux's kustomize code, sandboxed. */
  readonly sandbox: Sandbox
  /** substituteFrom values from the cluster, when connected. */
  readonly cluster?: ClusterValues | undefined
  /** 'all' re-renders every Kustomization (a full sync); default 'changed'. */
  readonly scope?: 'changed' | 'all'
  /** Concurrent builds waiting on the sandbox; default the number of CPUs. */
  readonly concurrency?: number
}

/** How this repository is named by the Flux objects: GitRepository ids and ExternalArtifacts cut from it. */
export interface Identity {
  readonly gitRepositories: ReadonlySet<string>
  /** How they were found: named by the caller, by URL, or Flux bootstrap's flux-system/flux-system when neither. */
  readonly by: 'name' | 'url' | 'bootstrap'
  /** ExternalArtifact id → the generator alias naming this repository and the artifact's rules. */
  readonly artifacts: ReadonlyMap<string, ArtifactEntry>
}

export interface ArtifactEntry {
  readonly alias: string
  /** `<namespace>/<name>` of the GitRepository the alias names. */
  readonly source: string
  readonly artifact: ArtifactSpec
  /** Its rules copy from other sources too: we cannot lay it out. */
  readonly foreign: boolean
}

/** What one Flux Kustomization's build gave. */
export interface Build {
  readonly objects: readonly RenderedObject[]
  readonly problems: readonly RenderProblem[]
  readonly notRendered: readonly { kustomization: string; reason: string }[]
  /** Flux Kustomizations this build defines (the chain). */
  readonly children: readonly { k: FluxKustomization; origin: Provenance | undefined }[]
  /** substituteFrom objects (`Kind/name`) found nowhere yet: a sibling building alongside may generate them. */
  readonly absent?: readonly string[]
}

/**
 * kustomize's output for a build, or why there is none. The problem names the Flux Kustomization
 * given: with a cache, one build serves Kustomizations of several clusters. A build that needs a
 * remote reference is not rendered, but its output without that reference (`partial`) still
 * shows the Kustomizations it defines.
 */
export type BuildOutput =
  | { readonly output: string }
  | { readonly problem: (id: string) => string; readonly where?: Provenance }
  | { readonly remote: string; readonly partial: string | undefined }

/** A Kustomization as decided at one commit: what the objects it renders came from. */
export interface Producer {
  readonly file: string | undefined
  readonly tree: SourceTree
  readonly closure: Closure
}

export interface RenderContext {
  readonly options: RenderChangeOptions
  readonly identity: Identity
  readonly changed: ReadonlySet<string>
  /** Builds of Kustomizations the range did not touch, by id and spec: the same at both commits, built once. */
  readonly shared: Map<string, Promise<Build>>
  /** kustomize's output by commit (or none, when untouched) and spec, for the range: see kustomizeOutput. */
  readonly outputs: Map<string, Promise<BuildOutput>>
  /** Builds started ahead of their level; awaited before the render returns. */
  readonly speculative: Promise<void>[]
  /** The range changed what source-controller leaves out (`.sourceignore`, spec.ignore): every artifact may differ. */
  readonly ignoreChanged: boolean
  /** Kustomizations whose output the range can have changed, at either commit. */
  readonly touched: Set<string>
  /** Does a file the range changed (at either commit) mention this text? */
  readonly changedMention: (text: string) => Promise<boolean>
  /** Kustomization files parsed, by text: both commits hold most of them alike. */
  readonly parsed: Map<string, unknown>
  /** Bounds the builds waiting at once, across both commits. */
  readonly limit: <R>(fn: () => Promise<R>) => Promise<R>
}
