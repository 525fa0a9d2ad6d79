// Flux objects for tests: builders for HelmRepository / HelmRelease manifests, their
// API coordinates, and readers of their status. Plain data, no cluster access.

export const HELM_RELEASE = { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases', kind: 'HelmRelease' } as const
export const HELM_REPOSITORY = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'helmrepositories', kind: 'HelmRepository' } as const
export const HELM_CHART = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'helmcharts', kind: 'HelmChart' } as const

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
    readonly history?: readonly { readonly status?: string; readonly chartVersion?: string }[]
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

export function helmRepository(options: HelmRepositoryOptions): FluxObject {
  return {
    apiVersion: `${HELM_REPOSITORY.group}/${HELM_REPOSITORY.version}`,
    kind: HELM_REPOSITORY.kind,
    metadata: { name: options.name ?? 'charts', namespace: options.namespace },
    spec: { url: options.url, interval: options.interval ?? '1m' },
  }
}

export interface HelmReleaseOptions {
  readonly namespace: string
  readonly name: string
  /** Chart name in the repository; default `demo`. */
  readonly chart?: string
  /** Semver range; default `*` (the newest). */
  readonly version?: string
  /** HelmRepository name in the same namespace; default `charts`. */
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
  const spec: Record<string, unknown> = {
    interval: options.interval ?? '1h',
    chart: {
      spec: {
        chart: options.chart ?? 'demo',
        version: options.version ?? '*',
        sourceRef: { kind: HELM_REPOSITORY.kind, name: options.repository ?? 'charts' },
      },
    },
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
