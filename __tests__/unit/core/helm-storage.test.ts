// Helm storage: which Secret holds a HelmRelease's latest release (named as helm-controller
// names it) and how it decodes, with clear errors for corrupt or truncated payloads.
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { decodeRelease, encodeRelease, latestEntry, shortenName, StorageError, storageSelector, storageTarget } from '../../../src/core/helm-storage.ts'

const RELEASE = {
  name: 'app',
  namespace: 'apps',
  version: 3,
  info: { status: 'deployed' },
  manifest: '---\nkind: ConfigMap\n',
  chart: { metadata: { name: 'demo', version: '0.1.0' } },
  config: { password: 'hunter2' },
}
const SECRET = 'flux-system/sh.helm.release.v1.app.v3'
const TYPE = 'helm.sh/release.v1'

/** data.release as the API returns it: base64 of Helm's base64 of the given bytes. */
function asApi(bytes: Buffer): string {
  return Buffer.from(bytes.toString('base64')).toString('base64')
}

function decodeError(data: Record<string, string> | undefined, type: string | undefined = TYPE): StorageError {
  try {
    decodeRelease(SECRET, type, data)
  } catch (error) {
    if (error instanceof StorageError) return error
    throw error
  }
  throw new Error('expected a StorageError')
}

describe('release name and storage namespace, as helm-controller derives them', () => {
  it('uses the HelmRelease name in its own namespace by default', () => {
    expect(storageTarget({ metadata: { namespace: 'flux-system', name: 'app' }, spec: {} })).toEqual({
      namespace: 'flux-system',
      name: 'app',
      releaseName: 'app',
      storageNamespace: 'flux-system',
      releaseNamespace: 'flux-system',
      recordedVersion: undefined,
      remote: false,
    })
    expect(storageTarget({ metadata: { namespace: 'ns', name: 'app' }, spec: { kubeConfig: { secretRef: { name: 'remote' } } } }).remote).toBe(true)
  })

  it('prefixes the target namespace, and spec.releaseName wins over both', () => {
    const base = { metadata: { namespace: 'flux-system', name: 'app' } }
    expect(storageTarget({ ...base, spec: { targetNamespace: 'prod' } })).toMatchObject({
      releaseName: 'prod-app',
      releaseNamespace: 'prod',
      storageNamespace: 'flux-system',
    })
    expect(storageTarget({ ...base, spec: { targetNamespace: 'prod', releaseName: 'web' } })).toMatchObject({ releaseName: 'web', releaseNamespace: 'prod' })
  })

  it('keeps storage in spec.storageNamespace, and status.storageNamespace (where it really is) wins', () => {
    const base = { metadata: { namespace: 'flux-system', name: 'app' } }
    expect(storageTarget({ ...base, spec: { storageNamespace: 'helm' } }).storageNamespace).toBe('helm')
    expect(storageTarget({ ...base, spec: { storageNamespace: 'helm' }, status: { storageNamespace: 'old' } }).storageNamespace).toBe('old')
  })

  it('shortens names over 53 characters to 40 characters, a dash and 12 hex of sha256 (release.ShortenName)', () => {
    const long = `${'a'.repeat(30)}-${'b'.repeat(30)}`
    const hash = createHash('sha256').update(long).digest('hex').slice(0, 12)
    expect(shortenName(long)).toBe(`${long.slice(0, 40)}-${hash}`)
    expect(shortenName(long)).toHaveLength(53)
    expect(shortenName('x'.repeat(53))).toBe('x'.repeat(53))
    const spec = { targetNamespace: 'a-rather-long-target-namespace-name' }
    expect(storageTarget({ metadata: { namespace: 'ns', name: 'and-a-rather-long-release' }, spec }).releaseName).toBe(
      shortenName('a-rather-long-target-namespace-name-and-a-rather-long-release'),
    )
  })

  it('trusts the name and namespace helm-controller recorded in status.history over the derivation', () => {
    const target = storageTarget({
      metadata: { namespace: 'ns', name: 'app' },
      spec: { releaseName: 'renamed' },
      status: { history: [{ name: 'app', namespace: 'ns', version: 7 }] },
    })
    expect(target).toMatchObject({ releaseName: 'app', releaseNamespace: 'ns', recordedVersion: 7 })
  })

  it('selects storage Secrets by owner and name labels', () => {
    expect(storageSelector('app')).toBe('owner=helm,name=app')
  })
})

describe('latest storage Secret', () => {
  const entry = (name: string, version: string) => ({ name, labels: { owner: 'helm', name: 'app', version } })

  it('is the highest version label, compared as numbers', () => {
    const entries = [entry('sh.helm.release.v1.app.v9', '9'), entry('sh.helm.release.v1.app.v10', '10'), entry('sh.helm.release.v1.app.v2', '2')]
    expect(latestEntry('app', entries)).toEqual({ name: 'sh.helm.release.v1.app.v10', version: 10 })
  })

  it('ignores Secrets not named as Helm names them and versions that are not numbers', () => {
    expect(latestEntry('app', [entry('sh.helm.release.v1.other.v5', '5'), entry('sh.helm.release.v1.app.v1', 'x'), entry('copy-of-app', '8')])).toBeUndefined()
  })
})

describe('decodeRelease', () => {
  it('decodes base64 → base64 → gzip → JSON and keeps the manifest, the hooks and the values given, never the chart’s files', () => {
    const release = {
      ...RELEASE,
      hooks: [{ name: 'migrate', path: 'demo/templates/job.yaml', manifest: 'kind: Job\n' }],
      chart: { ...RELEASE.chart, templates: [{ name: 'templates/secret.yaml', data: 'c2VjcmV0' }] },
    }
    const stored = decodeRelease(SECRET, TYPE, { release: encodeRelease(release) })
    expect(stored).toEqual({
      name: 'app',
      namespace: 'apps',
      version: 3,
      status: 'deployed',
      manifest: '---\nkind: ConfigMap\n',
      chart: 'demo-0.1.0',
      hooks: [{ path: 'demo/templates/job.yaml', manifest: 'kind: Job\n' }],
      // The deployed diff compares them; shown by path only when the release reads a Secret.
      config: { password: 'hunter2' },
    })
    expect(JSON.stringify(stored)).not.toContain('c2VjcmV0')
  })

  it('reads a release stored without gzip, as Helm does', () => {
    expect(decodeRelease(SECRET, TYPE, { release: asApi(Buffer.from(JSON.stringify(RELEASE))) }).version).toBe(3)
  })

  it('names the Secret and says it is truncated when the gzip stream ends early', () => {
    const gz = gzipSync(JSON.stringify(RELEASE))
    const e = decodeError({ release: asApi(gz.subarray(0, gz.length - 20)) })
    expect(e.message).toBe(`Helm storage Secret ${SECRET} is truncated: its gzip stream ends early`)
  })

  it('says the gzip stream is corrupt when its bytes are damaged', () => {
    const gz = Buffer.from(gzipSync(JSON.stringify(RELEASE)))
    gz.fill(0x55, 12, 40)
    expect(decodeError({ release: asApi(gz) }).message).toMatch(new RegExp(`^Helm storage Secret ${SECRET} is corrupt: its gzip stream does not decompress`))
  })

  it('tells apart a payload that is not base64, not Helm base64, not JSON, or not a release', () => {
    expect(decodeError({ release: '%%%' }).message).toBe(`Helm storage Secret ${SECRET} is corrupt: data.release is not base64`)
    expect(decodeError({ release: Buffer.from('not*base64!').toString('base64') }).message).toContain("is corrupt: data.release is not Helm's base64 encoding")
    expect(decodeError({ release: asApi(Buffer.from('{"half": ')) }).message).toBe(
      `Helm storage Secret ${SECRET} is corrupt: data.release is neither gzip nor JSON`,
    )
    expect(decodeError({ release: asApi(gzipSync('not json')) }).message).toBe(`Helm storage Secret ${SECRET} is corrupt: the decompressed release is not JSON`)
    expect(decodeError({ release: asApi(gzipSync('{"name":"app"}')) }).message).toBe(
      `Helm storage Secret ${SECRET} is not a Helm release: name, version or info.status is missing`,
    )
  })

  it('refuses a Secret without data.release or of another type', () => {
    expect(decodeError({}).message).toBe(`Helm storage Secret ${SECRET} has no data.release`)
    expect(decodeError(undefined).message).toBe(`Helm storage Secret ${SECRET} has no data.release`)
    expect(decodeError({ release: encodeRelease(RELEASE) }, 'Opaque').message).toBe(`Helm storage Secret ${SECRET} has type Opaque, not helm.sh/release.v1`)
  })

  it('never quotes the payload in an error', () => {
    const secretJson = JSON.stringify({ ...RELEASE, version: 'x' })
    const e = decodeError({ release: asApi(gzipSync(secretJson)) })
    expect(e.message).not.toContain('hunter2')
  })
})
