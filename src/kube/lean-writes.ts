// The writes every mode makes per release, on the plain HTTP client watch mode also uses for its
// watches and Leases (raw-client.ts): a HelmRelease merge patch and an Event are one request
// each on a kept-alive connection, without the generated client's per-request work (a fetch
// through web streams, a TLS identity check and a throw-away undici Agent per request: ~20 % of
// the watch's CPU at 100 changes/s, and most of the client's CPU in a fan-out). Same requests,
// same bounded retries, same one-sentence errors as cluster.ts.

import { HELMRELEASE, toHelmRelease } from '../core/helmrelease.ts'
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from '../lib/retry.ts'
import type { Request } from './api-error.ts'
import { eventBody, FIELD_MANAGER, type ClusterClient } from './cluster.ts'
import type { RawClient } from './raw-client.ts'

export function leanWrites(raw: RawClient, retry: RetryPolicy = DEFAULT_RETRY): Pick<ClusterClient, 'patchRelease' | 'recordEvent'> {
  return {
    patchRelease: async (ref, patch, options) => {
      const query = `fieldManager=${FIELD_MANAGER}${options.dryRun ? '&dryRun=All' : ''}`
      const path = `/apis/${HELMRELEASE.group}/${HELMRELEASE.version}/namespaces/${encodeURIComponent(ref.namespace)}/${HELMRELEASE.plural}/${encodeURIComponent(ref.name)}?${query}`
      const metadata = {
        annotations: patch.annotations,
        labels: patch.labels,
        ...(patch.resourceVersion === undefined ? {} : { resourceVersion: patch.resourceVersion }),
      }
      const describe: Request = { verb: 'patch', resource: HELMRELEASE.plural, group: HELMRELEASE.group, namespace: ref.namespace, name: ref.name }
      const answer = await withRetry(
        () => raw.json({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body: { metadata }, describe }),
        retry,
      )
      return toHelmRelease(answer)
    },

    recordEvent: async (event, options) => {
      const namespace = event.release.namespace
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/events${options.dryRun ? '?dryRun=All' : ''}`
      const describe: Request = { verb: 'create', resource: 'events', group: '', namespace }
      await withRetry(() => raw.json({ method: 'POST', path, body: eventBody(event, new Date()), describe }), retry)
    },
  }
}
