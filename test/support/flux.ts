// Flux objects for tests: builders for HelmRepository / OCIRepository / HelmRelease / GitRepository /
// Kustomization manifests (as objects for a cluster, or as the text a repository file holds),
// their API coordinates, and readers of their status. Plain data, no cluster access.

import { stringify } from 'yaml'

export const HELM_RELEASE = { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases', kind: 'HelmRelease' } as const
export const HELM_REPOSITORY = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'helmrepositories', kind: 'HelmRepository' } as const
export const HELM_CHART = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'helmcharts', kind: 'HelmChart' } as const
export const OCI_REPOSITORY = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'ocirepositories', kind: 'OCIRepository' } as const
export const GIT_REPOSITORY = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'gitrepositories', kind: 'GitRepository' } as const
export const KUSTOMIZATION = { group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations', kind: 'Kustomization' } as const

export const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt'

export interface Condition {
  readonly type: string
  readonly status: 'True' | 'False' | 'Unknown'
  readonly reason?: string
  readonly message?: string
}

/** The part of a Flux object the tests read. */
export interface FluxObject {
  readonly apiVersion?: string
  readonly kind?: string
  readonly metadata: {
    readonly name: string
    readonly namespace?: string
    readonly generation?: number
    readonly resourceVersion?: string
    readonly annotations?: Readonly<Record<string, string>>
    readonly labels?: Readonly<Record<string, string>>
  }
  readonly spec?: Readonly<Record<string, unknown>>
  readonly status?: {
    readonly observedGeneration?: number
    readonly conditions?: readonly Condition[]
    readonly lastHandledReconcileAt?: string
    readonly lastAttemptedRevision?: string
    readonly lastAppliedRevision?: string
    readonly history?: readonly { readonly version?: number; readonly status?: string; readonly chartVersion?: string }[]
    readonly [key: string]: unknown
  }
}

export interface HelmRepositoryOptions {
  readonly namespace: string
  readonly name?: string
  readonly url: string
  /** How often source-controller re-reads index.yaml; default 1m. */
  readonly interval?: string
}

/**
 * The default HelmRepository name in a test namespace: a name of its own per namespace.
 * source-controller requeues HelmCharts by repository name across all namespaces, so a
 * repository shared by name would wake every other test's HelmRelease (helm-controller
 * reconciles when its HelmChart turns Ready again) while that test expects it idle.
 */
export function chartRepositoryName(namespace: string): string {
  return `charts-${namespace}`
}

export function helmRepository(options: HelmRepositoryOptions): FluxObject {
  return {
    apiVersion: `${HELM_REPOSITORY.group}/${HELM_REPOSITORY.version}`,
    kind: HELM_REPOSITORY.kind,
    metadata: { name: options.name ?? chartRepositoryName(options.namespace), namespace: options.namespace },
    spec: { url: options.url, interval: options.interval ?? '1m' },
  }
}

export interface OciRepositoryOptions {
  readonly namespace: string
  readonly name: string
  /** oci://<host:port>/<chart>, e.g. PushedChart.url; plain HTTP (the loopback registry). */
  readonly url: string
  /** A tag (e.g. the chart version) or, with `semver`, a range. */
  readonly tag?: string
  readonly semver?: string
  readonly interval?: string
}

/** An OCIRepository whose artifact is the chart's .tgz, for a HelmRelease's `chartRef`. */
export function ociRepository(options: OciRepositoryOptions): FluxObject {
  return {
    apiVersion: `${OCI_REPOSITORY.group}/${OCI_REPOSITORY.version}`,
    kind: OCI_REPOSITORY.kind,
    metadata: { name: options.name, namespace: options.namespace },
    spec: {
      url: options.url,
      ref: options.semver === undefined ? { tag: options.tag ?? 'latest' } : { semver: options.semver },
      insecure: true,
      interval: options.interval ?? '1h',
      layerSelector: { mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', operation: 'copy' },
    },
  }
}

export interface HelmReleaseOptions {
  readonly namespace: string
  readonly name: string
  /** The chart from an OCIRepository (or HelmChart) in the release's namespace, instead of `chart`/`version`/`repository`. */
  readonly chartRef?: { readonly kind: 'OCIRepository' | 'HelmChart'; readonly name: string }
  /** Chart name in the repository; default `demo`. */
  readonly chart?: string
  /** Semver range; default `*` (the newest). */
  readonly version?: string
  /** HelmRepository name in the same namespace; default `chartRepositoryName(namespace)`. */
  readonly repository?: string
  readonly interval?: string
  readonly values?: Readonly<Record<string, unknown>>
  readonly valuesFrom?: readonly { kind: 'ConfigMap' | 'Secret'; name: string; valuesKey?: string; targetPath?: string; optional?: boolean }[]
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
  /** Merged over the spec built from the other options. */
  readonly spec?: Readonly<Record<string, unknown>>
}

/** A HelmRelease that installs/upgrades without waiting for workloads (there are no nodes). */
export function helmRelease(options: HelmReleaseOptions): FluxObject {
  const chart = {
    spec: {
      chart: options.chart ?? 'demo',
      version: options.version ?? '*',
      sourceRef: { kind: HELM_REPOSITORY.kind, name: options.repository ?? chartRepositoryName(options.namespace) },
    },
  }
  const spec: Record<string, unknown> = {
    interval: options.interval ?? '1h',
    ...(options.chartRef === undefined ? { chart } : { chartRef: options.chartRef }),
    install: { disableWait: true },
    upgrade: { disableWait: true },
  }
  if (options.values) spec.values = options.values
  if (options.valuesFrom) spec.valuesFrom = options.valuesFrom
  return {
    apiVersion: `${HELM_RELEASE.group}/${HELM_RELEASE.version}`,
    kind: HELM_RELEASE.kind,
    metadata: {
      name: options.name,
      namespace: options.namespace,
      ...(options.labels ? { labels: options.labels } : {}),
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: { ...spec, ...options.spec },
  }
}

export interface GitRepositoryOptions {
  readonly namespace: string
  readonly name: string
  /** Clone URL, e.g. a repository on the loopback git server. */
  readonly url: string
  /** Default `main`. */
  readonly branch?: string
  /** How often source-controller polls; default 1h (tests request a reconcile after a push). */
  readonly interval?: string
}

export function gitRepository(options: GitRepositoryOptions): FluxObject {
  return {
    apiVersion: `${GIT_REPOSITORY.group}/${GIT_REPOSITORY.version}`,
    kind: GIT_REPOSITORY.kind,
    metadata: { name: options.name, namespace: options.namespace },
    spec: { url: options.url, interval: options.interval ?? '1h', ref: { branch: options.branch ?? 'main' } },
  }
}

export interface KustomizationOptions {
  readonly namespace: string
  readonly name: string
  /** Path inside the source's artifact, e.g. `./apps/demo`. */
  readonly path: string
  /** GitRepository in the same namespace; default the Kustomization's name. */
  readonly source?: string
  readonly targetNamespace?: string
  readonly interval?: string
  /** SOPS decryption with the age key(s) in this Secret (keys ending in `.agekey`). */
  readonly decryptionSecret?: string
  /** Merged over the spec built from the other options. */
  readonly spec?: Readonly<Record<string, unknown>>
}

export function kustomization(options: KustomizationOptions): FluxObject {
  const spec: Record<string, unknown> = {
    interval: options.interval ?? '1h',
    path: options.path,
    prune: true,
    sourceRef: { kind: GIT_REPOSITORY.kind, name: options.source ?? options.name },
  }
  if (options.targetNamespace) spec.targetNamespace = options.targetNamespace
  if (options.decryptionSecret) spec.decryption = { provider: 'sops', secretRef: { name: options.decryptionSecret } }
  return {
    apiVersion: `${KUSTOMIZATION.group}/${KUSTOMIZATION.version}`,
    kind: KUSTOMIZATION.kind,
    metadata: { name: options.name, namespace: options.namespace },
    spec: { ...spec, ...options.spec },
  }
}

/** Objects as one repository file holds them: YAML documents separated by `---`. */
export function manifestText(...objects: readonly FluxObject[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n')
}

/**
 * A Flux Kustomization of the repository's own GitRepository (flux-system/flux-system, as
 * `flux bootstrap` names it), as a repository file holds it. `path` as Flux writes it (`./apps/web`).
 */
export function repositoryKustomization(name: string, path: string, spec: Readonly<Record<string, unknown>> = {}): string {
  return manifestText(kustomization({ namespace: 'flux-system', name, path, source: 'flux-system', interval: '10m', spec }))
}

/** What `flux bootstrap` writes for a cluster: the GitRepository of `url` and the Kustomization syncing `path`. */
export function bootstrapText(url: string, path: string): string {
  const repository = gitRepository({ namespace: 'flux-system', name: 'flux-system', url, interval: '1m' })
  return `${manifestText(repository)}---\n${repositoryKustomization('flux-system', path)}`
}

/** The revision Flux records for a commit on a branch: `main@sha1:<sha>`. */
export function gitRevision(sha: string, branch = 'main'): string {
  return `${branch}@sha1:${sha}`
}

/** Ready=True at the current generation with `revision` applied (a Kustomization's lastAppliedRevision). */
export function isAppliedAt(object: FluxObject, revision: string): boolean {
  return isReady(object) && object.status?.lastAppliedRevision === revision
}

export function condition(object: FluxObject, type: string): Condition | undefined {
  return object.status?.conditions?.find((c) => c.type === type)
}

/** Ready=True for the object's current generation. */
export function isReady(object: FluxObject): boolean {
  return isObserved(object) && condition(object, 'Ready')?.status === 'True'
}

export function isObserved(object: FluxObject): boolean {
  return object.status?.observedGeneration !== undefined && object.status.observedGeneration === object.metadata.generation
}

/** One line for a failure message: the conditions as type=status (reason: message). */
export function describeConditions(object: FluxObject | undefined): string {
  const conditions = object?.status?.conditions ?? []
  if (conditions.length === 0) return 'no conditions yet'
  return conditions.map((c) => `${c.type}=${c.status} (${c.reason ?? ''}: ${c.message ?? ''})`).join('; ')
}
