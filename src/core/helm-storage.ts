// Helm's storage as helm-controller writes it: which Secret holds a HelmRelease's latest
// Helm release, and how to decode it. Pure: the Secrets are read in src/kube/ (drift's object
// reader, the trigger's cluster client).
//
// helm-controller (v1.x) names the Helm release spec.releaseName, else
// `<spec.targetNamespace>-<name>` when a target namespace is set, else the HelmRelease's
// name, shortened to 53 characters with a hash suffix; it records the name it used in
// status.history[].name and the namespace of the storage in status.storageNamespace (else
// spec.storageNamespace, else the HelmRelease's namespace). Helm's Secret driver stores each
// revision in a Secret `sh.helm.release.v1.<release>.v<version>` of type
// `helm.sh/release.v1`, labelled owner=helm, name=<release>, version=<n>, status=<status>,
// whose data.release is base64 of gzip of the release JSON (the API adds its own base64).

import { createHash } from 'node:crypto'
import { gunzipSync, gzipSync } from 'node:zlib'

export const STORAGE_SECRET_TYPE = 'helm.sh/release.v1'
const MAX_RELEASE_NAME = 53
const SHORT_HASH = 12
/** A decompressed release larger than this is refused: it would be a bomb, not a chart. */
export const MAX_RELEASE_BYTES = 64 * 1024 * 1024

/** The parts of a HelmRelease that say where its Helm release lives. */
export interface StorageTarget {
  readonly namespace: string
  readonly name: string
  /** The Helm release name helm-controller uses. */
  readonly releaseName: string
  /** Where the Helm storage Secrets are. */
  readonly storageNamespace: string
  /** Namespace the release installs into (objects without one land here). */
  readonly releaseNamespace: string
  /** status.history[0].version, when helm-controller recorded one. */
  readonly recordedVersion: number | undefined
  /** spec.kubeConfig: helm-controller installs into another cluster, where the storage and the objects are. */
  readonly remote: boolean
}

type Json = Readonly<Record<string, unknown>>

function record(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
}
function text(v: unknown): string {
  return typeof v === 'string' ? v : ''
}

/** helm-controller's release.ShortenName: names over 53 characters become `<first 40>-<12 hex of sha256>`. */
export function shortenName(name: string): string {
  if (name.length <= MAX_RELEASE_NAME) return name
  const hash = createHash('sha256').update(name).digest('hex').slice(0, SHORT_HASH)
  return `${name.slice(0, MAX_RELEASE_NAME - (SHORT_HASH + 1))}-${hash}`
}

/** Where a HelmRelease (as read from the API) keeps its Helm release. */
export function storageTarget(object: unknown): StorageTarget {
  const o = record(object)
  const metadata = record(o['metadata'])
  const spec = record(o['spec'])
  const status = record(o['status'])
  const namespace = text(metadata['namespace'])
  const name = text(metadata['name'])
  const targetNamespace = text(spec['targetNamespace'])
  const derived = text(spec['releaseName']) || (targetNamespace === '' ? name : `${targetNamespace}-${name}`)
  const history = Array.isArray(status['history']) ? status['history'] : []
  const latest = record(history[0])
  const version = latest['version']
  return {
    namespace,
    name,
    // The name of the snapshot is what helm-controller really used; derive only before the first install.
    releaseName: text(latest['name']) || shortenName(derived),
    storageNamespace: text(status['storageNamespace']) || text(spec['storageNamespace']) || namespace,
    releaseNamespace: text(latest['namespace']) || targetNamespace || namespace,
    recordedVersion: typeof version === 'number' && Number.isInteger(version) ? version : undefined,
    remote: spec['kubeConfig'] !== undefined && spec['kubeConfig'] !== null,
  }
}

/** The storage Secret of one revision of a release helm-controller has installed: `<storageNamespace>/sh.helm.release.v1.<name>.v<version>`. */
export function revisionSecret(target: Pick<StorageTarget, 'storageNamespace' | 'releaseName'>, version: number): { namespace: string; name: string } {
  return { namespace: target.storageNamespace, name: `sh.helm.release.v1.${target.releaseName}.v${version}` }
}

/** The label selector of one release's storage Secrets. */
export function storageSelector(releaseName: string): string {
  return `owner=helm,name=${releaseName}`
}

/** A storage Secret as listed (metadata only: the payloads of older revisions are never fetched). */
export interface StorageEntry {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
}

/** The Secret Helm calls the latest: the highest `version` label among those named as Helm names them. */
export function latestEntry(releaseName: string, entries: readonly StorageEntry[]): { name: string; version: number } | undefined {
  const prefix = `sh.helm.release.v1.${releaseName}.v`
  let best: { name: string; version: number } | undefined
  for (const e of entries) {
    const version = Number(e.labels['version'])
    if (!e.name.startsWith(prefix) || !Number.isInteger(version) || version < 1) continue
    if (best === undefined || version > best.version) best = { name: e.name, version }
  }
  return best
}

/** The decoded Helm release: what drift and the deployed diff read (the chart's files are dropped). */
export interface StoredRelease {
  readonly name: string
  readonly namespace: string
  readonly version: number
  /** Helm's status: deployed, superseded, failed, pending-install, pending-upgrade, pending-rollback, uninstalling… */
  readonly status: string
  /** The rendered manifest: YAML documents separated by `---`. */
  readonly manifest: string
  readonly chart: string
  /** The hooks Helm rendered, each its template path and manifest. */
  readonly hooks: readonly { readonly path: string; readonly manifest: string }[]
  /** The values given to this revision (helm-controller's merged valuesFrom and values), as stored. */
  readonly config: Readonly<Record<string, unknown>>
}

/** A storage Secret that cannot be read as a Helm release. The message names the Secret and what is wrong, never its content. */
export class StorageError extends Error {
  override readonly name = 'StorageError'
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const GZIP_MAGIC = [0x1f, 0x8b, 0x08]

/**
 * Decodes `data.release` of a storage Secret as the API returns it (base64 of Helm's base64
 * of gzip of JSON). `secret` is `<namespace>/<name>`, named in every error.
 */
export function decodeRelease(secret: string, type: string | undefined, data: Readonly<Record<string, string>> | undefined): StoredRelease {
  const fail = (what: string, cause?: unknown): never => {
    throw new StorageError(`Helm storage Secret ${secret} ${what}`, cause === undefined ? undefined : { cause })
  }
  if (type !== undefined && type !== STORAGE_SECRET_TYPE) fail(`has type ${type || '(none)'}, not ${STORAGE_SECRET_TYPE}`)
  const outer = data?.['release']
  if (outer === undefined || outer === '') return fail('has no data.release')
  if (!BASE64.test(outer) || outer.length % 4 !== 0) fail('is corrupt: data.release is not base64')
  const helmText = Buffer.from(outer, 'base64').toString('latin1').trim()
  if (!BASE64.test(helmText) || helmText.length % 4 !== 0)
    fail("is corrupt: data.release is not Helm's base64 encoding (truncated or written by something else)")
  const bytes = Buffer.from(helmText, 'base64')
  let json: Buffer = bytes
  if (GZIP_MAGIC.every((b, i) => bytes[i] === b)) {
    try {
      json = gunzipSync(bytes, { maxOutputLength: MAX_RELEASE_BYTES })
    } catch (error) {
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : ''
      if (code === 'Z_BUF_ERROR') fail('is truncated: its gzip stream ends early', error)
      if (code === 'ERR_BUFFER_TOO_LARGE') fail(`is too large: it decompresses to more than ${MAX_RELEASE_BYTES / 1024 / 1024} MiB`, error)
      fail(`is corrupt: its gzip stream does not decompress (${code || 'invalid data'})`, error)
    }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(json.toString('utf8'))
  } catch (error) {
    // Helm also reads releases stored without gzip; anything else is not a release.
    fail(json === bytes ? 'is corrupt: data.release is neither gzip nor JSON' : 'is corrupt: the decompressed release is not JSON', error)
  }
  const r = record(parsed)
  const info = record(r['info'])
  const version = r['version']
  const status = text(info['status'])
  if (typeof version !== 'number' || !Number.isInteger(version) || status === '' || typeof r['name'] !== 'string') {
    fail('is not a Helm release: name, version or info.status is missing')
  }
  const manifest = r['manifest']
  const metadata = record(record(r['chart'])['metadata'])
  return {
    name: text(r['name']),
    namespace: text(r['namespace']),
    version: Number(version),
    status,
    manifest: typeof manifest === 'string' ? manifest : '',
    chart: metadata['name'] === undefined ? '' : `${text(metadata['name'])}-${text(metadata['version'])}`,
    hooks: (Array.isArray(r['hooks']) ? r['hooks'] : []).map((h) => ({ path: text(record(h)['path']), manifest: text(record(h)['manifest']) })),
    config: record(r['config']),
  }
}

/** Encodes a release the way Helm's Secret driver and the API do (for tests and fakes). */
export function encodeRelease(release: unknown): string {
  const helm = gzipSync(JSON.stringify(release)).toString('base64')
  return Buffer.from(helm).toString('base64')
}
