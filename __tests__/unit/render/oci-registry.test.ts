// The OCI registry client against a registry that asks for a bearer token (as ghcr.io does, even
// for public charts): the challenge answered from the realm with the Docker config's credentials
// a registry login wrote, the semver range picked among the tags (`_` read as `+`), the manifest
// digest as the artifact revision, and the chart layer checked against its digest.

import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ociRegistry, type OciLocation } from '../../../src/render/oci-registry.ts'

const CHART = new TextEncoder().encode('the chart archive')
const digestOf = (bytes: Uint8Array | string): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`
const MANIFEST = JSON.stringify({
  schemaVersion: 2,
  layers: [{ mediaType: 'application/vnd.cncf.helm.chart.content.v1.tar+gzip', digest: digestOf(CHART), size: CHART.length }],
})
const config = mkdtempSync(join(tmpdir(), 'hrt-docker-'))
writeFileSync(join(config, 'config.json'), JSON.stringify({ auths: { 'ghcr.example': { auth: Buffer.from('robot:s3cret').toString('base64') } } }))
afterAll(() => rmSync(config, { recursive: true, force: true }))

/** A registry of one chart, tags 1.0.0, 1.1.0+build (as 1.1.0_build) and 2.0.0-rc.1, behind a token realm. */
function registry(seen: string[], corrupt = false): typeof fetch {
  return async (input, init) => {
    const url = String(input)
    const auth = new Headers(init?.headers).get('authorization') ?? ''
    seen.push(`${url} ${auth}`)
    if (url.startsWith('https://auth.ghcr.example/token')) {
      return auth === `Basic ${Buffer.from('robot:s3cret').toString('base64')}` ? Response.json({ token: 'T0K' }) : new Response('', { status: 401 })
    }
    if (auth !== 'Bearer T0K')
      return new Response('', {
        status: 401,
        headers: { 'www-authenticate': 'Bearer realm="https://auth.ghcr.example/token",service="ghcr.example",scope="repository:acme/web:pull"' },
      })
    if (url.endsWith('/tags/list')) return Response.json({ tags: ['1.0.0', '1.1.0_build', '2.0.0-rc.1'] })
    if (url.includes('/manifests/')) return new Response(MANIFEST, { headers: { 'docker-content-digest': digestOf(MANIFEST) } })
    if (url.includes('/blobs/')) return new Response(corrupt ? 'tampered' : CHART)
    return new Response('', { status: 404 })
  }
}

const location: OciLocation = {
  kind: 'oci',
  url: 'oci://ghcr.example/acme/web',
  sourceUrl: 'oci://ghcr.example/acme/web',
  ref: { semver: '1.x' },
  insecure: false,
  trackDigest: true,
  source: 'apps/web',
}
const newest = async (tags: readonly string[]): Promise<string | undefined> =>
  [...tags]
    .filter((t) => t.startsWith('1.'))
    .sort()
    .at(-1)

describe('ociRegistry', () => {
  it('answers the bearer challenge with the Docker config’s credentials, picks the tag, and reads the chart layer', async () => {
    const seen: string[] = []
    const client = ociRegistry(registry(seen), { DOCKER_CONFIG: config })
    const artifact = await client.resolve(location, newest)
    expect(artifact).toEqual({ tag: '1.1.0_build', digest: digestOf(MANIFEST), layer: { digest: digestOf(CHART), size: CHART.length } })
    expect(new Uint8Array(await client.blob(location, artifact.layer.digest, 1024))).toEqual(CHART)
    expect(seen[0]).toBe('https://ghcr.example/v2/acme/web/tags/list ')
    expect(seen.filter((s) => s.startsWith('https://auth.'))).toHaveLength(1)
    expect(seen).toContain('https://ghcr.example/v2/acme/web/manifests/1.1.0_build Bearer T0K')
  })

  it('refuses a layer that does not match its digest, and a registry that refuses the credentials', async () => {
    const client = ociRegistry(registry([], true), { DOCKER_CONFIG: config })
    const artifact = await client.resolve({ ...location, ref: { tag: '1.0.0' } }, newest)
    await expect(client.blob(location, artifact.layer.digest, 1024)).rejects.toThrow('does not match its digest')
    await expect(ociRegistry(registry([]), { DOCKER_CONFIG: join(config, 'none') }).resolve(location, newest)).rejects.toThrow('HTTP 401')
  })
})
