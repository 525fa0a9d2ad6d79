// wait-for-apply's reaction to the apply it waits for, on one local apiserver: a ConfigMap is
// read (as the wait's first read), then updated (as kustomize-controller's apply would), and
// the time from sending the update to the wait seeing the new content is taken, with the
// watch on the source (source-changes.ts) and with the 200 ms poll it falls back to.
// Not part of `npm run bench`; run on its own:
//   node --experimental-strip-types bench/apply-wait.ts

import type { ClusterClient } from '../src/kube/cluster.ts'
import { sourceChanges } from '../src/modes/trigger/source-changes.ts'
import { startCluster } from '../test/support/cluster.ts'
import { clusterClients } from './cluster-clients.ts'
import { median, quantile, sleep } from './lib.ts'

const CHANGES = 15
const POLL_MS = 200
const cluster = await startCluster({ flux: false, log: () => undefined })
try {
  const { raw, client } = clusterClients(cluster)
  const ref = { kind: 'ConfigMap', namespace: 'default', name: 'values' } as const
  const path = '/api/v1/namespaces/default/configmaps'
  const describe = { verb: 'create', resource: 'configmaps', group: '', namespace: 'default' } as const
  await raw.json({ method: 'POST', path, body: { metadata: { name: 'values', namespace: 'default' }, data: { v: '0' } }, describe })
  let revision = 0
  for (const [method, cluster_] of [
    ['watch on the source', client],
    ['poll every 200 ms (no watch)', { ...client, watchSource: undefined }],
  ] as const) {
    const seen: number[] = []
    const trips: number[] = []
    for (let i = 0; i < CHANGES; i++) {
      const first = await client.getSource(ref)
      const changes = sourceChanges(cluster_ satisfies ClusterClient, ref, first?.resourceVersion)
      const want = String(++revision)
      // The apply lands at a random point of the poll's period, as it would.
      let sentAt = Number.NaN
      const applied = sleep(Math.random() * POLL_MS)
        .then(() => (sentAt = performance.now()))
        .then(() =>
          raw.json({
            method: 'PATCH',
            path: `${path}/values`,
            contentType: 'application/merge-patch+json',
            body: { data: { v: want } },
            describe: { ...describe, verb: 'patch' },
          }),
        )
        .then(() => performance.now())
      let seenAt = Number.NaN
      while (Number.isNaN(seenAt)) {
        const next = await changes.next(changes.watching ? 1_000 : POLL_MS, sleep)
        const live = next === undefined ? await client.getSource(ref) : next.live
        if (live?.data['v'] === want) seenAt = performance.now()
      }
      changes.stop()
      const answered = await applied
      seen.push(seenAt - sentAt)
      trips.push(answered - sentAt)
    }
    const line = `update sent → seen median ${median(seen).toFixed(1)} ms, p95 ${quantile(seen, 0.95).toFixed(1)} ms (the update's own round trip: median ${median(trips).toFixed(1)} ms)`
    console.log(`${method}: ${CHANGES} applies, ${line}`)
  }
} finally {
  await cluster.stop()
}
