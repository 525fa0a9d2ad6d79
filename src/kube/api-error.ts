// Turns what the Kubernetes client throws into one plain sentence saying what failed and
// how to fix it, and into our error kinds: retryable (network, 429, 5xx, 409) or not.

import { ApiException } from '@kubernetes/client-node'
import { ConfigurationError, TransientError, messageOf } from '../lib/errors.ts'

/** What we were doing, to name it in the message. */
export interface Request {
  readonly verb: 'get' | 'list' | 'watch' | 'patch' | 'create' | 'update'
  /** Plural resource, e.g. "helmreleases". */
  readonly resource: string
  /** API group; '' for the core group. */
  readonly group: string
  readonly namespace?: string
  readonly name?: string
  /** Verbs the RBAC rule must grant when more than `verb` is checked (server-side apply may create). */
  readonly ruleVerbs?: readonly string[]
}

/** The object itself does not exist (the API and the namespace do). */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError'
}

/** A read whose object may be missing: undefined instead of NotFoundError. */
export async function orUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p
  } catch (error) {
    if (error instanceof NotFoundError) return undefined
    throw error
  }
}

/** The API answered 404 for the whole resource type: the CRD is not installed. */
export class ApiMissingError extends ConfigurationError {}

/** 409: the object changed since we read it (our patches carry resourceVersion). Re-read, decide again. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError'
}

/** RBAC denied the request. */
export class ForbiddenError extends ConfigurationError {}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

export function classify(error: unknown, request: Request, server: string): Error {
  if (error instanceof ApiException) return fromStatus(error.code, body(error.body), headerOf(error.headers, 'retry-after'), request, server, error)
  const code = networkCode(error)
  if (code === 'ENOTFOUND') {
    return new ConfigurationError(`Cannot resolve the Kubernetes API server ${server} (ENOTFOUND); check the server address in the kubeconfig.`, {
      cause: error,
    })
  }
  if (causes(error).some((e) => e instanceof Error && e.message === 'bad port')) {
    return new ConfigurationError(
      `The Kubernetes API server address ${server} uses a port that HTTP clients refuse to connect to (a "bad port"); check the server address in the kubeconfig.`,
      { cause: error },
    )
  }
  if (isTimeout(error)) {
    return new TransientError(`The Kubernetes API server ${server} did not answer in time (${describe(request)}).`, { cause: error })
  }
  if (code !== undefined && NETWORK_CODES.has(code)) {
    return new TransientError(
      `Cannot reach the Kubernetes API server ${server} (${code}); check the kubeconfig's server address and that this runner can reach it.`,
      { cause: error, unreachable: true },
    )
  }
  if (isTlsError(error)) {
    return new ConfigurationError(
      `TLS to the Kubernetes API server ${server} failed: ${messageOf(error)}; check certificate-authority-data in the kubeconfig.`,
      { cause: error },
    )
  }
  return error instanceof Error ? error : new Error(String(error))
}

interface StatusBody {
  readonly message: string
  readonly reason: string
  readonly detailsName: string
}

function body(raw: unknown): StatusBody {
  let value: unknown = raw
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw)
    } catch {
      return { message: raw.slice(0, 300), reason: '', detailsName: '' }
    }
  }
  if (typeof value !== 'object' || value === null) return { message: '', reason: '', detailsName: '' }
  const message = 'message' in value && typeof value.message === 'string' ? value.message : ''
  const reason = 'reason' in value && typeof value.reason === 'string' ? value.reason : ''
  const details = 'details' in value && typeof value.details === 'object' && value.details !== null ? value.details : {}
  const detailsName = 'name' in details && typeof details.name === 'string' ? details.name : ''
  return { message, reason, detailsName }
}

function fromStatus(status: number, b: StatusBody, retryAfter: string | undefined, request: Request, server: string, cause: unknown): Error {
  const what = describe(request)
  switch (true) {
    case status === 401:
      return new ConfigurationError(
        `The Kubernetes API server ${server} rejected the credentials (401 Unauthorized); the kubeconfig's token or client certificate is invalid or expired.`,
        { cause },
      )
    case status === 403:
      return new ForbiddenError(`Forbidden: cannot ${what}. Grant the identity this RBAC rule: ${rbacRule(request)}.`, { cause })
    case status === 404 && isObjectMissing(b, request):
      return new NotFoundError(`${request.resource}${request.name === undefined ? '' : ` ${request.namespace ?? ''}/${request.name}`} not found`, { cause })
    case status === 404:
      return new ApiMissingError(apiMissingMessage(request, server), { cause })
    case status === 409:
      return new ConflictError(`${what}: the object changed meanwhile (409 Conflict)`, { cause })
    case status === 429 || status >= 500:
      return new TransientError(`The Kubernetes API server answered ${status} to ${what}: ${b.message || b.reason || 'no message'}.`, {
        cause,
        retryAfterMs: retryAfterMs(retryAfter),
        // What a load balancer or a restarting apiserver answers in place of the API.
        unreachable: status === 502 || status === 503 || status === 504,
      })
    default:
      return new ConfigurationError(`The Kubernetes API server refused to ${what} (${status}): ${b.message || b.reason || 'no message'}.`, { cause })
  }
}

function isObjectMissing(b: StatusBody, request: Request): boolean {
  // A missing object answers 404 NotFound naming it; a missing API answers a bare 404.
  return request.name !== undefined && b.reason === 'NotFound' && b.detailsName === request.name
}

function apiMissingMessage(request: Request, server: string): string {
  if (request.group.endsWith('fluxcd.io')) {
    return `The cluster at ${server} has no ${request.resource}.${request.group} API: Flux is not installed (or too old); install Flux 2 with helm-controller.`
  }
  return `The cluster at ${server} does not serve ${request.resource}${request.group === '' ? '' : `.${request.group}`}${request.namespace === undefined ? '' : ` in namespace ${request.namespace} (does the namespace exist?)`}.`
}

export function describe(request: Request): string {
  const resource = request.group === '' ? request.resource : `${request.resource}.${request.group}`
  const object = request.name === undefined ? resource : `${resource} ${request.name}`
  return `${request.verb} ${object}${request.namespace === undefined ? ' in all namespaces' : ` in namespace ${request.namespace}`}`
}

export function rbacRule(request: Request): string {
  const scope = request.namespace === undefined ? 'ClusterRole' : `Role in namespace ${request.namespace} (or a ClusterRole)`
  const verbs = (request.ruleVerbs ?? [request.verb]).map((v) => `"${v}"`).join(', ')
  return `apiGroups: ["${request.group}"], resources: ["${request.resource}"], verbs: [${verbs}] in a ${scope}`
}

function retryAfterMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

function headerOf(headers: Readonly<Record<string, string>> | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  return key === undefined ? undefined : headers[key]
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let e: unknown = error; e !== undefined && e !== null && chain.length < 6;) {
    chain.push(e)
    e = typeof e === 'object' && 'cause' in e ? e.cause : undefined
  }
  return chain
}

function networkCode(error: unknown): string | undefined {
  for (const e of causes(error)) {
    if (typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string') return e.code
  }
  return undefined
}

function isTimeout(error: unknown): boolean {
  return causes(error).some((e) => e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError'))
}

function isTlsError(error: unknown): boolean {
  const code = networkCode(error) ?? ''
  return code.startsWith('ERR_TLS') || code.includes('CERT') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || code === 'SELF_SIGNED_CERT_IN_CHAIN'
}
