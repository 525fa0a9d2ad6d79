// The watch mode's patches and Events on the plain HTTP client: the same requests the
// generated client sends (a merge patch with the resourceVersion and the field manager, an
// Event on the release), answered by a loopback server that records them; a 409 is the
// conflict the write engine knows.

import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../src/core/helmrelease.ts'
import { ConflictError } from '../../../src/kube/api-error.ts'
import { leanWrites } from '../../../src/kube/lean-writes.ts'
import { createRawClient } from '../../../src/kube/raw-client.ts'
import { kubeConfigFromString, kubeconfigYaml } from '../../../test/support/kube.ts'

interface Seen {
  readonly method: string
  readonly url: string
  readonly contentType: string | undefined
  readonly authorization: string | undefined
  readonly body: Record<string, unknown>
}

const seen: Seen[] = []
let server: Server
let url = ''

async function bodyOf(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = ''
  for await (const chunk of req) text += String(chunk)
  return JSON.parse(text) as Record<string, unknown>
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void bodyOf(req).then((body) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'], authorization: req.headers.authorization, body })
      if (req.url?.includes('/conflicted')) {
        res.writeHead(409, { 'Content-Type': 'application/json' })
        res.end(JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'the object has been modified' }))
        return
      }
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'Content-Type': 'application/json' })
      const metadata = (body['metadata'] ?? {}) as Record<string, unknown>
      res.end(JSON.stringify({ metadata: { namespace: 'apps', name: 'web', resourceVersion: '8', annotations: metadata['annotations'] }, spec: {} }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

function writes() {
  // Plain HTTP on loopback: client-node allows it only with TLS verification off.
  const config = kubeConfigFromString(kubeconfigYaml({ server: url, token: 'secret-token' }))
  return leanWrites(createRawClient(config, url), { attempts: 1, minDelayMs: 0, maxDelayMs: 0, sleep: async () => undefined })
}

describe('leanWrites', () => {
  it('merge-patches the release with its resourceVersion and our field manager, and reads the answer', async () => {
    seen.length = 0
    const release = await writes().patchRelease(
      { namespace: 'apps', name: 'web' },
      { annotations: { 'reconcile.fluxcd.io/requestedAt': 't1' }, labels: {}, resourceVersion: '7' },
      { dryRun: false },
    )
    expect(seen).toEqual([
      {
        method: 'PATCH',
        url: '/apis/helm.toolkit.fluxcd.io/v2/namespaces/apps/helmreleases/web?fieldManager=helmrelease-trigger',
        contentType: 'application/merge-patch+json',
        authorization: 'Bearer secret-token',
        body: { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': 't1' }, labels: {}, resourceVersion: '7' } },
      },
    ])
    expect(release).toMatchObject({ namespace: 'apps', name: 'web', resourceVersion: '8', annotations: { 'reconcile.fluxcd.io/requestedAt': 't1' } })
  })

  it('asks for a server-side dry run when told', async () => {
    seen.length = 0
    await writes().patchRelease({ namespace: 'apps', name: 'web' }, { annotations: {}, labels: {} }, { dryRun: true })
    expect(seen[0]?.url).toBe('/apis/helm.toolkit.fluxcd.io/v2/namespaces/apps/helmreleases/web?fieldManager=helmrelease-trigger&dryRun=All')
  })

  it('fails a patch the server refuses with 409 as a conflict', async () => {
    await expect(writes().patchRelease({ namespace: 'apps', name: 'conflicted' }, { annotations: {}, labels: {} }, { dryRun: false })).rejects.toBeInstanceOf(
      ConflictError,
    )
  })

  it('records the Event on the release, with its count when aggregated', async () => {
    seen.length = 0
    const release = toHelmRelease({ metadata: { namespace: 'apps', name: 'web', uid: 'u-1', resourceVersion: '8' }, spec: {} })
    await writes().recordEvent({ release, type: 'Normal', reason: 'ConfigChanged', message: 'm', count: 3, firstAt: Date.UTC(2026, 0, 1) }, { dryRun: false })
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/api/v1/namespaces/apps/events', contentType: 'application/json' })
    expect(seen[0]?.body).toMatchObject({
      involvedObject: { apiVersion: 'helm.toolkit.fluxcd.io/v2', kind: 'HelmRelease', name: 'web', namespace: 'apps', uid: 'u-1', resourceVersion: '8' },
      type: 'Normal',
      reason: 'ConfigChanged',
      count: 3,
      firstTimestamp: '2026-01-01T00:00:00.000Z',
      source: { component: 'helmrelease-trigger' },
    })
  })
})
