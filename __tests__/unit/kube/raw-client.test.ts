// The plain client's small JSON calls against a loopback server: one kept-alive connection for
// a kubeconfig's requests, and a timeout that covers the whole answer (a server that never
// answers, or stalls in the middle of its body, is cut with the one-sentence error).

import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRawClient, type RawClient } from '../../../src/kube/raw-client.ts'
import { kubeConfigFromString, kubeconfigYaml } from '../../../test/support/kube.ts'

let server: Server
let url = ''
let connections = 0
/** Answers held open by the server, ended when the tests finish. */
const held: ServerResponse[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/never') return void held.push(res)
    res.writeHead(200, { 'Content-Type': 'application/json' })
    if (req.url === '/stalls') {
      res.write('{"items": [')
      return void held.push(res)
    }
    res.end(JSON.stringify({ path: req.url }))
  })
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  for (const res of held) res.destroy()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

function client(): RawClient {
  // Plain HTTP on loopback: client-node allows it only with TLS verification off.
  const config = kubeConfigFromString(kubeconfigYaml({ server: url, token: 'secret-token' }))
  return createRawClient(config, url)
}

const describe_ = { verb: 'get', resource: 'configmaps', group: '', namespace: 'apps' } as const

describe('createRawClient json', () => {
  it('sends a kubeconfig’s requests over one kept-alive connection', async () => {
    const raw = client()
    const before = connections
    for (let i = 0; i < 5; i++) expect(await raw.json({ method: 'GET', path: `/ok/${i}`, describe: describe_ })).toEqual({ path: `/ok/${i}` })
    expect(connections - before).toBe(1)
  })

  it('cuts a request the server never answers at its timeout, with the one-sentence error', async () => {
    await expect(client().json({ method: 'GET', path: '/never', describe: describe_, timeoutMs: 50 })).rejects.toThrow(
      /did not answer in time \(get configmaps in namespace apps\)/,
    )
  })

  it('cuts an answer whose body stalls, since the timeout covers the whole answer', async () => {
    await expect(client().json({ method: 'GET', path: '/stalls', describe: describe_, timeoutMs: 50 })).rejects.toThrow(/did not answer in time/)
  })
})
