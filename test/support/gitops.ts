// A small Flux repository for the GitOps-loop test and the demo, laid out as `flux bootstrap`
// and Flux's guides do: clusters/<name> holds the Flux Kustomization that applies
// apps/podinfo, where a HelmRelease reads a configMapGenerator's values (or a SOPS Secret).
// Plain data: file path → content.

import { stringify } from 'yaml'
import { chartRepositoryName, helmRelease, manifestText } from './flux.ts'

export const CLUSTER_ROOT = 'clusters/demo'
/** The GitRepository the root Kustomization and `apps` read (the one bootstrap applies by hand). */
export const GIT_REPOSITORY_NAME = 'repo'

export interface FluxTreeOptions {
  /** Namespace of the Flux objects and target namespace of what `apps` applies. */
  readonly namespace: string
  /** The HelmRepository's URL (the loopback chart repository). */
  readonly chartRepoUrl: string
  /** Name of the Secret with the age key, when `apps` decrypts SOPS files. */
  readonly decryptionSecret?: string
}

/** clusters/demo (the `apps` Kustomization) and the app's HelmRepository. */
export function fluxTree(options: FluxTreeOptions): Record<string, string> {
  const apps = {
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name: 'apps', namespace: options.namespace },
    spec: {
      interval: '1h',
      path: './apps/podinfo',
      prune: true,
      sourceRef: { kind: 'GitRepository', name: GIT_REPOSITORY_NAME },
      targetNamespace: options.namespace,
      ...(options.decryptionSecret ? { decryption: { provider: 'sops', secretRef: { name: options.decryptionSecret } } } : {}),
    },
  }
  const repository = {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'HelmRepository',
    metadata: { name: chartRepositoryName(options.namespace) },
    spec: { url: options.chartRepoUrl, interval: '1h' },
  }
  return {
    [`${CLUSTER_ROOT}/apps.yaml`]: stringify(apps),
    [`${CLUSTER_ROOT}/kustomization.yaml`]: kustomization({ resources: ['apps.yaml'] }),
    'apps/podinfo/repository.yaml': stringify(repository),
  }
}

/**
 * The podinfo HelmRelease (the `demo` chart, no waiting for workloads: there are no nodes),
 * reading the chart from fluxTree's HelmRepository in `namespace`.
 */
export function podinfoRelease(namespace: string, valuesFrom: readonly Readonly<Record<string, string>>[]): string {
  return stringify({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name: 'podinfo' },
    spec: {
      interval: '1h',
      chart: { spec: { chart: 'demo', version: '*', sourceRef: { kind: 'HelmRepository', name: chartRepositoryName(namespace) } } },
      install: { disableWait: true },
      upgrade: { disableWait: true },
      valuesFrom,
    },
  })
}

/** The podinfo HelmRelease reading its chart through `chartRef` (an OCIRepository or HelmChart named podinfo) and its generated values. */
export function podinfoChartRefRelease(namespace: string, kind: 'OCIRepository' | 'HelmChart'): string {
  return manifestText(
    helmRelease({ namespace, name: 'podinfo', chartRef: { kind, name: 'podinfo' }, valuesFrom: [{ kind: 'ConfigMap', name: 'podinfo-values' }] }),
  )
}

/** apps/podinfo with its values generated from values.yaml (no hash suffix), as Flux's guides do. */
export function generatedValuesApp(namespace: string, values: string): Record<string, string> {
  return {
    'apps/podinfo/values.yaml': values,
    'apps/podinfo/release.yaml': podinfoRelease(namespace, [{ kind: 'ConfigMap', name: 'podinfo-values' }]),
    'apps/podinfo/kustomization.yaml': kustomization({
      resources: ['repository.yaml', 'release.yaml'],
      configMapGenerator: [{ name: 'podinfo-values', files: ['values.yaml'], options: { disableNameSuffixHash: true } }],
    }),
  }
}

/** A kustomize `kustomization.yaml`. */
export function kustomization(content: Readonly<Record<string, unknown>>): string {
  return stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', ...content })
}
