// The latency floor of the watch scenario: a bare client in a process of its own that watches
// the labelled ConfigMaps of one namespace and, the moment an update arrives, merge-patches
// requestedAt on the release the ConfigMap names (no cache, no digest, no Event). It copies
// the ConfigMap's `revision` into an annotation, so the bench knows which change each patch
// answers. Prints "ready" once its watch is open; runs until SIGTERM.
//
//   node --experimental-strip-types bench/watch-floor.ts '{"server":…,"namespace":…}'

import { expectStatus, openSession, openWatch, type ApiTarget } from './http2.ts'

export interface FloorJob extends ApiTarget {
  readonly namespace: string
  readonly labelSelector: string
  /** Annotation on the ConfigMap naming its release. */
  readonly targetKey: string
  /** Annotation the patch writes the ConfigMap's data.revision into. */
  readonly revisionKey: string
}

const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt'

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as FloorJob
  const session = await openSession(job)
  const base = `/api/v1/namespaces/${job.namespace}/configmaps`
  const list = await session.request('GET', `${base}?labelSelector=${encodeURIComponent(job.labelSelector)}&limit=1`)
  expectStatus(list, [200], 'listing ConfigMaps')
  const resourceVersion = (JSON.parse(list.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion
  const query = `watch=1&labelSelector=${encodeURIComponent(job.labelSelector)}&resourceVersion=${resourceVersion}&timeoutSeconds=3600`
  const watch = await openWatch(job, `${base}?${query}`, (event) => {
    if (event.type !== 'MODIFIED') return
    const object = event.object as { metadata?: { annotations?: Record<string, string> }; data?: Record<string, string> }
    const release = object.metadata?.annotations?.[job.targetKey]
    if (release === undefined) return
    const body = { metadata: { annotations: { [REQUESTED_AT]: new Date().toISOString(), [job.revisionKey]: object.data?.['revision'] ?? '' } } }
    const path = `/apis/helm.toolkit.fluxcd.io/v2/namespaces/${job.namespace}/helmreleases/${release}`
    // A failed patch is reported, not fatal: the bench counts the change as never seen.
    session.request('PATCH', path, body, 'application/merge-patch+json').then(
      (response) => void (response.status === 200 || process.stderr.write(`patching ${release}: HTTP ${response.status}\n`)),
      (error: unknown) => void process.stderr.write(`patching ${release}: ${String(error)}\n`),
    )
  })
  process.stdout.write('ready\n')
  const stop = (): void => {
    void watch.close().then(() => session.close())
  }
  process.once('SIGTERM', stop)
  await watch.ended
}

main().catch((error: unknown) => {
  process.stderr.write(`watch floor failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exitCode = 1
})
