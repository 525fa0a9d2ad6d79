// What the host and the renderer module (renderer/, Go compiled to WebAssembly) say to each
// other: one JSON request, one JSON answer, field for field the Go types of renderer/main.go,
// build.go, postbuild.go, helm.go and chart-version.go. The files a build reads travel beside the request, never in it.

import type { ValuesFromEntry } from '../core/release-input.ts'

/** A source's files by path (forward slashes, relative to the source's root). */
export type SourceFiles = readonly (readonly [path: string, bytes: Uint8Array])[]

/** The kustomize half of a Flux Kustomization's build (renderer/build.go). */
export interface BuildRequest {
  /** spec.path, relative to the source's root ('' is the root). */
  readonly path: string
  /** The Flux Kustomization object: apiVersion, kind, metadata, spec. */
  readonly kustomization: Readonly<Record<string, unknown>>
}

export interface BuildAnswer {
  /** kustomize's output, each object with its origin annotation. */
  readonly yaml?: string
  readonly error?: string
  /** The remote reference the build needed, when that is why it failed. */
  readonly remote?: string
  /** With `remote`: the output of the build without its remote references. */
  readonly partial?: string
}

/** A substituteFrom object the host found, its values decoded. */
export interface ValuesObject {
  readonly kind: 'ConfigMap' | 'Secret'
  readonly name: string
  readonly data: Readonly<Record<string, string>>
}

/** The Flux half of the build (renderer/postbuild.go): postBuild substitution and commonMetadata. */
export interface PostBuildRequest {
  readonly yaml: string
  readonly kustomization: Readonly<Record<string, unknown>>
  readonly values?: readonly ValuesObject[]
  /** `Kind/name` substituteFrom references the host could not read. */
  readonly absent?: readonly string[]
}

export interface AppliedObject {
  /** The object as kustomize-controller applies it; absent when `error` is set. */
  readonly object?: Record<string, unknown>
  /** kustomize's origin annotation, YAML. */
  readonly origin?: string
  readonly kind?: string
  readonly name?: string
  /** Why Flux would refuse this object. */
  readonly error?: string
  /** Variables it uses with no value and no default (Flux substitutes them empty). */
  readonly unresolved?: readonly string[]
}

export interface PostBuildAnswer {
  readonly objects?: readonly AppliedObject[]
  readonly error?: string
}

/**
 * One release rendered as helm-controller installs or upgrades it (renderer/helm.go): values
 * composed by Flux's chartutil, Helm's engine, then helm-controller's post-renderers. The
 * chart's files travel beside the request: a directory of them, or one archive (`archive`).
 */
export interface HelmTemplateRequest {
  /** The chart archive's file name among the files; absent: the files are the chart's directory. */
  readonly archive?: string
  readonly release: string
  readonly namespace: string
  readonly revision: number
  readonly isUpgrade: boolean
  /** The HelmRelease: valuesFrom reads its namespace, the origin labels name it. */
  readonly owner: { readonly name: string; readonly namespace: string }
  readonly values?: Readonly<Record<string, unknown>>
  readonly valuesFrom?: readonly ValuesFromEntry[]
  /** The ConfigMaps and Secrets valuesFrom may read, as the cluster would hold them. */
  readonly objects?: readonly Readonly<Record<string, unknown>>[]
  readonly kubeVersion?: string
  readonly apiVersions?: readonly string[]
  readonly postRenderers?: readonly unknown[]
  readonly commonMetadata?: unknown
  readonly postRenderStrategy?: string
  /** The chart source's artifact revision when it carries a digest (an OCIRepository's `<tag>@sha256:<hex>`): its first 12 hex become the chart version's build metadata, as helm-controller does. */
  readonly sourceRevision?: string
  readonly skipSchemaValidation?: boolean
}

export interface RenderedHook {
  readonly name: string
  readonly kind: string
  readonly path: string
  readonly manifest: string
  readonly events: readonly string[]
  readonly weight: number
}

export interface HelmTemplateAnswer {
  /** What Helm stores as the release's manifest: post-rendered, no hooks, no CRDs. */
  readonly manifest?: string
  readonly hooks?: readonly RenderedHook[]
  readonly crds?: readonly { readonly path: string; readonly manifest: string }[]
  readonly notes?: string
  /** The composed values (Helm storage's `config`). */
  readonly values?: Readonly<Record<string, unknown>>
  /** A template calls `lookup`, which returns nothing in the sandbox. */
  readonly usesLookup?: boolean
  readonly chartName?: string
  readonly chartVersion?: string
  readonly error?: string
  /** Where it failed: composing the values, loading the chart, or rendering. */
  readonly stage?: 'values' | 'chart' | 'render'
}

/** A chart version picked from a Helm repository index as source-controller picks it (renderer/chart-version.go). */
export interface ChartVersionRequest {
  readonly versions: readonly string[]
  readonly constraint: string
}

export interface ChartVersionAnswer {
  readonly version?: string
  readonly error?: string
}

/** One request: an operation and its input (renderer/main.go's envelope). */
export type Request =
  | { readonly op: 'build'; readonly build: BuildRequest & { readonly root: string } }
  | { readonly op: 'postBuild'; readonly postBuild: PostBuildRequest }
  | { readonly op: 'helmTemplate'; readonly helmTemplate: HelmTemplateRequest & { readonly root: string } }
  | { readonly op: 'chartVersion'; readonly chartVersion: ChartVersionRequest }

export interface Reply {
  readonly build?: BuildAnswer
  readonly postBuild?: PostBuildAnswer
  readonly helmTemplate?: HelmTemplateAnswer
  readonly chartVersion?: ChartVersionAnswer
  readonly error?: string
}

/** Host → worker, first: the memory maximum, and the compiled module when another thread made it already. */
export interface WorkerStart {
  readonly module: WebAssembly.Module | undefined
  readonly memoryBytes: number
}

/** Host → worker, after WorkerStart. */
export interface WorkerTask {
  readonly id: number
  readonly request: Request
  /** The files the request reads (a source's, a chart's), laid out under the request's `root`. */
  readonly files?: SourceFiles
}

/**
 * Worker → host: the instance is ready (with the module it compiled, for the next threads), the
 * module's reply, or why the instance died (the worker then exits).
 */
export type WorkerResult =
  | { readonly ready: true; readonly module: WebAssembly.Module }
  | { readonly id: number; readonly reply: Reply }
  | { readonly id: number; readonly fatal: string }
