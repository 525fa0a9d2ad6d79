// Vitest global setup of the `cluster` project: ONE real local cluster with Flux for
// the whole run, handed to the test files with `provide` (see context.ts for the
// tests' side). HELMRELEASE_TRIGGER_CLUSTER=<dir> reuses a cluster started with
// `npm run cluster -- up --flux` instead (its dir is .cluster).

import type { TestProject } from 'vitest/node'
import { startCluster, type Versions } from './cluster.ts'
import { isSupervisor, readClusterState } from './cluster-state.ts'

/** What test files get from `inject('cluster')`. */
export interface ProvidedCluster {
  readonly kubeconfigPath: string
  readonly server: string
  readonly adminToken: string
  /** Base64 PEM of the apiserver's CA. */
  readonly caData: string
  /** Base URL of the loopback Helm repository (no trailing slash). */
  readonly chartRepoUrl: string
  /** Base URL of the loopback git server (no trailing slash); see git-server.ts. */
  readonly gitServerUrl: string
  /** Base URL of the loopback OCI registry (no trailing slash); undefined without Flux. */
  readonly ociRegistryUrl: string | undefined
  readonly versions: Versions
}

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ProvidedCluster
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const reuse = process.env.HELMRELEASE_TRIGGER_CLUSTER
  if (reuse) {
    const state = await readClusterState(reuse)
    if (!state || !isSupervisor(state.supervisorPid) || !state.flux) {
      throw new Error(`HELMRELEASE_TRIGGER_CLUSTER=${reuse}: no running cluster with Flux there; start one with \`npm run cluster -- up --flux\``)
    }
    project.provide('cluster', pick(state))
    return async () => {}
  }

  const cluster = await startCluster({ flux: true, log: (line) => process.stderr.write(`[cluster] ${line}\n`) })
  project.provide('cluster', pick(cluster))
  return () => cluster.stop()
}

function pick(source: ProvidedCluster): ProvidedCluster {
  const { kubeconfigPath, server, adminToken, caData, chartRepoUrl, gitServerUrl, ociRegistryUrl, versions } = source
  return { kubeconfigPath, server, adminToken, caData, chartRepoUrl, gitServerUrl, ociRegistryUrl, versions }
}
