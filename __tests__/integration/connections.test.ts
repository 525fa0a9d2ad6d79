// One connection pool per ClusterClient (client-node 2.0.1 would open a connection per
// request), with authentication still applied to every request, for token and exec
// kubeconfigs, and a new pool when the TLS material changes.

import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { KubeConfig } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { createClusterClient, type ClusterClient } from '../../src/kube/cluster.ts'
import { useCluster } from '../../test/support/context.ts'

const cluster = useCluster()

/** New connections opened while `fn` runs (nothing else in this file talks to the cluster meanwhile). */
async function connectionsDuring(fn: () => Promise<void>): Promise<number> {
  let opened = 0
  const count = (): void => {
    opened++
  }
  subscribe('undici:client:connected', count)
  try {
    await fn()
  } finally {
    unsubscribe('undici:client:connected', count)
  }
  return opened
}

function kubeconfig(user: Record<string, unknown>, tlsServerName?: string): KubeConfig {
  const config = new KubeConfig()
  config.loadFromOptions({
    clusters: [{ name: 'local', server: cluster.server, caData: cluster.caData, ...(tlsServerName === undefined ? {} : { tlsServerName }) }],
    users: [{ name: 'user', ...user }],
    contexts: [{ name: 'local', cluster: 'local', user: 'user' }],
    currentContext: 'local',
  })
  return config
}

/** Many calls, 10 at a time, each of which needs the identity's credentials. */
async function calls(client: ClusterClient, namespace: string): Promise<void> {
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? client.getRelease({ namespace, name: `app-${i}` }) : client.listReleases(namespace))))
  }
}

describe('ClusterClient connections', () => {
  it('sends every request of a token kubeconfig over one connection', async () => {
    const namespace = await cluster.createNamespace('conn-token')
    await cluster.applyHelmRelease({ namespace, name: 'app-0', repository: 'absent' })
    const client = createClusterClient(kubeconfig({ token: cluster.adminToken }), cluster.server)
    expect(await connectionsDuring(() => calls(client, namespace))).toBe(1)
    expect((await client.getRelease({ namespace, name: 'app-0' }))?.name).toBe('app-0')
  })

  it("applies an exec plugin's credential to every request over the shared connection", async () => {
    const namespace = await cluster.createNamespace('conn-exec')
    const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: cluster.adminToken } })
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`],
      interactiveMode: 'Never',
    }
    const client = createClusterClient(kubeconfig({ exec }), cluster.server)
    expect(await connectionsDuring(() => calls(client, namespace))).toBe(1)
  })

  it('opens a new pool when the TLS material changes, and verifies the server with it', async () => {
    const namespace = await cluster.createNamespace('conn-rotate')
    const config = kubeconfig({ token: cluster.adminToken })
    const client = createClusterClient(config, cluster.server)
    const first = await connectionsDuring(() => calls(client, namespace))
    // The same server under another of the names its certificate carries: new TLS options.
    config.clusters = config.clusters.map((c) => ({ ...c, tlsServerName: 'kubernetes' }))
    const second = await connectionsDuring(() => calls(client, namespace))
    expect([first, second]).toEqual([1, 1])
    // A name the certificate does not carry: the new material is really used, and refused.
    config.clusters = config.clusters.map((c) => ({ ...c, tlsServerName: 'not-in-the-certificate.invalid' }))
    await expect(client.getRelease({ namespace, name: 'app-0' })).rejects.toThrow()
  })
})
