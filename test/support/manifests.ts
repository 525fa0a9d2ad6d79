// Manifests the tests, the demo and the benchmarks commit to their repositories, written
// the way a user writes them (plain YAML text), from one builder so they cannot drift apart.

export interface TriggerSourceOptions {
  readonly name: string
  readonly namespace: string
  /** The `<prefix>/helmreleases-name` annotation as written, e.g. "app" or "frontend, backend". */
  readonly releases: string
  /** The `<prefix>/helmreleases-namespace` annotation; default: the source's namespace. */
  readonly releaseNamespace?: string
  /**
   * The `values.yaml` key's content. It is the document's last block, so a test can append
   * indented lines (`  other: x`) to add keys after it.
   */
  readonly values: string
}

/** A ConfigMap labelled and annotated to trigger HelmReleases, with the default prefix. */
export function triggerConfigMap(o: TriggerSourceOptions): string {
  const values = o.values
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n')
  return `apiVersion: v1
kind: ConfigMap
${triggerMetadata(o)}
data:
  values.yaml: |
${values}
`
}

/** A Secret labelled and annotated to trigger HelmReleases, with the default prefix; each stringData value quoted. */
export function triggerSecret(o: {
  readonly name: string
  readonly namespace: string
  readonly releases: string
  readonly stringData: Readonly<Record<string, string>>
}): string {
  const entries = Object.entries(o.stringData).map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`)
  return `apiVersion: v1
kind: Secret
${triggerMetadata(o)}
stringData:
${entries.join('\n')}
`
}

/** The metadata block that labels and annotates a source to trigger its releases. */
function triggerMetadata(o: Pick<TriggerSourceOptions, 'name' | 'namespace' | 'releases' | 'releaseNamespace'>): string {
  return `metadata:
  name: ${o.name}
  namespace: ${o.namespace}
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: ${o.releases}
    nebius.ai/helmreleases-namespace: ${o.releaseNamespace ?? o.namespace}`
}

/** A HelmRelease reading ConfigMap app-values, for the discover lint tests (git and CLI alike). */
export const DISCOVER_RELEASE = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app
  namespace: apps
spec:
  valuesFrom:
    - kind: ConfigMap
      name: app-values
`

/** ConfigMap app-values labelled to trigger, its annotation naming `target` (a typo shows as a finding). */
export function discoverValues(target: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-values
  namespace: apps
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-namespace: apps
    nebius.ai/helmreleases-name: ${target}
data:
  a: "1"
`
}
