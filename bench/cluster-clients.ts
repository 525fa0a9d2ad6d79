// The clients the stand-alone benches use on a local apiserver: the kubeconfig loaded, the
// plain client (raw-client.ts) and the generated one (createClusterClient). In a module of
// its own so the scenarios that import lib.ts do not load client-node.

import { KubeConfig } from '@kubernetes/client-node'
import { createClusterClient, type ClusterClient } from '../src/kube/cluster.ts'
import { createRawClient, type RawClient } from '../src/kube/raw-client.ts'
import type { LocalCluster } from '../test/support/cluster.ts'

export interface ClusterClients {
  readonly raw: RawClient
  readonly client: ClusterClient
}

export function clusterClients(cluster: Pick<LocalCluster, 'kubeconfigPath'>): ClusterClients {
  const config = new KubeConfig()
  config.loadFromFile(cluster.kubeconfigPath)
  const server = config.getCurrentCluster()?.server ?? ''
  return { raw: createRawClient(config, server), client: createClusterClient(config, server) }
}
