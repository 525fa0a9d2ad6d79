// The key of Secret digests (core/digest.ts keyedDigest): 32 random bytes in a Secret of the
// cluster, created once by the operator, or by the first run when digest-key-create-role.yaml is
// bound (opt-in: an escalation while bound). It never leaves the cluster: never in the
// repository, a plan, a log or an output. Two runs at once: both create, one gets 409
// AlreadyExists and reads the winner's key back, so every run keys with the same bytes.

import { randomBytes } from 'node:crypto'
import type { DigestKey } from '../core/digest.ts'
import { ConfigurationError } from '../lib/errors.ts'
import { ConflictError, ForbiddenError } from './api-error.ts'
import type { ClusterClient } from './cluster.ts'

export const DIGEST_KEY_SECRET = 'helmrelease-trigger-digest-key'
const KEY_FIELD = 'key'
const KEY_BYTES = 32

export interface DigestKeyOptions {
  readonly namespace: string
  /** false (dry run): a missing key is not created; the run keys with bytes of its own, written nowhere. */
  readonly create: boolean
}

export type LoadedKey = { readonly key: DigestKey; readonly created: boolean; readonly ephemeral: boolean }

/** Reads the digest key, creating it when missing (get, then create, then on 409 get again). */
export async function loadDigestKey(cluster: Pick<ClusterClient, 'getSource' | 'createSecret'>, options: DigestKeyOptions): Promise<LoadedKey> {
  const ref = { kind: 'Secret', namespace: options.namespace, name: DIGEST_KEY_SECRET } as const
  const found = await cluster.getSource(ref)
  if (found !== undefined) return { key: keyOf(found.data, options.namespace), created: false, ephemeral: false }
  const bytes = randomBytes(KEY_BYTES)
  if (!options.create) return { key: { bytes }, created: false, ephemeral: true }
  try {
    await cluster.createSecret({
      namespace: options.namespace,
      name: DIGEST_KEY_SECRET,
      labels: { 'app.kubernetes.io/name': 'helmrelease-trigger', 'app.kubernetes.io/component': 'digest-key' },
      data: { [KEY_FIELD]: bytes.toString('base64') },
    })
    return { key: { bytes }, created: true, ephemeral: false }
  } catch (error) {
    if (error instanceof ForbiddenError) {
      // Not "grant create secrets": with get secrets it mints a ServiceAccount token (SECURITY.md).
      throw new ForbiddenError(
        `The digest key Secret ${options.namespace}/${DIGEST_KEY_SECRET} does not exist and this identity may not create it; create it once with \`${createCommand(options.namespace)}\`, or bind digest-key-create-role.yaml (deploy/rbac/, deploy/watch/) for the first run only and delete it afterwards.`,
        { cause: error },
      )
    }
    if (!(error instanceof ConflictError)) throw error
  }
  // Another run created it first: use its key.
  const raced = await cluster.getSource(ref)
  if (raced === undefined) {
    throw new ConfigurationError(`The digest key Secret ${options.namespace}/${DIGEST_KEY_SECRET} was reported to exist but cannot be read; run again.`)
  }
  return { key: keyOf(raced.data, options.namespace), created: false, ephemeral: false }
}

function keyOf(data: Readonly<Record<string, string>>, namespace: string): DigestKey {
  const bytes = Buffer.from(data[KEY_FIELD] ?? '', 'base64')
  if (bytes.length < KEY_BYTES) {
    throw new ConfigurationError(
      `The digest key Secret ${namespace}/${DIGEST_KEY_SECRET} has no '${KEY_FIELD}' of at least ${KEY_BYTES} bytes; delete it and create it again with \`${createCommand(namespace)}\` (each release reading a Secret is then triggered once).`,
    )
  }
  return { bytes: new Uint8Array(bytes) }
}

/** The one command that creates the key (the RBAC files' headers give the same). */
function createCommand(namespace: string): string {
  return `kubectl -n ${namespace} create secret generic ${DIGEST_KEY_SECRET} --from-literal=${KEY_FIELD}="$(head -c ${KEY_BYTES} /dev/urandom | base64)"`
}
