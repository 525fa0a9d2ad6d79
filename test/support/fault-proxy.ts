// A loopback TLS proxy in front of the real kube-apiserver that injects faults into chosen
// requests: an answer of our own (429 + Retry-After, 503…), a delay, a hang, a dropped
// connection, or the apiserver's answer lost after it acted. It serves the apiserver's own
// certificate (valid for 127.0.0.1), so a kubeconfig only swaps the port.
//
//   const proxy = await startFaultProxy({ target: cluster.server, certDir })
//   proxy.rule = ({ method, n }) => (method === 'PATCH' && n <= 3 ? { kind: 'status', status: 429, retryAfter: '1' } : undefined)

import { readFileSync } from 'node:fs'
import { createServer, request as httpsRequest, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { join } from 'node:path'

export type Fault =
  /** Answer this status ourselves (a Kubernetes Status body); the apiserver never sees the request. */
  | { readonly kind: 'status'; readonly status: number; readonly retryAfter?: string }
  /** Forward after `ms`. */
  | { readonly kind: 'delay'; readonly ms: number }
  /** Never answer; the connection stays open until the client gives up or the proxy closes. */
  | { readonly kind: 'hang' }
  /** Close the connection without an answer; the apiserver never sees the request. */
  | { readonly kind: 'drop' }
  /** Forward, let the apiserver act, then close the connection instead of passing the answer on. */
  | { readonly kind: 'lose-answer' }

export interface RequestInfo {
  readonly method: string
  /** Path with query, e.g. /apis/helm.toolkit.fluxcd.io/v2/namespaces/a/helmreleases/b */
  readonly path: string
  /** 1-based count of requests with this method and path (without query) so far, this one included. */
  readonly n: number
}

export interface ProxiedRequest extends RequestInfo {
  /** Date.now() when the request arrived. */
  readonly at: number
  readonly fault: Fault['kind'] | 'pass'
  /** Date.now() when the client's side of the exchange closed (answered, dropped or abandoned); unset while open. */
  readonly done?: number
}

export interface FaultProxy {
  /** https://127.0.0.1:<port> */
  readonly server: string
  /** Chooses the fault for each request; undefined passes it through. Replace at any time. */
  rule: (request: RequestInfo) => Fault | undefined
  /** Every request seen, in arrival order. */
  readonly requests: readonly ProxiedRequest[]
  /** Requests held by a `hang` fault right now. */
  readonly hanging: number
  close(): Promise<void>
}

export interface FaultProxyOptions {
  /** The apiserver, e.g. https://127.0.0.1:41234 */
  readonly target: string
  /** The apiserver's --cert-dir (apiserver.crt, apiserver.key): served by the proxy, trusted upstream. */
  readonly certDir: string
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const cert = readFileSync(join(options.certDir, 'apiserver.crt'))
  const key = readFileSync(join(options.certDir, 'apiserver.key'))
  const target = new URL(options.target)
  const sockets = new Set<Socket>()
  const counts = new Map<string, number>()
  const requests: ProxiedRequest[] = []
  let hanging = 0

  const server: Server = createServer({ cert, key }, (req, res) => {
    const method = req.method ?? 'GET'
    const path = req.url ?? '/'
    const id = `${method} ${path.split('?')[0]}`
    const n = (counts.get(id) ?? 0) + 1
    counts.set(id, n)
    const info = { method, path, n }
    const fault = proxy.rule(info)
    const seen: { -readonly [K in keyof ProxiedRequest]: ProxiedRequest[K] } = { ...info, at: Date.now(), fault: fault?.kind ?? 'pass' }
    requests.push(seen)
    res.once('close', () => (seen.done = Date.now()))
    switch (fault?.kind) {
      case undefined:
        return forward(req, res, false)
      case 'status':
        return answer(res, fault.status, fault.retryAfter)
      case 'delay':
        setTimeout(() => forward(req, res, false), fault.ms)
        return
      case 'hang':
        hanging++
        req.socket.once('close', () => hanging--)
        req.resume()
        return
      case 'drop':
        req.socket.destroy()
        return
      case 'lose-answer':
        return forward(req, res, true)
    }
  })
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  // A client that aborts mid-handshake is not our concern.
  server.on('tlsClientError', () => undefined)

  function forward(req: IncomingMessage, res: ServerResponse, loseAnswer: boolean): void {
    const upstream = httpsRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host }, ca: cert },
      (answer) => {
        if (loseAnswer) {
          // The apiserver has acted; the client never learns how.
          answer.resume()
          answer.once('end', () => req.socket.destroy())
          return
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      },
    )
    // The apiserver is down or went away: like a TCP proxy, close the client's connection.
    upstream.on('error', () => req.socket.destroy())
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  const proxy: FaultProxy = {
    server: `https://127.0.0.1:${port}`,
    rule: () => undefined,
    requests,
    get hanging() {
      return hanging
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  return proxy
}

function answer(res: ServerResponse, status: number, retryAfter: string | undefined): void {
  const reason = status === 429 ? 'TooManyRequests' : status === 503 ? 'ServiceUnavailable' : 'InternalError'
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `injected ${status} by the fault proxy`,
    reason,
    code: status,
  })
  res.writeHead(status, { 'content-type': 'application/json', ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }) })
  res.end(body)
}
