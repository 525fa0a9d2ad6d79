// A trigger run talks to one cluster. In a repository holding several clusters' trees, it plans
// only the tree that cluster applies, found from the cluster's own Flux bootstrap: the
// flux-system Kustomization's path, read by the GitRepository that fetches this repository.

import type { ClusterSpec } from '../../core/cluster-list.ts'
import type { FluxBootstrap } from '../../core/flux-bootstrap.ts'
import { ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { ConfigurationError, messageOf } from '../../lib/errors.ts'
import { quoted } from '../../lib/untrusted.ts'
import { normalisePath, repositoryKey } from '../../render/flux-objects.ts'

/** The cluster's tree among `trees`, and one sentence for the run's notes saying how it was found. */
export interface OwnCluster {
  readonly tree: ClusterSpec
  readonly reading: string
}

/** Which of the repository's cluster trees this run's cluster applies; throws ConfigurationError when that cannot be told. */
export type LocateCluster = (trees: readonly ClusterSpec[], repositoryUrls: readonly string[]) => Promise<OwnCluster>

/** What a locator learnt from the cluster: its bootstrap, none, or why it could not be read. */
export type BootstrapReading = { readonly bootstrap: FluxBootstrap | undefined } | { readonly unreadable: string }

/** Reads the cluster's bootstrap once connected (connect is the run's own, shared with the trigger). */
export function clusterLocator(connect: () => Promise<ClusterClient>): LocateCluster {
  return async (trees, urls) => ownCluster(trees, await readBootstrap(connect), urls)
}

async function readBootstrap(connect: () => Promise<ClusterClient>): Promise<BootstrapReading> {
  const cluster = await connect()
  try {
    return { bootstrap: await cluster.getBootstrap() }
  } catch (error) {
    if (error instanceof ForbiddenError) return { unreadable: messageOf(error) }
    throw error
  }
}

/** The decision, pure: the tree whose path is the live bootstrap's, when it reads this repository. */
export function ownCluster(trees: readonly ClusterSpec[], reading: BootstrapReading, repositoryUrls: readonly string[]): OwnCluster {
  const roots = trees.map((t) => quoted(t.root)).join(', ')
  const fix = `set the cluster-root input to this cluster's tree, or plan and trigger every cluster with the fleet workflow (clusters: discover)`
  if ('unreadable' in reading) {
    throw new ConfigurationError(
      `This repository holds ${trees.length} cluster trees (${roots}) and the cluster's Flux bootstrap (Kustomization and GitRepository flux-system/flux-system) could not be read (${reading.unreadable}): grant get on them, or ${fix}.`,
    )
  }
  const { bootstrap } = reading
  if (bootstrap === undefined) {
    throw new ConfigurationError(
      `This repository holds ${trees.length} cluster trees (${roots}) and the cluster has no Flux Kustomization flux-system/flux-system to tell which is its own: ${fix}.`,
    )
  }
  const path = normalisePath(bootstrap.path)
  const tree = trees.find((t) => t.root === path)
  const keys = new Set(repositoryUrls.map(repositoryKey))
  const elsewhere = bootstrap.url !== undefined && keys.size > 0 && !keys.has(repositoryKey(bootstrap.url))
  if (tree === undefined || elsewhere) {
    const synced = bootstrap.url === undefined ? quoted(bootstrap.source) : quoted(repositoryKey(bootstrap.url))
    throw new ConfigurationError(
      `The cluster's Flux bootstrap applies ${quoted(bootstrap.path)} of ${synced}, which is none of this repository's ${trees.length} cluster trees (${roots}): ${fix}.`,
    )
  }
  return { tree, reading: `The cluster's Flux bootstrap (flux-system/flux-system) applies ${quoted(tree.root)}: only cluster ${quoted(tree.name)} is planned.` }
}
