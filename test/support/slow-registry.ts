// A loopback HTTP proxy in front of the OCI registry that holds chosen requests for a while:
// a slow registry, so a test can tell an upgrade that waited for source-controller's new chart
// from one that ran before it arrived.

import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export interface SlowRegistry {
  /** `host:port` to put in an `oci://` URL instead of the registry's. */
  readonly host: string
  close(): Promise<void>
}

/**
 * `registry`: the registry's base URL, e.g. http://127.0.0.1:41234. `delayMs`: how long to hold
 * a request for this path (with query) before forwarding it; 0 forwards at once.
 */
export async function startSlowRegistry(registry: string, delayMs: (path: string) => number): Promise<SlowRegistry> {
  const upstream = new URL(registry)
  const forward = async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
    const path = incoming.url ?? '/'
    const ms = delayMs(path)
    if (ms > 0) await sleep(ms)
    const headers = { ...incoming.headers, host: upstream.host }
    const upstreamRequest = request({ host: upstream.hostname, port: upstream.port, method: incoming.method, path, headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(outgoing)
    })
    upstreamRequest.on('error', () => outgoing.destroy())
    incoming.pipe(upstreamRequest)
  }
  const server = createServer((incoming, outgoing) => void forward(incoming, outgoing))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { host: `127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}
