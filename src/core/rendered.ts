// A commit's repository as Flux applies it: the objects kustomize-controller would apply,
// each traced back to the file and line a user edits. Produced by src/render/, read by the
// planner, the reports and lint. Plain data: no I/O, no classes.

/** Where the user edited: repository-relative path (forward slashes) and 1-based line. */
export interface Provenance {
  readonly file: string
  readonly line: number
}

/** One object a Flux Kustomization applies, after kustomize and Flux's own layer. */
export interface RenderedObject {
  readonly apiVersion: string
  readonly kind: string
  readonly namespace: string | undefined
  readonly name: string
  /** The full manifest as kustomize-controller would apply it. */
  readonly object: Readonly<Record<string, unknown>>
  /** The document or generator entry it came from; undefined when kustomize could not say. */
  readonly origin: Provenance | undefined
  /** ConfigMap/Secret: data key → file:line where its value starts (the values file, literal, env line or data key). Empty for other objects. */
  readonly keyOrigins: Readonly<Record<string, Provenance>>
  /**
   * HelmReleases and chart sources (OCIRepository, HelmChart): where each field under `spec` is written (the resource's document, or a patch
   * that sets it), keyed by its path as JSON (`["chart","spec","version"]`), so a spec change
   * points at the line edited.
   */
  readonly specOrigins?: Readonly<Record<string, Provenance>>
  /** "<namespace>/<name>" of the Flux Kustomization applying it. */
  readonly kustomization: string
}

/** A Kustomization that could not be rendered (or rendered with a flaw). The others still are. */
export interface RenderProblem {
  /** "<namespace>/<name>" of the Flux Kustomization. */
  readonly kustomization: string
  /** Its spec.path, repository-relative. */
  readonly path: string
  /** One sentence: what went wrong and how to fix it; kustomize's own error sanitised and bounded. */
  readonly message: string
  readonly file?: string
  readonly line?: number
}

/** One commit's view of the repository. */
export interface RenderedRepository {
  readonly objects: readonly RenderedObject[]
  readonly problems: readonly RenderProblem[]
  /** Kustomizations deliberately not rendered, e.g. remote bases in plan-only runs. */
  readonly notRendered: readonly { readonly kustomization: string; readonly reason: string }[]
  /** "<namespace>/<name>" of every Flux Kustomization found that reads this repository. */
  readonly kustomizations: readonly string[]
  /** Those with `spec.suspend: true`: kustomize-controller applies nothing of theirs until resumed. */
  readonly suspended?: readonly string[]
}
