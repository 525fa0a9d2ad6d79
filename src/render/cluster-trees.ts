// Which root Kustomizations of a repository are clusters. `flux bootstrap` gives every cluster
// its own tree (`clusters/<name>`) holding a `flux-system/flux-system` Kustomization beside the
// GitRepository that fetches the repository; two clusters' trees use the same Flux names, so
// they must be rendered apart, never merged into one. Pure.

import type { ClusterSpec } from '../core/cluster-list.ts'
import { FLUX_NAMESPACE, type FluxKustomization, type GitRepositorySpec } from './flux-objects.ts'
import type { Written } from './scan.ts'

/** Trees under this directory are named after the rest of their path (`clusters/prod-eu` → `prod-eu`). */
const CLUSTERS_DIR = 'clusters/'

/**
 * The cluster trees among the root Kustomizations (those no other one applies): a root is a
 * cluster's when it is Flux bootstrap's `flux-system/flux-system`, its path is under
 * `clusters/`, or its file also writes a GitRepository naming this repository (bootstrap's
 * gotk-sync.yaml). Other roots are not a cluster's tree. One entry per path.
 */
export function clusterTrees(
  roots: readonly Written<FluxKustomization>[],
  gitRepositories: readonly Written<GitRepositorySpec>[],
  thisRepository: ReadonlySet<string>,
): ClusterSpec[] {
  const trees = new Map<string, ClusterSpec>()
  for (const { value: k, file } of roots) {
    const bootstrap = k.namespace === FLUX_NAMESPACE && k.name === FLUX_NAMESPACE
    const synced = gitRepositories.some((g) => g.file === file && thisRepository.has(g.value.id))
    if (!bootstrap && !synced && !k.path.startsWith(CLUSTERS_DIR)) continue
    if (!trees.has(k.path)) trees.set(k.path, { name: clusterName(k.path), root: k.path })
  }
  return [...trees.values()]
}

/** How reports name a cluster tree: its path below `clusters/`, else its path (`.` for the repository's root). */
export function clusterName(root: string): string {
  if (root.startsWith(CLUSTERS_DIR)) return root.slice(CLUSTERS_DIR.length)
  return root === '' ? '.' : root
}
