// A bare HTTP/2 client for the apiserver: the raw baselines and the bench's own bulk setup.
// One session (one TLS connection), bearer token, the cluster's CA; loopback only.

import { connect, constants, type ClientHttp2Session } from 'node:http2'

export interface ApiTarget {
  /** https://127.0.0.1:<port> */
  readonly server: string
  readonly token: string
  /** Base64 PEM */
  readonly caData: string
}

export interface ApiResponse {
  readonly status: number
  readonly body: string
}

export interface ApiSession {
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiResponse>
  close(): Promise<void>
}

const REQUEST_TIMEOUT_MS = 30_000

export async function openSession(target: ApiTarget): Promise<ApiSession> {
  const url = new URL(target.server)
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') throw new Error(`refusing a non-loopback apiserver: ${target.server}`)
  const session = connect(target.server, { ca: Buffer.from(target.caData, 'base64').toString('utf8') })
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve())
    session.once('error', reject)
  })
  session.on('error', () => {}) // a request in flight reports its own failure
  return {
    request: (method, path, body, contentType) => send(session, target.token, { method, path, body, contentType }),
    close: () => new Promise((resolve) => session.close(() => resolve())),
  }
}

interface Outgoing {
  readonly method: string
  readonly path: string
  readonly body: unknown
  readonly contentType: string | undefined
}

function send(session: ClientHttp2Session, token: string, out: Outgoing): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const payload = out.body === undefined ? undefined : JSON.stringify(out.body)
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: out.method,
      [constants.HTTP2_HEADER_PATH]: out.path,
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(payload === undefined ? {} : { 'content-type': out.contentType ?? 'application/json' }),
    })
    const chunks: Buffer[] = []
    let status = 0
    stream.setTimeout(REQUEST_TIMEOUT_MS, () => stream.close(constants.NGHTTP2_CANCEL))
    stream.on('response', (headers) => (status = Number(headers[constants.HTTP2_HEADER_STATUS])))
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }))
    stream.on('error', reject)
    stream.on('close', () => {
      if (status === 0) reject(new Error(`${out.method} ${out.path}: stream closed without a response`))
    })
    stream.end(payload)
  })
}

export function expectStatus(response: ApiResponse, allowed: readonly number[], what: string): void {
  if (!allowed.includes(response.status)) throw new Error(`${what}: HTTP ${response.status} ${response.body.slice(0, 300)}`)
}
