// Plain HTTPS requests to the apiserver, for what the generated client does badly: long-lived
// watch streams (client-node's Watch aborts any stream quiet for 30 s, healthy or not) and
// small JSON calls the watch mode makes (paginated lists that keep the resourceVersion,
// Leases, and its patches and Events: see lean-writes.ts). Credentials, CA and proxy come from the KubeConfig for every request, so rotated
// service-account tokens are picked up.

import { createHash } from 'node:crypto'
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { ApiException, type KubeConfig } from '@kubernetes/client-node'
import { classify, type Request } from './api-error.ts'

export interface JsonRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH'
  /** The body's type; default application/json (a merge patch: application/merge-patch+json). */
  readonly contentType?: string
  /** Path and query, e.g. /api/v1/configmaps?limit=500 */
  readonly path: string
  readonly body?: unknown
  /** What it does, for the one-sentence error. */
  readonly describe: Request
  readonly timeoutMs?: number
}

export interface StreamRequest {
  readonly path: string
  readonly describe: Request
  /** Abort when no byte arrived for this long (the server ends a watch at its timeoutSeconds). */
  readonly idleMs: number
  readonly signal: AbortSignal
}

export interface RawClient {
  readonly server: string
  /** The decoded JSON answer of a 2xx; anything else throws a classified error. */
  json(request: JsonRequest): Promise<unknown>
  /** Calls `onLine` for each line of a 200 answer; resolves when the server ends it or `signal` aborts. */
  stream(request: StreamRequest, onLine: (line: string) => void): Promise<void>
}

const DEFAULT_TIMEOUT_MS = 30_000

export function createRawClient(config: KubeConfig, server: string): RawClient {
  const base = new URL(server)
  const agents = keptAgents()
  const send = base.protocol === 'http:' ? httpRequest : httpsRequest

  /**
   * One request; resolves with the response once its headers arrived. It ends at `until`: the
   * stream's signal, or a deadline over the whole exchange (the answer's body included), kept
   * as a plain timer: an AbortSignal per request was 5.6 % of the watch's event-to-patch path
   * (BENCHMARKS.md §4).
   */
  async function start(
    path: string,
    method: string,
    body: string | undefined,
    until: { readonly signal: AbortSignal } | Deadline,
    contentType = 'application/json',
  ): Promise<IncomingMessage> {
    const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': contentType }
    const options: RequestOptions = { method, headers: { Accept: 'application/json', ...headers } }
    await config.applyToHTTPSOptions(options)
    options.agent = agents.pooled(options)
    const url = new URL(`${base.pathname.replace(/\/$/, '')}${path}`, base)
    return await new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, 'signal' in until ? { ...options, signal: until.signal } : options, resolve)
      if ('ms' in until) {
        const timer = setTimeout(() => {
          until.expired = new DeadlineError(until.ms)
          req.destroy(until.expired)
        }, until.ms)
        req.once('close', () => clearTimeout(timer))
      }
      req.on('error', reject)
      req.on('socket', (socket) => socket.setKeepAlive(true, 15_000))
      req.end(body)
    })
  }

  return {
    server,

    async json(request) {
      const deadline: Deadline = { ms: request.timeoutMs ?? DEFAULT_TIMEOUT_MS }
      try {
        const body = request.body === undefined ? undefined : JSON.stringify(request.body)
        const response = await start(request.path, request.method, body, deadline, request.contentType)
        const text = await readAll(response)
        const status = response.statusCode ?? 0
        if (status < 200 || status > 299) throw apiException(status, text, response)
        return text === '' ? {} : (JSON.parse(text) as unknown)
      } catch (error) {
        // Cut in the middle of its body, the answer fails as a reset connection: the deadline says why.
        throw classify(deadline.expired ?? error, request.describe, server)
      }
    },

    async stream(request, onLine) {
      const controller = new AbortController()
      const abort = (): void => controller.abort(request.signal.reason)
      if (request.signal.aborted) return
      request.signal.addEventListener('abort', abort, { once: true })
      let idle: NodeJS.Timeout | undefined
      const arm = (): void => {
        clearTimeout(idle)
        idle = setTimeout(() => controller.abort(new IdleError(request.idleMs)), request.idleMs)
      }
      try {
        arm()
        const response = await start(request.path, 'GET', undefined, { signal: controller.signal })
        const status = response.statusCode ?? 0
        if (status !== 200) throw apiException(status, await readAll(response), response)
        response.setEncoding('utf8')
        let pending = ''
        for await (const chunk of response) {
          arm()
          pending += String(chunk)
          let newline = pending.indexOf('\n')
          while (newline >= 0) {
            const line = pending.slice(0, newline).trim()
            pending = pending.slice(newline + 1)
            if (line !== '') onLine(line)
            newline = pending.indexOf('\n')
          }
        }
        if (pending.trim() !== '') onLine(pending.trim())
      } catch (error) {
        // Our own stop is a normal end; a stream gone quiet is a dropped connection.
        if (request.signal.aborted) return
        const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined
        throw classify(reason instanceof IdleError ? reason : error, request.describe, server)
      } finally {
        clearTimeout(idle)
        request.signal.removeEventListener('abort', abort)
      }
    },
  }
}

/**
 * client-node's applyToHTTPSOptions hands out an Agent without keep-alive (a new one per call
 * before 2.0, one per cluster and user since), so every request would open its own TLS
 * connection (a handshake each: slower than the generated client for a patch). The first
 * plain Agent of a TLS identity (CA, client certificate and key, server name, verification)
 * is kept and reused, its connections kept alive; a rotated certificate is a new identity,
 * hence a new pool (and the request's own TLS options name its sockets within the pool).
 * The Agent handed out last is remembered, so the same one again costs no hash of its
 * certificates (it did on every request: ~4 % of the watch's event-to-patch path, §4 of
 * BENCHMARKS.md).
 * Proxy agents are left as they come.
 */
function keptAgents(): { pooled(options: RequestOptions): RequestOptions['agent'] } {
  let current: { readonly identity: string; readonly given: HttpAgent; readonly agent: HttpAgent } | undefined
  return {
    pooled(options) {
      const agent = options.agent
      if (!(agent instanceof HttpAgent) || (agent.constructor !== HttpAgent && agent.constructor !== HttpsAgent)) return agent
      if (current?.given === agent) return current.agent
      const tls = (agent as unknown as { readonly options: Record<string, unknown> }).options ?? {}
      const hash = createHash('sha256')
      for (const key of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'servername', 'rejectUnauthorized']) hash.update(`${key}:${String(tls[key] ?? '')}\0`)
      const identity = hash.digest('hex')
      if (current?.identity === identity) {
        current = { ...current, given: agent }
        return current.agent
      }
      const kept = agent instanceof HttpsAgent ? new HttpsAgent({ ...tls, keepAlive: true }) : new HttpAgent({ keepAlive: true })
      current = { identity, given: agent, agent: kept }
      return kept
    },
  }
}

/** A request's time limit; `expired` once it cut the request. */
interface Deadline {
  readonly ms: number
  expired?: DeadlineError
}

/** A request not answered (its body included) within its timeout. */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError'
  constructor(ms: number) {
    super(`no complete answer within ${ms} ms`)
  }
}

/** No byte for longer than the server's own watch timeout: the connection is dead. */
export class IdleError extends Error {
  override readonly name = 'TimeoutError'
  constructor(ms: number) {
    super(`no data for ${Math.round(ms / 1000)} s`)
  }
}

async function readAll(response: IncomingMessage): Promise<string> {
  response.setEncoding('utf8')
  let text = ''
  for await (const chunk of response) text += String(chunk)
  return text
}

function apiException(status: number, body: string, response: IncomingMessage): ApiException<string> {
  const headers = Object.fromEntries(Object.entries(response.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]])))
  return new ApiException(status, `HTTP ${status}`, body, headers)
}
