// The Flux objects that say how a repository is applied: Kustomizations, the GitRepositories
// they read, and ArtifactGenerators that copy parts of a repository into ExternalArtifacts.
// Pure: plain objects in, typed specs out; anything malformed is ignored here and left to Flux.

export const KUSTOMIZE_GROUP = 'kustomize.toolkit.fluxcd.io'
export const SOURCE_GROUP = 'source.toolkit.fluxcd.io'
export const SOURCE_EXTENSIONS_GROUP = 'source.extensions.fluxcd.io'
/** Where Flux objects without a namespace land in a bootstrap repository. */
export const FLUX_NAMESPACE = 'flux-system'

export interface SourceReference {
  readonly kind: string
  readonly name: string
  readonly namespace: string
}

export interface SubstituteReference {
  readonly kind: 'ConfigMap' | 'Secret'
  readonly name: string
  readonly optional: boolean
}

export interface FluxKustomization {
  /** "<namespace>/<name>" */
  readonly id: string
  readonly namespace: string
  readonly name: string
  readonly sourceRef: SourceReference
  /** spec.path inside the source, normalised: no leading `./`, '' for the root. */
  readonly path: string
  /** The spec as written, for telling a changed Kustomization from an unchanged one. */
  readonly spec: Readonly<Record<string, unknown>>
  /** Where it is written (its document's first line), when known: a problem of its build points there. */
  readonly definedAt?: { readonly file: string; readonly line: number }
}

export interface GitRepositorySpec {
  readonly id: string
  readonly url: string
  /** spec.ignore: gitignore patterns source-controller leaves out of the artifact. */
  readonly ignore?: string
}

export interface CopyRule {
  readonly from: string
  readonly to: string
  readonly exclude: readonly string[]
}

export interface ArtifactSpec {
  /** "<namespace>/<name>" of the ExternalArtifact it produces. */
  readonly id: string
  readonly copy: readonly CopyRule[]
}

export interface ArtifactGeneratorSpec {
  readonly id: string
  /** alias → source. */
  readonly sources: ReadonlyMap<string, SourceReference>
  readonly artifacts: readonly ArtifactSpec[]
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function group(apiVersion: unknown): string | undefined {
  return typeof apiVersion === 'string' ? apiVersion.split('/')[0] : undefined
}

function metadata(object: Readonly<Record<string, unknown>>): { name: string; namespace: string } | undefined {
  const meta = isRecord(object.metadata) ? object.metadata : {}
  const name = text(meta.name)
  if (name === undefined) return undefined
  return { name, namespace: text(meta.namespace) ?? FLUX_NAMESPACE }
}

/** Flux resolves spec.path inside the artifact; `./apps/x/`, `apps/x` and `/apps/x` are one path. */
export function normalisePath(path: string): string {
  const parts: string[] = []
  for (const part of path.replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') parts.pop()
    else parts.push(part)
  }
  return parts.join('/')
}

export function fluxKustomization(object: Readonly<Record<string, unknown>>): FluxKustomization | undefined {
  if (group(object.apiVersion) !== KUSTOMIZE_GROUP || object.kind !== 'Kustomization') return undefined
  const meta = metadata(object)
  const spec = isRecord(object.spec) ? object.spec : undefined
  if (meta === undefined || spec === undefined || !isRecord(spec.sourceRef)) return undefined
  const kind = text(spec.sourceRef.kind)
  const name = text(spec.sourceRef.name)
  if (kind === undefined || name === undefined) return undefined
  return {
    id: `${meta.namespace}/${meta.name}`,
    namespace: meta.namespace,
    name: meta.name,
    sourceRef: { kind, name, namespace: text(spec.sourceRef.namespace) ?? meta.namespace },
    path: normalisePath(typeof spec.path === 'string' ? spec.path : ''),
    spec,
  }
}

export function gitRepository(object: Readonly<Record<string, unknown>>): GitRepositorySpec | undefined {
  if (group(object.apiVersion) !== SOURCE_GROUP || object.kind !== 'GitRepository') return undefined
  const meta = metadata(object)
  const url = isRecord(object.spec) ? text(object.spec.url) : undefined
  if (meta === undefined || url === undefined) return undefined
  const ignore = isRecord(object.spec) && typeof object.spec.ignore === 'string' ? object.spec.ignore : undefined
  return { id: `${meta.namespace}/${meta.name}`, url, ...(ignore === undefined ? {} : { ignore }) }
}

export function artifactGenerator(object: Readonly<Record<string, unknown>>): ArtifactGeneratorSpec | undefined {
  if (group(object.apiVersion) !== SOURCE_EXTENSIONS_GROUP || object.kind !== 'ArtifactGenerator') return undefined
  const meta = metadata(object)
  const spec = isRecord(object.spec) ? object.spec : undefined
  if (meta === undefined || spec === undefined) return undefined
  const sources = new Map<string, SourceReference>()
  for (const source of Array.isArray(spec.sources) ? spec.sources : []) {
    if (!isRecord(source)) continue
    const alias = text(source.alias)
    const kind = text(source.kind)
    const name = text(source.name)
    if (alias && kind && name) sources.set(alias, { kind, name, namespace: text(source.namespace) ?? meta.namespace })
  }
  const artifacts: ArtifactSpec[] = []
  for (const artifact of Array.isArray(spec.artifacts) ? spec.artifacts : []) {
    if (!isRecord(artifact)) continue
    const name = text(artifact.name)
    if (name === undefined) continue
    const copy: CopyRule[] = []
    for (const rule of Array.isArray(artifact.copy) ? artifact.copy : []) {
      if (!isRecord(rule)) continue
      const from = text(rule.from)
      const to = text(rule.to)
      const exclude = Array.isArray(rule.exclude) ? rule.exclude.filter((e): e is string => typeof e === 'string') : []
      if (from && to) copy.push({ from, to, exclude })
    }
    artifacts.push({ id: `${meta.namespace}/${name}`, copy })
  }
  return { id: `${meta.namespace}/${meta.name}`, sources, artifacts }
}

/**
 * One spelling per repository: `https://github.com/o/r.git`, `git@github.com:o/r`,
 * `ssh://git@github.com/o/r` → `github.com/o/r` (host lower-cased, credentials and port dropped).
 */
export function repositoryKey(url: string): string {
  let rest = url.trim()
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.*)$/.exec(rest)
  if (scp && !rest.includes('://')) rest = `${scp[1]}/${scp[2]}`
  rest = rest.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/^[^@/]*@/, '')
  const slash = rest.indexOf('/')
  const host = (slash < 0 ? rest : rest.slice(0, slash)).replace(/:\d+$/, '').toLowerCase()
  const path = (slash < 0 ? '' : rest.slice(slash + 1)).replace(/\/+$/, '').replace(/\.git$/, '')
  return `${host}/${path}`
}
