// CPU per HelmRelease patch and Event of the watch mode: through the generated client
// (createClusterClient: client-node's fetch) and through the plain client watch uses
// (leanWrites on raw-client.ts), one after the other on one local apiserver, two rounds.
// Not part of `npm run bench`; run on its own:
//   node --experimental-strip-types bench/watch-writes.ts

import { toHelmRelease } from '../src/core/helmrelease.ts'
import type { ClusterClient } from '../src/kube/cluster.ts'
import { leanWrites } from '../src/kube/lean-writes.ts'
import { startCluster } from '../test/support/cluster.ts'
import { HELM_RELEASE, helmRelease } from '../test/support/flux.ts'
import { clusterClients } from './cluster-clients.ts'

const PER_ROUND = 300
const cluster = await startCluster({ flux: false, log: () => undefined })
try {
  const { raw, client: generated } = clusterClients(cluster)
  const path = `/apis/${HELM_RELEASE.group}/${HELM_RELEASE.version}/namespaces/default/${HELM_RELEASE.plural}`
  const describe = { verb: 'create', resource: HELM_RELEASE.plural, group: HELM_RELEASE.group, namespace: 'default' } as const
  await raw.json({ method: 'POST', path, body: helmRelease({ namespace: 'default', name: 'app', valuesFrom: [] }), describe })
  const clients: readonly (readonly [string, ClusterClient])[] = [
    ['generated client', generated],
    ['plain client', { ...generated, ...leanWrites(raw) }],
  ]
  const ref = { namespace: 'default', name: 'app' }
  const release = toHelmRelease({ metadata: ref, spec: {} })
  for (const round of [1, 2]) {
    for (const [name, client] of clients) {
      for (let i = 0; i < 30; i++) await client.patchRelease(ref, { annotations: { warm: String(i) }, labels: {} }, { dryRun: false })
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      for (let i = 0; i < PER_ROUND; i++) {
        await client.patchRelease(ref, { annotations: { bench: `${name}-${round}-${i}` }, labels: {} }, { dryRun: false })
        await client.recordEvent({ release, type: 'Normal', reason: 'Bench', message: 'bench' }, { dryRun: false })
      }
      const cpu = process.cpuUsage(cpu0)
      const perCpu = (cpu.user + cpu.system) / 1000 / PER_ROUND
      const perWall = (performance.now() - t0) / PER_ROUND
      console.log(`round ${round}, ${name}: ${PER_ROUND} patches + Events, CPU ${perCpu.toFixed(2)} ms and wall ${perWall.toFixed(2)} ms per patch + Event`)
    }
  }
} finally {
  await cluster.stop()
}
