// Flux bootstrap's sync as a cluster holds it: the flux-system/flux-system Kustomization's path
// and the URL of the GitRepository it reads. It says which of a repository's cluster trees the
// cluster applies. Built by checking each field: the API may hand us any shape.

/** Where `flux bootstrap` writes its sync: flux-system/flux-system. */
export const BOOTSTRAP_NAMESPACE = 'flux-system'
export const BOOTSTRAP_NAME = 'flux-system'

export interface FluxBootstrap {
  /** The Kustomization's spec.path, as written (cluster content: quoted when shown). */
  readonly path: string
  /** Its sourceRef, `<kind>/<namespace>/<name>`. */
  readonly source: string
  /** spec.url of the GitRepository it reads; undefined when it reads no GitRepository or that is absent. */
  readonly url: string | undefined
}

/** The sourceRef of a bootstrap Kustomization as read from the API; undefined when it has no spec. */
export function bootstrapSourceOf(
  kustomization: unknown,
): { readonly path: string; readonly kind: string; readonly namespace: string; readonly name: string } | undefined {
  const spec = record(record(kustomization)['spec'])
  if (Object.keys(spec).length === 0) return undefined
  const ref = record(spec['sourceRef'])
  return {
    path: text(spec['path']),
    kind: text(ref['kind']) || 'GitRepository',
    namespace: text(ref['namespace']) || BOOTSTRAP_NAMESPACE,
    name: text(ref['name']),
  }
}

/** A GitRepository's spec.url as read from the API. */
export function gitRepositoryUrlOf(object: unknown): string | undefined {
  const url = record(record(object)['spec'])['url']
  return typeof url === 'string' && url !== '' ? url : undefined
}

type Json = Readonly<Record<string, unknown>>

function record(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : ''
}
