// A repository laid out as Flux's guides recommend, generated: clusters/<name> holds the bootstrap
// Kustomization and one Flux Kustomization per app; apps/<app>/base holds the HelmRelease and a
// configMapGenerator for its values (hash suffix on for some apps, off for others);
// apps/<app>/<cluster> overlays merge cluster values and patch releases; Flux substitutes
// ${cluster_name} and ${domain} after the build. Plus the commit the plan test makes on it. For a
// fleet, any clusters, and optionally an `infrastructure` Kustomization every cluster applies from
// the same path (its values substituted per cluster after the one build they share).

import { bootstrapText, repositoryKustomization } from './flux.ts'

/** The fleet's GitHub repository, as GITHUB_REPOSITORY names it. */
export const FLUX_GUIDE_REPOSITORY = 'acme/fleet'
export const FLUX_GUIDE_URL = `https://github.com/${FLUX_GUIDE_REPOSITORY}`
export const CLUSTERS = ['production', 'staging'] as const

export interface App {
  readonly name: string
  /** kustomize's hash suffix on the generated values ConfigMap (and nameReference for valuesFrom). */
  readonly hashed: boolean
  /** The cluster overlay replaces values.yaml with its own file (behavior: merge). */
  readonly overlayValues: boolean
  /** The cluster overlay patches the HelmRelease's chart version. */
  readonly overlayPatch: boolean
  /** A second generated key the release does not read. */
  readonly extraKey: boolean
  /** Flux Kustomization sets targetNamespace. */
  readonly targetNamespace: boolean
}

export const APPS: readonly App[] = [
  { name: 'atuin', hashed: true, overlayValues: true, overlayPatch: false, extraKey: false, targetNamespace: false },
  { name: 'grafana', hashed: false, overlayValues: false, overlayPatch: false, extraKey: false, targetNamespace: true },
  { name: 'podinfo', hashed: false, overlayValues: false, overlayPatch: false, extraKey: true, targetNamespace: false },
  { name: 'redis', hashed: true, overlayValues: false, overlayPatch: false, extraKey: false, targetNamespace: true },
  { name: 'loki', hashed: false, overlayValues: false, overlayPatch: true, extraKey: false, targetNamespace: false },
  { name: 'minio', hashed: true, overlayValues: true, overlayPatch: true, extraKey: false, targetNamespace: false },
]

export const values = (app: string, tag: string, memory: string): string =>
  ['replicaCount: 1', 'image:', `  repository: ghcr.io/acme/${app}`, `  tag: "${tag}"`, 'resources:', '  limits:', `    memory: ${memory}`, ''].join('\n')

export const clusterValues = (app: string, cluster: string, replicas: number): string =>
  [
    '# cluster values replace the base file for this key',
    `replicaCount: ${replicas}`,
    'image:',
    `  repository: ghcr.io/acme/${app}`,
    '  tag: "1.0.0"',
    `clusterName: ${cluster}`,
    '',
  ].join('\n')

export function release(app: App, version: string): string {
  return [
    'apiVersion: helm.toolkit.fluxcd.io/v2',
    'kind: HelmRelease',
    'metadata:',
    `  name: ${app.name}`,
    'spec:',
    '  interval: 30m',
    '  chart:',
    '    spec:',
    `      chart: ${app.name}`,
    `      version: "${version}"`,
    '      sourceRef:',
    '        kind: HelmRepository',
    '        name: charts',
    '        namespace: flux-system',
    '  valuesFrom:',
    '    - kind: ConfigMap',
    `      name: ${app.name}-values`,
    '  values:',
    '    ingress:',
    `      host: ${app.name}.\${domain}`,
    '',
  ].join('\n')
}

function baseKustomization(app: App): string {
  return [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    `namespace: ${app.name}`,
    'resources:',
    '  - release.yaml',
    'configMapGenerator:',
    `  - name: ${app.name}-values`,
    '    files:',
    '      - values.yaml',
    ...(app.extraKey ? ['      - extra.yaml'] : []),
    ...(app.hashed ? ['configurations:', '  - kustomizeconfig.yaml'] : ['generatorOptions:', '  disableNameSuffixHash: true']),
    '',
  ].join('\n')
}

// Flux's guide: teach kustomize that HelmRelease valuesFrom names a ConfigMap, so the hash suffix follows.
const NAME_REFERENCE = [
  'nameReference:',
  '  - kind: ConfigMap',
  '    version: v1',
  '    fieldSpecs:',
  '      - path: spec/valuesFrom/name',
  '        kind: HelmRelease',
  '',
].join('\n')

function overlay(app: App): string {
  return [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    'resources:',
    '  - ../base',
    ...(app.overlayValues
      ? ['configMapGenerator:', `  - name: ${app.name}-values`, '    behavior: merge', '    files:', '      - values.yaml=cluster-values.yaml']
      : []),
    ...(app.overlayPatch ? ['patches:', '  - path: release-patch.yaml'] : []),
    '',
  ].join('\n')
}

export const releasePatch = (app: App, version: string): string =>
  [
    'apiVersion: helm.toolkit.fluxcd.io/v2',
    'kind: HelmRelease',
    'metadata:',
    `  name: ${app.name}`,
    'spec:',
    '  chart:',
    '    spec:',
    `      version: "${version}"`,
    '',
  ].join('\n')

function appKustomization(app: App, cluster: string): string {
  return repositoryKustomization(app.name, `./apps/${app.name}/${cluster}`, {
    ...(app.targetNamespace ? { targetNamespace: app.name } : {}),
    postBuild: { substitute: { cluster_name: cluster, domain: `${cluster}.example.com` } },
  })
}

/** The shared infrastructure: one path for every cluster, a generated values ConfigMap naming the cluster after substitution. */
export const INFRASTRUCTURE = 'infrastructure'

export const infrastructureValues = (replicas: number): string => [`replicaCount: ${replicas}`, 'cluster: ${cluster_name}', ''].join('\n')

function infrastructure(): Record<string, string> {
  const ingress: App = { name: 'ingress', hashed: false, overlayValues: false, overlayPatch: false, extraKey: false, targetNamespace: false }
  return {
    [`${INFRASTRUCTURE}/kustomization.yaml`]: baseKustomization(ingress),
    [`${INFRASTRUCTURE}/release.yaml`]: release(ingress, '1.0.0'),
    [`${INFRASTRUCTURE}/values.yaml`]: infrastructureValues(2),
  }
}

export interface FluxGuideOptions {
  readonly clusters?: readonly string[]
  /** Every cluster also applies ./infrastructure (the same path), substituting its own name. */
  readonly infrastructure?: boolean
}

/** Every file of the repository before the commit. */
export function fluxGuideRepository(options: FluxGuideOptions = {}): Record<string, string> {
  const clusters = options.clusters ?? CLUSTERS
  const files: Record<string, string> = options.infrastructure ? infrastructure() : {}
  for (const cluster of clusters) {
    files[`clusters/${cluster}/flux-system/gotk-sync.yaml`] = bootstrapText(FLUX_GUIDE_URL, `./clusters/${cluster}`)
    files[`clusters/${cluster}/flux-system/kustomization.yaml`] =
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n'
    files[`clusters/${cluster}/apps.yaml`] = APPS.map((app) => appKustomization(app, cluster)).join('---\n')
    if (options.infrastructure)
      files[`clusters/${cluster}/infrastructure.yaml`] = repositoryKustomization(INFRASTRUCTURE, `./${INFRASTRUCTURE}`, {
        postBuild: { substitute: { cluster_name: cluster, domain: `${cluster}.example.com` } },
      })
  }
  for (const app of APPS) {
    files[`apps/${app.name}/base/kustomization.yaml`] = baseKustomization(app)
    files[`apps/${app.name}/base/release.yaml`] = release(app, '1.0.0')
    files[`apps/${app.name}/base/values.yaml`] = values(app.name, '1.0.0', '128Mi')
    if (app.extraKey) files[`apps/${app.name}/base/extra.yaml`] = 'dashboards:\n  enabled: false\n'
    if (app.hashed) files[`apps/${app.name}/base/kustomizeconfig.yaml`] = NAME_REFERENCE
    for (const cluster of clusters) {
      files[`apps/${app.name}/${cluster}/kustomization.yaml`] = overlay(app)
      if (app.overlayValues) files[`apps/${app.name}/${cluster}/cluster-values.yaml`] = clusterValues(app.name, cluster, cluster.startsWith('prod') ? 3 : 1)
      if (app.overlayPatch) files[`apps/${app.name}/${cluster}/release-patch.yaml`] = releasePatch(app, '2.0.0')
    }
  }
  return files
}

export const app = (name: string): App => {
  const found = APPS.find((a) => a.name === name)
  if (found === undefined) throw new Error(`no app ${name}`)
  return found
}

/**
 * The commit: several values files and one HelmRelease spec edited.
 * - atuin (hash on): production's cluster values, line 2 (replicaCount) → triggered; its rendered name changes too.
 * - grafana (hash off): base values.yaml, line 4 (the image tag) → triggered in every cluster.
 * - podinfo: extra.yaml, a generated key its release does not read → not triggered.
 * - redis: base release.yaml, chart version → spec changed, nothing to patch.
 * - loki: base values.yaml line 7 and production's release patch → one entry, source and spec.
 * - minio: staging's cluster values only → not in production's plan.
 */
export function fluxGuideCommit(): Record<string, string> {
  return {
    'apps/atuin/production/cluster-values.yaml': clusterValues('atuin', 'production', 3).replace('replicaCount: 3', 'replicaCount: 5'),
    'apps/grafana/base/values.yaml': values('grafana', '1.1.0', '128Mi'),
    'apps/podinfo/base/extra.yaml': 'dashboards:\n  enabled: true\n',
    'apps/redis/base/release.yaml': release(app('redis'), '1.2.0'),
    'apps/loki/base/values.yaml': values('loki', '1.0.0', '256Mi'),
    'apps/loki/production/release-patch.yaml': releasePatch(app('loki'), '2.1.0'),
    'apps/minio/staging/cluster-values.yaml': clusterValues('minio', 'staging', 2),
  }
}
