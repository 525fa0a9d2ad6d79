// Mode recover with the real helm-controller: a release failed on a transient-looking error
// is re-triggered and recovers once the cause is gone; a non-transient failure and a
// suspended release are left alone; the attempt budget and the backoff hold.

import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createClusterClient } from '../../src/kube/cluster.ts'
import { createOutcomeWaiter } from '../../src/engine/outcome.ts'
import { runRecover } from '../../src/modes/recover/run.ts'
import { parseSettings } from '../../src/settings.ts'
import { systemClock } from '../../src/engine/ports.ts'
import { runAction } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { condition, HELM_RELEASE, type FluxObject } from '../../test/support/flux.ts'
import { createRepo } from '../../test/support/repo.ts'
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { tableUnder } from '../../test/support/markdown.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const log = { info: () => undefined, warning: () => undefined }

/** A namespace whose release `app` failed with `message` (rendered by the demo chart's `fail`). */
async function failedRelease(prefix: string, message: string): Promise<string> {
  const namespace = await cluster.createNamespace(prefix)
  await cluster.applyHelmRepository(namespace)
  await cluster.applyValues(namespace, `fail: "${message}"`)
  await cluster.applyHelmRelease({ namespace, name: 'app', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
  await cluster.waitFor(async () => condition(await cluster.getHelmRelease(namespace, 'app'), 'Ready')?.message?.includes(message) ?? false, {
    timeoutMs: 120_000,
  })
  return namespace
}

function annotations(object: FluxObject): Readonly<Record<string, string>> {
  return object.metadata.annotations ?? {}
}

function parsed(run: { outputs: Readonly<Record<string, string>> }, name: string): { name: string; status: string; reason: string; message: string }[] {
  return JSON.parse(run.outputs[name] ?? '[]')
}

describe('recover with the real helm-controller', () => {
  it('re-triggers a release failed on a transient error and brings it back to Ready; the next run resets its budget', async () => {
    const ns = await failedRelease('recover-transient', 'context deadline exceeded')
    // Let helm-controller's own retry backoff grow, so the recovery is ours, not its next retry.
    await cluster.waitFor(async () => Number((await cluster.getHelmRelease(ns, 'app')).status?.['failures'] ?? 0) >= 4, { timeoutMs: 120_000 })
    await cluster.applyValues(ns, 'greeting: back')
    const repo = createRepo()
    try {
      const sha = repo.commit('empty')
      const run = await runAction({
        workspace: repo.dir,
        eventName: 'schedule',
        event: {},
        sha,
        inputs: { mode: 'recover', kubeconfig, namespaces: ns, timeout: '90s' },
      })
      expect(run.exitCode, run.stdout).toBe(0)
      expect(parsed(run, 'triggered')).toEqual([expect.objectContaining({ name: 'app', status: 'Upgraded' })])
      const live = await cluster.getHelmRelease(ns, 'app')
      expect(condition(live, 'Ready')?.status).toBe('True')
      const a = annotations(live)
      expect(a['reconcile.fluxcd.io/resetAt']).toBe(a['reconcile.fluxcd.io/requestedAt'])
      expect(a['nebius.ai/recover-attempts']).toBe('1')
      expect((await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'app' })).data?.['greeting']).toBe('back')
      expect(tableUnder(run.summary, 'Releases').map((row) => row[1])).toContain(`${ns}/app`)

      const next = await runAction({ workspace: repo.dir, eventName: 'schedule', event: {}, sha, inputs: { mode: 'recover', kubeconfig, namespaces: ns } })
      expect(next.exitCode).toBe(0)
      expect(parsed(next, 'skipped')).toEqual([expect.objectContaining({ name: 'app', reason: 'BudgetReset' })])
      expect(annotations(await cluster.getHelmRelease(ns, 'app'))['nebius.ai/recover-attempts']).toBeUndefined()
    } finally {
      repo.cleanup()
    }
  })

  it('leaves a non-transient failure and a suspended release untouched', async () => {
    const broken = await failedRelease('recover-broken', 'invalid value')
    const paused = await failedRelease('recover-paused', 'context deadline exceeded')
    await cluster.custom.patchNamespacedCustomObject(
      { ...HELM_RELEASE, namespace: paused, name: 'app', body: { spec: { suspend: true } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    const settings = parseSettings((n) => ({ namespaces: `${broken}\n${paused}` })[n] ?? '')
    const expected = [`${broken}:Skipped:NotTransient`, `${paused}:Skipped:Suspended`].sort()
    // helm-controller retries a failed release on its own, and while it does Ready is Unknown:
    // recover rightly does not list a release that is still being worked on. Wait for the state
    // in which both are settled failures (each run only reads here: it writes nothing to skip).
    let seen: string[] = []
    await cluster.waitFor(
      async () => {
        const report = await runRecover(settings, {
          connect: async () => createClusterClient(cluster.kubeconfig, cluster.server),
          clock: systemClock,
          log,
          outcome: createOutcomeWaiter({ clock: systemClock, log }),
        })
        seen = report.results.map((r) => `${r.namespace}:${r.status}:${r.reason}`).sort()
        return seen.length === expected.length
      },
      { timeoutMs: 120_000 },
    )
    expect(seen).toEqual(expected)
    for (const ns of [broken, paused]) expect(annotations(await cluster.getHelmRelease(ns, 'app'))['reconcile.fluxcd.io/requestedAt']).toBeUndefined()
  })

  it('stops after recover-max-attempts and honours the backoff between attempts', async () => {
    const ns = await failedRelease('recover-budget', 'context deadline exceeded')
    const connect = async () => createClusterClient(cluster.kubeconfig, cluster.server)
    const run = (backoff: string) =>
      runRecover(
        parseSettings((n) => ({ namespaces: ns, 'recover-max-attempts': '2', 'recover-backoff': backoff, wait: 'false' })[n] ?? ''),
        { connect, clock: systemClock, log },
      )
    // wait: false, so wait here until helm-controller has handled the last token and failed again.
    const failedAgain = async () =>
      cluster.waitFor(
        async () => {
          const live = await cluster.getHelmRelease(ns, 'app')
          return live.status?.lastHandledReconcileAt === annotations(live)['reconcile.fluxcd.io/requestedAt'] && condition(live, 'Ready')?.status === 'False'
        },
        { timeoutMs: 60_000 },
      )
    // helm-controller may still be retrying the failed release on its own, and while it does
    // Ready is Unknown: recover rightly lists nothing then, and writes nothing. Run again until
    // the settled failure is listed.
    const listed = (backoff: string) =>
      cluster.waitFor(
        async () => {
          const report = await run(backoff)
          return report.results.length > 0 ? report : undefined
        },
        { timeoutMs: 60_000 },
      )
    const reasons = async (backoff: string) => {
      const report = await listed(backoff)
      await failedAgain()
      return report.results.map((r) => r.reason)
    }

    expect(await reasons('1h')).toEqual(['RecoveryRequested'])
    expect(await reasons('1h')).toEqual(['BackingOff'])
    await new Promise((r) => setTimeout(r, 1_100))
    expect(await reasons('1s')).toEqual(['RecoveryRequested'])
    expect(annotations(await cluster.getHelmRelease(ns, 'app'))['nebius.ai/recover-attempts']).toBe('2')
    await new Promise((r) => setTimeout(r, 2_100))
    await failedAgain()
    const last = await listed('1s')
    expect(last.results).toEqual([expect.objectContaining({ reason: 'BudgetExhausted', severity: 'error' })])
  })
})
