// Watch mode across apiserver and etcd restarts, on a cluster of its own (the shared one is
// never disturbed): after each restart the reflectors reconnect, list again and trigger what
// changed meanwhile. The churn test keeps writing while restarting (SIGTERM and SIGKILL)
// for WATCH_CHURN_SECONDS (default 300, five minutes; set it lower for a quick local run)
// and then requires every release to hold the digest of its source's final content.
// recover-interval is tested here too: with no helm-controller, a failure written by hand stays.

import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { liveDigest } from '../../src/core/digest.ts'
import { startCluster, type LocalCluster } from '../../test/support/cluster.ts'
import { HELM_RELEASE, helmRelease } from '../../test/support/flux.ts'
import { sleep, waitFor } from '../../test/support/kube.ts'
import { startWatch, type WatchHandle } from '../../test/support/watch.ts'

const LABEL = { 'nebius.ai/helmrelease-trigger-operator': 'true' }
const CHURN_SECONDS = Number(process.env['WATCH_CHURN_SECONDS'] ?? '300')

let cluster: LocalCluster
let core: CoreV1Api
let custom: CustomObjectsApi

beforeAll(async () => {
  cluster = await startCluster({ log: (line) => process.stderr.write(`[restart-cluster] ${line}\n`) })
  core = cluster.kubeconfig.makeApiClient(CoreV1Api)
  custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi)
}, 300_000)

afterAll(async () => {
  await cluster?.stop()
})

async function configMap(namespace: string, name: string, data: Record<string, string>): Promise<void> {
  const body = { metadata: { name, namespace, labels: LABEL }, data }
  try {
    await core.replaceNamespacedConfigMap({ namespace, name, body })
  } catch {
    await core.createNamespacedConfigMap({ namespace, body })
  }
}

async function release(namespace: string, name: string, source: string): Promise<void> {
  const body = helmRelease({ namespace, name, valuesFrom: [{ kind: 'ConfigMap', name: source }] })
  await custom.patchNamespacedCustomObject(
    { ...HELM_RELEASE, namespace, name, body, fieldManager: 'tests', force: true },
    setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
  )
}

async function recorded(namespace: string, name: string): Promise<Record<string, string>> {
  const object = (await custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace, name })) as { metadata?: { annotations?: Record<string, string> } }
  return JSON.parse(object.metadata?.annotations?.['nebius.ai/config-digest'] ?? '{}') as Record<string, string>
}

/** The digest of the source's content as the cluster holds it now. */
async function liveOf(namespace: string, name: string): Promise<string> {
  const cm = await core.readNamespacedConfigMap({ namespace, name })
  return liveDigest({ kind: 'ConfigMap', data: cm.data ?? {}, binaryData: cm.binaryData ?? {}, labels: {} }, true)
}

/** Every release records the digest of its source's current content. */
async function converged(namespace: string, count: number, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      for (let i = 0; i < count; i++) {
        const id = `ConfigMap/${namespace}/values-${i}`
        if ((await recorded(namespace, `app-${i}`))[id] !== (await liveOf(namespace, `values-${i}`))) return false
      }
      return true
    },
    { timeoutMs, intervalMs: 250, message: `all ${count} releases in ${namespace} to record their source's final digest` },
  )
}

async function setUp(prefix: string, count: number): Promise<string> {
  const namespace = `${prefix}-${Math.random().toString(16).slice(2, 8)}`
  await cluster.createNamespace(namespace)
  for (let i = 0; i < count; i++) {
    await configMap(namespace, `values-${i}`, { v: '0' })
    await release(namespace, `app-${i}`, `values-${i}`)
  }
  return namespace
}

function watch(namespace: string): WatchHandle {
  return startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: namespace }, backoff: { minMs: 200, maxMs: 2_000 } })
}

describe('watch mode across apiserver and etcd restarts', () => {
  it('recovers from an apiserver restart and an etcd kill, and misses no change made around them', async () => {
    const ns = await setUp('watch-restart', 3)
    const w = watch(ns)
    try {
      await w.synced()
      await converged(ns, 3, 20_000)

      await cluster.restart('kube-apiserver', { downMs: 1_000 })
      // Written the moment the apiserver is back, before our watches had a chance to reconnect.
      await configMap(ns, 'values-0', { v: 'after-apiserver-restart' })
      await converged(ns, 3, 30_000)

      await cluster.restart('etcd', { kill: true, downMs: 1_000 })
      await waitFor(async () => (await core.listNamespace()).items.length > 0, { timeoutMs: 30_000 })
      await configMap(ns, 'values-1', { v: 'after-etcd-kill' })
      await configMap(ns, 'values-2', { v: 'after-etcd-kill' })
      await converged(ns, 3, 30_000)

      const m = await w.metrics()
      expect(m.value('helmrelease_trigger_watch_watch_restarts_total')).toBeGreaterThan(0)
      expect(m.value('helmrelease_trigger_watch_triggers_total', { result: 'failed' })).toBe(0)
      expect((await w.readyz()).status).toBe(200)
    } finally {
      await w.stop()
    }
  })

  it('runs recover on its interval in the same process (no helm-controller here: the failure is written by hand)', async () => {
    const namespace = await setUp('watch-recover', 1)
    const now = new Date().toISOString()
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...HELM_RELEASE,
        namespace,
        name: 'app-0',
        body: {
          status: {
            conditions: [
              { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed: context deadline exceeded', lastTransitionTime: now },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    const w = startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: namespace, 'recover-interval': '1s' } })
    try {
      await w.synced()
      await w.line('recover pass done', { recovered: 1 }, 20_000)
      const object = (await custom.getNamespacedCustomObject({ ...HELM_RELEASE, namespace, name: 'app-0' })) as {
        metadata: { annotations: Record<string, string> }
      }
      expect(object.metadata.annotations['nebius.ai/recover-attempts']).toBe('1')
      expect(object.metadata.annotations['reconcile.fluxcd.io/resetAt']).toBe(object.metadata.annotations['reconcile.fluxcd.io/requestedAt'])
      // The next pass backs off (recover-backoff 5m): no second attempt.
      await w.line('recover pass done', { recovered: 0 }, 10_000)
    } finally {
      await w.stop()
    }
  })

  it(
    `misses no change across ${CHURN_SECONDS} s of writes with apiserver and etcd restarts`,
    async () => {
      const count = 8
      const ns = await setUp('watch-churn', count)
      const w = watch(ns)
      const until = Date.now() + CHURN_SECONDS * 1000
      let writes = 0
      let failedWrites = 0
      let restarts = 0
      try {
        await w.synced()
        await converged(ns, count, 20_000)
        const writer = (async () => {
          for (let n = 1; Date.now() < until; n++) {
            try {
              await configMap(ns, `values-${n % count}`, { v: String(n) })
              writes++
            } catch {
              failedWrites++ // the apiserver or etcd is down: the next write goes on
            }
            await sleep(50)
          }
        })()
        const disrupter = (async () => {
          const components = ['kube-apiserver', 'etcd'] as const
          for (let i = 0; Date.now() + 15_000 < until; i++) {
            await sleep(5_000 + Math.random() * 5_000)
            await cluster.restart(components[i % 2] ?? 'kube-apiserver', { kill: i % 3 === 2, downMs: Math.round(Math.random() * 2_000) })
            restarts++
          }
        })()
        await Promise.all([writer, disrupter])
        await waitFor(async () => (await core.listNamespace()).items.length > 0, { timeoutMs: 30_000 })
        await converged(ns, count, 60_000)
        const m = await w.metrics()
        process.stderr.write(
          `[watch churn] ${CHURN_SECONDS} s: ${writes} writes (${failedWrites} refused during outages), ${restarts} restarts, ${m.value('helmrelease_trigger_watch_watch_restarts_total')} watch reopenings, ${m.value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })} patches; every release converged\n`,
        )
        expect(restarts).toBeGreaterThan(0)
        expect(writes).toBeGreaterThan(0)
      } finally {
        await w.stop()
      }
    },
    (CHURN_SECONDS + 180) * 1000,
  )
})
