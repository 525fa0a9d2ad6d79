// From the kubeconfig settings to connected clients: the ClusterClient of every mode, the
// object reader of drift, and watch mode's list/watch and Lease clients. Secrets found in the
// kubeconfig are handed to `mask` before anything else can print them.

import { createClusterClient, type ClusterClient } from './cluster.ts'
import { loadKubeconfig, type KubeconfigEncoding, type LoadedKubeconfig } from './kubeconfig.ts'
import { createLeaseStore, type LeaseStore } from './lease.ts'
import { createListWatchClient, type ListWatchClient } from './list-watch.ts'
import { createObjectReader, type ObjectReader } from './objects.ts'
import { leanWrites } from './lean-writes.ts'
import { createRawClient, type RawClient } from './raw-client.ts'
import { DEFAULT_RETRY, outagePatience, type RetryPolicy } from '../lib/retry.ts'

/** Which kubeconfig, how it is encoded and which context (the settings' kubeconfig inputs), and the run's timeout. */
export interface KubeTarget {
  readonly kubeconfig: string | undefined
  readonly kubeconfigEncoding: KubeconfigEncoding
  readonly context: string | undefined
  /** Also how long a run's calls wait out an outage of an apiserver that answered before it. */
  readonly timeoutMs: number
}

export interface ConnectOptions {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly mask: (secret: string) => void
}

export interface WatchConnection {
  readonly cluster: ClusterClient
  readonly lists: ListWatchClient
  lease(namespace: string, name: string): LeaseStore
}

export function connect(target: KubeTarget, options: ConnectOptions): ClusterClient {
  const loaded = loadAndMask(target, options)
  return clusterClient(loaded, createRawClient(loaded.config, loaded.server), patientRetry(target))
}

/** The same cluster, for reading arbitrary objects (drift). */
export function connectObjects(target: KubeTarget, options: ConnectOptions): ObjectReader {
  const loaded = loadAndMask(target, options)
  return createObjectReader(loaded.config, loaded.server, { retry: patientRetry(target) })
}

/**
 * The watch mode's clients: the engine's ClusterClient, the reflectors' list/watch client and the
 * leader-election Lease. No patience with an outage: the reflectors relist when the apiserver
 * is back, and that reconciles whatever a failed patch left behind.
 */
export function connectWatch(target: KubeTarget, options: ConnectOptions): WatchConnection {
  const loaded = loadAndMask(target, options)
  const raw = createRawClient(loaded.config, loaded.server)
  return {
    cluster: clusterClient(loaded, raw, DEFAULT_RETRY),
    lists: createListWatchClient(raw),
    lease: (namespace, name) => createLeaseStore(raw, namespace, name),
  }
}

/** Reads on the generated client; patches and Events, one per release of a fan-out, on the plain client `raw` (lean-writes.ts). */
function clusterClient(loaded: LoadedKubeconfig, raw: RawClient, retry: RetryPolicy): ClusterClient {
  return { ...createClusterClient(loaded.config, loaded.server, { retry }), ...leanWrites(raw, retry) }
}

/** One patience per connection: both clients see the same apiserver go and come back. */
function patientRetry(target: KubeTarget): RetryPolicy {
  return { ...DEFAULT_RETRY, patience: outagePatience(target.timeoutMs) }
}

function loadAndMask(target: KubeTarget, options: ConnectOptions): LoadedKubeconfig {
  // A base64 kubeconfig is one line: mask it whole, before decoding can fail and say anything.
  if (target.kubeconfig !== undefined && !target.kubeconfig.includes('\n')) options.mask(target.kubeconfig)
  const loaded = loadKubeconfig({ kubeconfig: target.kubeconfig, encoding: target.kubeconfigEncoding, context: target.context, env: options.env })
  for (const secret of loaded.secrets) options.mask(secret)
  return loaded
}
