// Hand-built rendered repositories (what src/render/ produces), for the planner's and the
// pipeline's unit tests: no kustomize needed.

import type { Provenance, RenderedObject, RenderedRepository } from '../../src/core/rendered.ts'

export interface SourceSpec {
  readonly name: string
  readonly namespace?: string
  readonly kind?: 'ConfigMap' | 'Secret'
  readonly data?: Readonly<Record<string, string>>
  readonly stringData?: Readonly<Record<string, string>>
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
  readonly origin?: Provenance
  readonly keyOrigins?: Readonly<Record<string, Provenance>>
  readonly kustomization?: string
  readonly sops?: boolean
}

export function renderedSource(spec: SourceSpec): RenderedObject {
  const kind = spec.kind ?? 'ConfigMap'
  const namespace = spec.namespace ?? 'apps'
  const metadata = {
    name: spec.name,
    namespace,
    ...(spec.labels ? { labels: spec.labels } : {}),
    ...(spec.annotations ? { annotations: spec.annotations } : {}),
  }
  return {
    apiVersion: 'v1',
    kind,
    namespace,
    name: spec.name,
    object: {
      apiVersion: 'v1',
      kind,
      metadata,
      ...(spec.data ? { data: spec.data } : {}),
      ...(spec.stringData ? { stringData: spec.stringData } : {}),
      ...(spec.sops ? { sops: { mac: 'ENC[x]' } } : {}),
    },
    origin: spec.origin ?? { file: `apps/${spec.name}/kustomization.yaml`, line: 4 },
    keyOrigins: spec.keyOrigins ?? {},
    kustomization: spec.kustomization ?? 'flux-system/apps',
  }
}

export interface ReleaseSpec {
  readonly name: string
  readonly namespace?: string
  readonly valuesFrom?: readonly Readonly<Record<string, unknown>>[]
  readonly version?: string
  /** The chart from an OCIRepository (or HelmChart) instead of a `chart` template. */
  readonly chartRef?: Readonly<{ kind: string; name: string; namespace?: string }>
  readonly values?: Readonly<Record<string, unknown>>
  readonly labels?: Readonly<Record<string, string>>
  readonly origin?: Provenance
  readonly kustomization?: string
}

export function release(spec: ReleaseSpec): RenderedObject {
  const namespace = spec.namespace ?? 'apps'
  return {
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    namespace,
    name: spec.name,
    object: {
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      metadata: { name: spec.name, namespace, ...(spec.labels ? { labels: spec.labels } : {}) },
      spec: {
        interval: '10m',
        ...(spec.chartRef
          ? { chartRef: spec.chartRef }
          : { chart: { spec: { chart: spec.name, version: spec.version ?? '1.0.0', sourceRef: { kind: 'HelmRepository', name: 'charts' } } } }),
        ...(spec.valuesFrom ? { valuesFrom: spec.valuesFrom } : {}),
        ...(spec.values ? { values: spec.values } : {}),
      },
    },
    origin: spec.origin ?? { file: `apps/${spec.name}/release.yaml`, line: 1 },
    keyOrigins: {},
    kustomization: spec.kustomization ?? 'flux-system/apps',
  }
}

export const repo = (objects: readonly RenderedObject[], extra: Partial<RenderedRepository> = {}): RenderedRepository => ({
  objects,
  problems: [],
  notRendered: [],
  kustomizations: ['flux-system/apps'],
  ...extra,
})

export interface OciRepositorySpec {
  readonly name: string
  readonly namespace?: string
  readonly tag: string
  readonly interval?: string
  readonly suspend?: boolean
  readonly origin?: Provenance
  readonly specOrigins?: Readonly<Record<string, Provenance>>
  readonly kustomization?: string
}

/** A rendered OCIRepository holding a chart (`layerSelector` as `flux create source oci` writes for Helm). */
export function ociRepository(spec: OciRepositorySpec): RenderedObject {
  const namespace = spec.namespace ?? 'apps'
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'OCIRepository',
    namespace,
    name: spec.name,
    object: {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'OCIRepository',
      metadata: { name: spec.name, namespace },
      spec: {
        interval: spec.interval ?? '10m',
        url: `oci://registry.example/charts/${spec.name}`,
        ref: { tag: spec.tag },
        layerSelector: { mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', operation: 'copy' },
        ...(spec.suspend === undefined ? {} : { suspend: spec.suspend }),
      },
    },
    origin: spec.origin ?? { file: `apps/${spec.name}/repository.yaml`, line: 1 },
    keyOrigins: {},
    ...(spec.specOrigins === undefined ? {} : { specOrigins: spec.specOrigins }),
    kustomization: spec.kustomization ?? 'flux-system/apps',
  }
}
