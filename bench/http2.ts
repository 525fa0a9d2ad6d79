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

export interface WatchEvent {
  readonly type: string
  readonly object: unknown
}

export interface ApiWatch {
  /** Resolves when the server or close() ends the stream. */
  readonly ended: Promise<void>
  close(): Promise<void>
}

/**
 * A WATCH on its own session (so a busy watch never queues behind requests): `onEvent` gets
 * each event with the time its bytes arrived. Resolves once the server has answered 200.
 */
export async function openWatch(target: ApiTarget, path: string, onEvent: (event: WatchEvent, at: number) => void): Promise<ApiWatch> {
  const url = new URL(target.server)
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') throw new Error(`refusing a non-loopback apiserver: ${target.server}`)
  const session = connect(target.server, { ca: Buffer.from(target.caData, 'base64').toString('utf8') })
  session.on('error', () => {}) // the stream reports its own end
  const stream = session.request({
    [constants.HTTP2_HEADER_METHOD]: 'GET',
    [constants.HTTP2_HEADER_PATH]: path,
    authorization: `Bearer ${target.token}`,
    accept: 'application/json',
  })
  stream.end()
  let pending = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    const at = performance.now()
    pending += chunk
    let newline = pending.indexOf('\n')
    while (newline >= 0) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      if (line.trim() !== '') onEvent(JSON.parse(line) as WatchEvent, at)
      newline = pending.indexOf('\n')
    }
  })
  const ended = new Promise<void>((resolve) => {
    stream.on('close', () => resolve())
    stream.on('error', () => resolve())
  })
  const status = await new Promise<number>((resolve, reject) => {
    stream.once('response', (headers) => resolve(Number(headers[constants.HTTP2_HEADER_STATUS])))
    stream.once('error', reject)
    stream.once('close', () => reject(new Error(`WATCH ${path}: stream closed without a response`)))
  })
  const close = async (): Promise<void> => {
    stream.close(constants.NGHTTP2_CANCEL)
    await new Promise<void>((resolve) => session.close(() => resolve()))
  }
  if (status !== 200) {
    await close()
    throw new Error(`WATCH ${path}: HTTP ${status}`)
  }
  return { ended, close }
}
