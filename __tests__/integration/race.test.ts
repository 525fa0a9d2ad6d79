// Two runs of the engine for consecutive commits racing on the same releases, against the
// real apiserver (helm-controller writing status meanwhile): the older run must never put
// its digests over the newer run's, and no release may be left untriggered.

import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { connect } from '../../src/kube/connect.ts'
import { contentOfConfigMap, digestOf } from '../../src/core/digest.ts'
import { createGitReader } from '../../src/git/reader.ts'
import type { ClusterClient } from '../../src/kube/cluster.ts'
import { Status, type TriggerReport } from '../../src/engine/result.ts'
import { parseSettings } from '../../src/settings.ts'
import { runTrigger } from '../../src/modes/trigger/pipeline.ts'
import { systemClock } from '../../src/engine/ports.ts'
import { useCluster } from '../../test/support/context.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo } from '../../test/support/repo.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const repo = createRepo()
afterAll(() => repo.cleanup())

const RELEASES = 60
const ROUNDS = 4

const data = (level: number) => ({ 'values.yaml': `level: ${level}\n` })
const digest = (level: number) => digestOf(contentOfConfigMap({ data: data(level) }), { semantic: true })

function manifest(namespace: string, names: readonly string[], level: number): string {
  return triggerConfigMap({ name: 'settings', namespace, releases: `"${names.join(', ')}"`, values: `level: ${level}` })
}

/** `patched(n)` runs after the run's n-th patch request returns: the test's hook into the fan-out. */
async function run(
  before: string,
  after: string,
  inputs: Record<string, string>,
  patched: (n: number) => Promise<void> = async () => undefined,
): Promise<TriggerReport> {
  // A budget no loaded machine reaches: the test is about which run's patch lands last, and a
  // release left untried when the budget ran out (TimedOut) would say nothing about that.
  const all: Record<string, string> = { kubeconfig, wait: 'false', timeout: '2m', ...inputs }
  const settings = parseSettings((name) => all[name] ?? '')
  const git = await createGitReader({ cwd: repo.dir })
  const log = { info: () => undefined, warning: () => undefined }
  return runTrigger(
    settings,
    { eventName: 'push', event: { before, after }, sha: after, runUrl: undefined, refused: undefined },
    { git, connect: async () => observed(connect(settings, { env: {}, mask: () => undefined }), patched), clock: systemClock, log },
  )
}

function observed(client: ClusterClient, patched: (n: number) => Promise<void>): ClusterClient {
  let n = 0
  return Object.assign(Object.create(client) as ClusterClient, {
    patchRelease: async (...args: Parameters<ClusterClient['patchRelease']>) => {
      const release = await client.patchRelease(...args)
      await patched(++n)
      return release
    },
  })
}

describe('two runs for consecutive commits racing on the same releases', () => {
  it(`leave every release triggered by the newer commit with its digest (${RELEASES} releases × ${ROUNDS} rounds)`, async () => {
    const ns = await cluster.createNamespace('race')
    const names = Array.from({ length: RELEASES }, (_, i) => `r${i}`)
    for (const name of names) await cluster.applyHelmRelease({ namespace: ns, name, repository: 'absent' })
    await cluster.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings', namespace: ns }, data: data(0) } })
    const setLive = (level: number) =>
      cluster.core.replaceNamespacedConfigMap({ namespace: ns, name: 'settings', body: { metadata: { name: 'settings', namespace: ns }, data: data(level) } })

    repo.write({ 'cm.yaml': manifest(ns, names, 0) })
    const commits = [repo.commit('level 0')]
    const tally = { olderTriggered: 0, olderSuperseded: 0, olderFailed: 0 }
    for (let round = 0; round < ROUNDS; round++) {
      const [older, newer] = [2 * round + 1, 2 * round + 2]
      for (const level of [older, newer]) {
        repo.write({ 'cm.yaml': manifest(ns, names, level) })
        commits.push(repo.commit(`level ${level}`))
      }
      const sha = (level: number) => commits[level] ?? ''
      // kustomize-controller's part: the older commit is live, then the newer one lands while
      // the older run is still patching (its fan-out is slowed to one release at a time).
      await setLive(older)
      // The newer content lands after the older run's k-th patch (k moves with the round).
      const switchAt = 1 + round * Math.floor(RELEASES / ROUNDS)
      const newerRun: Promise<TriggerReport>[] = []
      const olderReport = await run(sha(older - 1), sha(older), { 'max-concurrency': '1' }, async (n) => {
        if (n !== switchAt) return
        await setLive(newer)
        newerRun.push(run(sha(newer - 1), sha(newer), {}))
      })
      const newerReport = await (newerRun[0] ?? Promise.reject(new Error('the newer run never started')))

      // The newer run triggered every release; nothing older was written after it.
      expect(newerReport.results.map((r) => r.status)).toEqual(names.map(() => Status.Triggered))
      const tokens = new Map(newerReport.results.map((r) => [r.name, r.token]))
      for (const name of names) {
        const annotations = (await cluster.getHelmRelease(ns, name)).metadata.annotations ?? {}
        expect(JSON.parse(annotations['nebius.ai/config-digest'] ?? '{}'), `${name} in round ${round}`).toEqual({ [`ConfigMap/${ns}/settings`]: digest(newer) })
        expect(annotations['reconcile.fluxcd.io/requestedAt'], `${name} in round ${round}`).toBe(tokens.get(name))
      }
      // The older run triggered, stood down as superseded, or (its content gone before it looked) failed loudly.
      for (const r of olderReport.results) {
        if (r.status === Status.Triggered) tally.olderTriggered++
        else if (r.status === Status.Skipped && r.reason === 'Superseded') tally.olderSuperseded++
        else if (r.status === Status.Failed && r.reason === 'SourceNotApplied') tally.olderFailed++
        else expect.fail(`older run: ${r.name} ${r.status} ${r.reason}: ${r.message}`)
      }
      expect(olderReport.results).toHaveLength(RELEASES)
    }
    // Both branches of the rule ran: some older patches went in before the newer content, some stood down.
    console.info(`race: ${RELEASES * ROUNDS} older-run releases: ${JSON.stringify(tally)}`)
    expect(tally.olderSuperseded).toBeGreaterThan(0)
  })
})
