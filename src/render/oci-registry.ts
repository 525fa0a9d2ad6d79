// A chart from an OCI registry, as source-controller fetches it for an OCIRepository or an OCI
// HelmRepository: the distribution API's tag list (for a semver range), the manifest (its digest is
// the artifact revision), then the layer of Helm's chart media type, checked against its digest.
// Credentials only from the workflow: the Docker config a registry login writes
// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json), exchanged for a bearer token when the
// registry asks; anonymous otherwise. Never a cluster Secret.

import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { ChartLocation } from '../core/release-input.ts'
import { boundedBody } from '../lib/bounded-body.ts'
import { quoted } from '../lib/untrusted.ts'

const HELM_CHART_LAYER = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip'
const MANIFEST_TYPES = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'].join(', ')
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024

export type OciLocation = Extract<ChartLocation, { kind: 'oci' }>

/** What the registry resolved: the tag (when there is one), the manifest digest, and the chart layer. */
export interface OciArtifact {
  readonly tag: string | undefined
  readonly digest: string
  readonly layer: { readonly digest: string; readonly size: number }
}

export interface Registry {
  /** The artifact a location names (a semver range picked by `pick` among the tags). */
  resolve(location: OciLocation, pick: (tags: readonly string[], constraint: string) => Promise<string | undefined>): Promise<OciArtifact>
  /** The chart layer's bytes, checked against its digest. */
  blob(location: OciLocation, digest: string, limit: number): Promise<Uint8Array>
}

type Get = (url: string, headers: Record<string, string>, limit: number) => Promise<{ status: number; headers: Headers; body: Uint8Array }>

export function ociRegistry(get: typeof fetch, env: Readonly<Record<string, string | undefined>> = process.env): Registry {
  const tokens = new Map<string, string>()
  const request: Get = async (url, headers, limit) => {
    const response = await get(url, { headers, signal: AbortSignal.timeout(60_000), redirect: 'follow' })
    return { status: response.status, headers: response.headers, body: await boundedBody(response, limit) }
  }
  // One bearer token per repository and scope, as the registry's challenge asks for it.
  const authorised = async (location: OciLocation, path: string, accept: string, limit: number) => {
    const { base, host, repository } = partsOf(location)
    const url = `${base}/v2/${repository}/${path}`
    const cached = tokens.get(repository)
    let answer = await request(url, { accept, ...(cached === undefined ? {} : { authorization: cached }) }, limit)
    if (answer.status === 401) {
      const token = await tokenFor(request, answer.headers.get('www-authenticate') ?? '', await credentialsFor(host, env))
      if (token !== undefined) {
        tokens.set(repository, token)
        answer = await request(url, { accept, authorization: token }, limit)
      }
    }
    if (answer.status !== 200) throw new Error(`${quoted(`${location.url} ${path}`)}: HTTP ${answer.status}`)
    return answer
  }
  return {
    async resolve(location, pick) {
      let reference = location.ref.digest ?? location.ref.tag
      if (location.ref.digest === undefined && location.ref.semver !== undefined) {
        const listed = await authorised(location, 'tags/list', 'application/json', MAX_MANIFEST_BYTES)
        const tags = (JSON.parse(new TextDecoder().decode(listed.body)) as { tags?: unknown }).tags
        // OCI tags spell a version's `+` as `_`.
        const versions = (Array.isArray(tags) ? tags : []).filter((t): t is string => typeof t === 'string').map((t) => t.replaceAll('_', '+'))
        const picked = await pick(versions, location.ref.semver)
        if (picked === undefined) throw new Error(`no tag of ${quoted(location.url)} matches ${quoted(location.ref.semver)}`)
        reference = picked.replaceAll('+', '_')
      }
      reference ??= 'latest'
      const answer = await authorised(location, `manifests/${reference}`, MANIFEST_TYPES, MAX_MANIFEST_BYTES)
      const digest = answer.headers.get('docker-content-digest') ?? `sha256:${sha256(answer.body)}`
      if (location.ref.digest !== undefined && digest !== location.ref.digest)
        throw new Error(`the manifest of ${quoted(location.url)} is not ${location.ref.digest}`)
      const manifest = JSON.parse(new TextDecoder().decode(answer.body)) as { layers?: { mediaType?: string; digest?: string; size?: number }[] }
      const layer = (manifest.layers ?? []).find((l) => l.mediaType === HELM_CHART_LAYER)
      if (layer?.digest === undefined) throw new Error(`${quoted(location.url)} holds no Helm chart layer`)
      return { tag: location.ref.digest === undefined ? reference : undefined, digest, layer: { digest: layer.digest, size: layer.size ?? 0 } }
    },
    async blob(location, digest, limit) {
      const answer = await authorised(location, `blobs/${digest}`, '*/*', limit)
      if (`sha256:${sha256(answer.body)}` !== digest) throw new Error(`the chart layer of ${quoted(location.url)} does not match its digest`)
      return answer.body
    },
  }
}

function partsOf(location: OciLocation): { base: string; host: string; repository: string } {
  const rest = location.url.slice('oci://'.length)
  const slash = rest.indexOf('/')
  const host = slash < 0 ? rest : rest.slice(0, slash)
  return { base: `${location.insecure ? 'http' : 'https'}://${host}`, host, repository: slash < 0 ? '' : rest.slice(slash + 1) }
}

/** `user:password` from the Docker config's `auths`, for this registry host. */
async function credentialsFor(host: string, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  const file = join(env['DOCKER_CONFIG'] ?? join(homedir(), '.docker'), 'config.json')
  try {
    const config = JSON.parse(await readFile(file, 'utf8')) as { auths?: Record<string, { auth?: string }> }
    const entry = Object.entries(config.auths ?? {}).find(([key]) => key.replace(/^https?:\/\//, '').replace(/\/.*$/, '') === host)?.[1]
    return entry?.auth === undefined ? undefined : Buffer.from(entry.auth, 'base64').toString('utf8')
  } catch {
    return undefined
  }
}

/** The registry's challenge answered: a bearer token from its realm, or Basic for a Basic challenge. */
async function tokenFor(request: Get, challenge: string, credentials: string | undefined): Promise<string | undefined> {
  const basic = credentials === undefined ? undefined : `Basic ${Buffer.from(credentials).toString('base64')}`
  if (/^basic\b/i.test(challenge)) return basic
  const fields = Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]?.toLowerCase(), m[2]]))
  const realm = fields['realm']
  if (realm === undefined || !/^https?:\/\//.test(realm)) return undefined
  const query = new URLSearchParams()
  if (fields['service'] !== undefined) query.set('service', fields['service'])
  if (fields['scope'] !== undefined) query.set('scope', fields['scope'])
  const answer = await request(`${realm}?${query.toString()}`, basic === undefined ? {} : { authorization: basic }, MAX_MANIFEST_BYTES)
  if (answer.status !== 200) return undefined
  const body = JSON.parse(new TextDecoder().decode(answer.body)) as { token?: string; access_token?: string }
  const token = body.token ?? body.access_token
  return token === undefined ? undefined : `Bearer ${token}`
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}
