// Step 3: from settings to a connected ClusterClient. Secrets found in the kubeconfig are
// handed to `mask` before anything else can print them.

import { createClusterClient, type ClusterClient } from './kube/cluster.ts'
import { loadKubeconfig } from './kube/kubeconfig.ts'
import { createObjectReader, type ObjectReader } from './kube/objects.ts'
import type { Settings } from './settings.ts'

export interface ConnectOptions {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly mask: (secret: string) => void
}

export function connect(settings: Settings, options: ConnectOptions): ClusterClient {
  // A base64 kubeconfig is one line: mask it whole, before decoding can fail and say anything.
  if (settings.kubeconfig !== undefined && !settings.kubeconfig.includes('\n')) options.mask(settings.kubeconfig)
  const loaded = loadKubeconfig({ kubeconfig: settings.kubeconfig, encoding: settings.kubeconfigEncoding, context: settings.context, env: options.env })
  for (const secret of loaded.secrets) options.mask(secret)
  return createClusterClient(loaded.config, loaded.server)
}

/** The same cluster, for reading arbitrary objects (drift). */
export function connectObjects(settings: Settings, options: ConnectOptions): ObjectReader {
  if (settings.kubeconfig !== undefined && !settings.kubeconfig.includes('\n')) options.mask(settings.kubeconfig)
  const loaded = loadKubeconfig({ kubeconfig: settings.kubeconfig, encoding: settings.kubeconfigEncoding, context: settings.context, env: options.env })
  for (const secret of loaded.secrets) options.mask(secret)
  return createObjectReader(loaded.config, loaded.server)
}
