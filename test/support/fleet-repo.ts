// A Flux repository for many clusters, laid out as `flux bootstrap` and Flux's guides lay it
// out: clusters/<name>/flux-system (the bootstrap Kustomization), clusters/<name>/apps.yaml (a
// Kustomization of ./apps/<name>), and apps/<name>/ with HelmReleases and the labelled
// ConfigMaps that feed them. For the fleet's tests and its benchmark.

import { repositoryKustomization } from './flux.ts'
import { triggerConfigMap } from './manifests.ts'

export interface FleetClusterSpec {
  readonly name: string
  /** Namespace of the cluster's releases and their ConfigMaps. */
  readonly namespace: string
  /** Release names; each reads the ConfigMap `<release>-values`. */
  readonly releases: readonly string[]
}

function helmRelease(name: string, namespace: string): string {
  return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  interval: 1h
  chart:
    spec:
      chart: demo
      version: '*'
      sourceRef:
        kind: HelmRepository
        name: charts
  valuesFrom:
    - kind: ConfigMap
      name: ${name}-values
`
}

/** Every file of the repository, path → text; `level` is written into each values file. */
export function fleetRepoFiles(clusters: readonly FleetClusterSpec[], level: (cluster: string, release: string) => string): Record<string, string> {
  const files: Record<string, string> = {}
  for (const c of clusters) {
    files[`clusters/${c.name}/flux-system/gotk-sync.yaml`] = repositoryKustomization('flux-system', `./clusters/${c.name}`)
    files[`clusters/${c.name}/apps.yaml`] = repositoryKustomization('apps', `./apps/${c.name}`)
    files[`apps/${c.name}/kustomization.yaml`] =
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${c.releases.flatMap((r) => [`  - ${r}.yaml`, `  - ${r}-values.yaml`]).join('\n')}\n`
    for (const r of c.releases) {
      files[`apps/${c.name}/${r}.yaml`] = helmRelease(r, c.namespace)
      files[`apps/${c.name}/${r}-values.yaml`] = triggerConfigMap({
        name: `${r}-values`,
        namespace: c.namespace,
        releases: r,
        values: `level: ${level(c.name, r)}\n`,
      })
    }
  }
  return files
}
