// The watch mode's HTTP endpoints: /healthz (the process serves), /readyz (the initial sync
// is done; the body says whether this replica leads or stands by), /metrics (Prometheus).

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ListenAddress } from '../../settings.ts'
import { CONTENT_TYPE } from './metrics.ts'

export interface Probe {
  readonly ok: boolean
  readonly body: string
}

export interface OpsHandlers {
  readonly health: () => Probe
  readonly ready: () => Probe
  readonly metrics: () => string
}

export interface OpsServer {
  /** The bound address, e.g. http://127.0.0.1:8080 */
  readonly url: string
  close(): Promise<void>
}

export async function startOpsServer(address: ListenAddress, handlers: OpsHandlers): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    const probe = (p: Probe): void => {
      res.writeHead(p.ok ? 200 : 503, { 'Content-Type': 'text/plain; charset=utf-8' })
      res.end(`${p.body}\n`)
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end()
      return
    }
    switch (path) {
      case '/healthz':
      case '/livez':
        return probe(handlers.health())
      case '/readyz':
        return probe(handlers.ready())
      case '/metrics':
        res.writeHead(200, { 'Content-Type': CONTENT_TYPE })
        res.end(handlers.metrics())
        return
      default:
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: try /healthz, /readyz or /metrics\n')
    }
  })
  // Probes and scrapes are short: idle keep-alive sockets must not hold the shutdown up.
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(address.port, address.host === '' ? undefined : address.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const bound = server.address() as AddressInfo
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address
  return {
    url: `http://${host}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
