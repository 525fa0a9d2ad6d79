// The deployed diff of a trigger run: each release's latest Helm revision read before it is
// patched (so a maxHistory prune during the upgrade cannot lose it), and, once helm-controller
// wrote a new one, the two compared (core/deployed-diff.ts). Reading Helm's storage needs `get`
// on its Secrets; without it the result says so and nothing else changes.

import { deployedDiff, type DeployedDiff } from '../../core/deployed-diff.ts'
import { decodeRelease, revisionSecret, StorageError, type StoredRelease } from '../../core/helm-storage.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import { releaseKey } from '../../core/model.ts'
import { Status, type ReleaseResult } from '../../engine/result.ts'
import { ForbiddenError } from '../../kube/api-error.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import { mapLimit } from '../../lib/concurrency.ts'
import { messageOf } from '../../lib/errors.ts'

/** A release's revision before the trigger, or why it could not be read. */
export type Before = { readonly release: StoredRelease } | { readonly unavailable: string }

/** The latest stored revision of each release, by `namespace/name`; releases never installed have none. */
export async function readBefore(cluster: ClusterClient, releases: readonly HelmRelease[], concurrency: number): Promise<Map<string, Before>> {
  const read = await mapLimit(releases, concurrency, async (r) => {
    const version = r.storage.recordedVersion
    if (version === undefined || r.storage.remote) return undefined
    return [releaseKey(r), await readRevision(cluster, r, version)] as const
  })
  return new Map(read.flatMap((e) => (e === undefined ? [] : [e])))
}

/** Each result whose release got a new Helm revision, with what that revision changed. */
export async function withDeployed(
  cluster: ClusterClient,
  results: readonly ReleaseResult[],
  before: ReadonlyMap<string, Before>,
  baseline: ReadonlyMap<string, HelmRelease>,
  concurrency: number,
): Promise<ReleaseResult[]> {
  return mapLimit(results, concurrency, async (result) => {
    const was = before.get(releaseKey(result))
    const live = baseline.get(releaseKey(result))
    const to = result.revisionAfter
    if (was === undefined || live === undefined || to === undefined || to === result.revisionBefore || !UPGRADED.has(result.status)) return result
    return { ...result, deployed: await diffOf(cluster, live, was, to) }
  })
}

/** A new revision was written: deployed, or failed after Helm stored it. */
const UPGRADED: ReadonlySet<string> = new Set([Status.Upgraded, Status.Failed, Status.TimedOut])

async function diffOf(cluster: ClusterClient, live: HelmRelease, was: Before, to: number): Promise<DeployedDiff> {
  if ('unavailable' in was) return was
  const now = await readRevision(cluster, live, to)
  if ('unavailable' in now) return now
  // Values from a Secret are never shown: a release reading one shows value paths only.
  return deployedDiff(
    was.release,
    now.release,
    live.valuesFrom.some((v) => v.kind === 'Secret'),
  )
}

async function readRevision(cluster: ClusterClient, release: HelmRelease, version: number): Promise<Before> {
  const secret = revisionSecret(release.storage, version)
  const where = `${secret.namespace}/${secret.name}`
  try {
    const live = await cluster.getSource({ kind: 'Secret', namespace: secret.namespace, name: secret.name })
    if (live === undefined) return { unavailable: `Helm revision ${version} is not in storage (${where}): pruned by maxHistory, or stored elsewhere` }
    return { release: decodeRelease(where, undefined, live.data) }
  } catch (error) {
    // Forbidden, corrupt or unreachable: the diff is not known, the trigger's result stands.
    const why =
      error instanceof ForbiddenError || error instanceof StorageError ? messageOf(error) : `Helm storage ${where} could not be read (${messageOf(error)})`
    return { unavailable: why }
  }
}
