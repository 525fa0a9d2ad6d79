// The watch mode's clients, from the same kubeconfig rules as every mode: the engine's
// ClusterClient, the list/watch client of the reflectors, and the leader-election Lease.

import { createClusterClient, type ClusterClient } from '../kube/cluster.ts'
import { loadKubeconfig } from '../kube/kubeconfig.ts'
import { createLeaseStore, type LeaseStore } from '../kube/lease.ts'
import { createListWatchClient, type ListWatchClient } from '../kube/list-watch.ts'
import { createRawClient } from '../kube/raw-client.ts'
import type { ConnectOptions } from '../connect.ts'
import type { Settings } from '../settings.ts'

export interface WatchConnection {
  readonly cluster: ClusterClient
  readonly lists: ListWatchClient
  lease(namespace: string, name: string): LeaseStore
}

export function connectWatch(settings: Settings, options: ConnectOptions): WatchConnection {
  if (settings.kubeconfig !== undefined && !settings.kubeconfig.includes('\n')) options.mask(settings.kubeconfig)
  const loaded = loadKubeconfig({ kubeconfig: settings.kubeconfig, encoding: settings.kubeconfigEncoding, context: settings.context, env: options.env })
  for (const secret of loaded.secrets) options.mask(secret)
  const raw = createRawClient(loaded.config, loaded.server)
  return {
    cluster: createClusterClient(loaded.config, loaded.server),
    lists: createListWatchClient(raw),
    lease: (namespace, name) => createLeaseStore(raw, namespace, name),
  }
}
