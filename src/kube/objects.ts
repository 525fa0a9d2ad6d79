// Read access to arbitrary objects, for drift: a small interface (a fake implements it in
// unit tests) and its implementation over @kubernetes/client-node. Kinds are resolved to
// resources through API discovery, cached per apiVersion. Objects come back as the JSON the
// server sent, never through client-node's typed models (they drop fields they do not
// know, which would look like drift). Bounded in time, retried when transient, errors
// classified into one sentence as in cluster.ts.

import { HttpMethod, KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node'
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from '../lib/retry.ts'
import { paginate } from './paginate.ts'
import { ApiMissingError, classify, NotFoundError, orUndefined, type Request } from './api-error.ts'
import { HELMRELEASE } from '../core/helmrelease.ts'

export type Json = Readonly<Record<string, unknown>>

export interface ObjectRef {
  readonly apiVersion: string
  readonly kind: string
  readonly name: string
  /** Ignored for cluster-scoped kinds. */
  readonly namespace: string | undefined
}

export interface ResourceInfo {
  /** Plural resource name, e.g. deployments. */
  readonly resource: string
  readonly namespaced: boolean
}

export interface StorageSecret {
  readonly type: string | undefined
  readonly data: Readonly<Record<string, string>> | undefined
}

export interface ObjectReader {
  readonly server: string
  /** undefined when the cluster does not serve the kind at that apiVersion. */
  resource(apiVersion: string, kind: string): Promise<ResourceInfo | undefined>
  /** The live object as JSON; undefined when it does not exist. */
  get(ref: ObjectRef): Promise<Json | undefined>
  /** HelmReleases (raw JSON) of a namespace or all, optionally by label selector, page by page. */
  listHelmReleases(namespace: string | undefined, labelSelector: string | undefined): Promise<Json[]>
  /** Names and labels of the Secrets matching a selector (metadata only: no payloads). */
  listSecretMetadata(namespace: string, labelSelector: string): Promise<{ name: string; labels: Readonly<Record<string, string>> }[]>
  /** undefined when it does not exist. */
  getSecret(namespace: string, name: string): Promise<StorageSecret | undefined>
  /** `kind/name` of the objects targeted by the HorizontalPodAutoscalers of a namespace. */
  listHpaTargets(namespace: string): Promise<string[]>
}

export interface ObjectReaderOptions {
  readonly requestTimeoutMs?: number
  readonly retry?: RetryPolicy
  readonly pageSize?: number
}

/** Exposes client-node's discovery and request plumbing, without its typed deserialisation. */
class RawObjectApi extends KubernetesObjectApi {
  lookup(apiVersion: string, kind: string): ReturnType<KubernetesObjectApi['resource']> {
    return this.resource(apiVersion, kind)
  }

  async getJson(path: string, query: Readonly<Record<string, string | undefined>>, accept: string, timeoutMs: number): Promise<Json> {
    const context = this.configuration.baseServer.makeRequestContext(path, HttpMethod.GET)
    context.setHeaderParam('Accept', accept)
    for (const [k, v] of Object.entries(query)) if (v !== undefined) context.setQueryParam(k, v)
    context.setSignal(AbortSignal.timeout(timeoutMs))
    // 'any' hands the parsed JSON back unchanged.
    return this.requestPromise(context, 'any')
  }
}

const JSON_ACCEPT = 'application/json'
const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'

export function createObjectReader(config: KubeConfig, server: string, options: ObjectReaderOptions = {}): ObjectReader {
  const api = config.makeApiClient(RawObjectApi)
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const retry = options.retry ?? DEFAULT_RETRY
  const pageSize = String(options.pageSize ?? 500)

  async function call<T>(request: Request, fn: () => Promise<T>): Promise<T> {
    return withRetry(async () => {
      try {
        return await fn()
      } catch (error) {
        throw classify(error, request, server)
      }
    }, retry)
  }
  async function list(request: Request, path: string, query: Readonly<Record<string, string | undefined>>, accept = JSON_ACCEPT): Promise<Json[]> {
    return paginate(async (next) => {
      const page = await call(request, () => api.getJson(path, { ...query, limit: pageSize, continue: next }, accept, timeoutMs))
      const pageItems = page['items']
      const c = isJson(page['metadata']) ? page['metadata']['continue'] : undefined
      return { items: Array.isArray(pageItems) ? pageItems.filter(isJson) : [], next: typeof c === 'string' ? c : undefined }
    })
  }
  const resources = new Map<string, Promise<ResourceInfo | undefined>>()

  const reader: ObjectReader = {
    server,

    resource(apiVersion, kind) {
      const key = `${apiVersion}/${kind}`
      let found = resources.get(key)
      if (found === undefined) {
        const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion]
        const request: Request = { verb: 'get', resource: `${version ?? ''} API resources`, group: group ?? '' }
        found = call(request, () => withTimeout(api.lookup(apiVersion, kind), timeoutMs))
          .then((r) => (r === undefined ? undefined : { resource: r.name, namespaced: r.namespaced }))
          .catch((error: unknown) => {
            // A group the server does not serve at all answers 404: the kind is simply unknown.
            if (error instanceof ApiMissingError || error instanceof NotFoundError) return undefined
            resources.delete(key)
            throw error
          })
        resources.set(key, found)
      }
      return found
    },

    async get(ref) {
      const info = await reader.resource(ref.apiVersion, ref.kind)
      if (info === undefined) throw new ApiMissingError(`The cluster at ${server} does not serve ${ref.kind} in ${ref.apiVersion} (is its CRD installed?).`)
      const namespace = info.namespaced ? ref.namespace : undefined
      const group = ref.apiVersion.includes('/') ? (ref.apiVersion.split('/')[0] ?? '') : ''
      const request: Request = { verb: 'get', resource: info.resource, group, namespace, name: ref.name }
      const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`
      const path = `${base}${namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`}/${info.resource}/${encodeURIComponent(ref.name)}`
      return orUndefined(call(request, () => api.getJson(path, {}, JSON_ACCEPT, timeoutMs)))
    },

    listHelmReleases(namespace, labelSelector) {
      const request: Request = { verb: 'list', resource: HELMRELEASE.plural, group: HELMRELEASE.group, namespace }
      const scope = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`
      return list(request, `/apis/${HELMRELEASE.group}/${HELMRELEASE.version}${scope}/${HELMRELEASE.plural}`, { labelSelector })
    },

    async listSecretMetadata(namespace, labelSelector) {
      const request: Request = { verb: 'list', resource: 'secrets', group: '', namespace }
      const items = await list(request, `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, { labelSelector }, METADATA_ACCEPT)
      return items.map((item) => {
        const m = isJson(item['metadata']) ? item['metadata'] : {}
        return { name: typeof m['name'] === 'string' ? m['name'] : '', labels: strings(m['labels']) }
      })
    },

    async getSecret(namespace, name) {
      const request: Request = { verb: 'get', resource: 'secrets', group: '', namespace, name }
      const object = await orUndefined(
        call(request, () => api.getJson(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`, {}, JSON_ACCEPT, timeoutMs)),
      )
      if (object === undefined) return undefined
      return { type: typeof object['type'] === 'string' ? object['type'] : undefined, data: isJson(object['data']) ? strings(object['data']) : undefined }
    },

    async listHpaTargets(namespace) {
      const request: Request = { verb: 'list', resource: 'horizontalpodautoscalers', group: 'autoscaling', namespace }
      const items = await list(request, `/apis/autoscaling/v2/namespaces/${encodeURIComponent(namespace)}/horizontalpodautoscalers`, {})
      return items.flatMap(hpaTarget)
    },
  }
  return reader
}

/** `Kind/name` of the object an HPA (rendered or live) scales. */
export function hpaTarget(hpa: Json): string[] {
  const spec = isJson(hpa['spec']) ? hpa['spec'] : {}
  const ref = isJson(spec['scaleTargetRef']) ? spec['scaleTargetRef'] : {}
  return typeof ref['kind'] === 'string' && typeof ref['name'] === 'string' ? [`${ref['kind']}/${ref['name']}`] : []
}

function isJson(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function strings(v: unknown): Record<string, string> {
  return isJson(v) ? Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string')) : {}
}

/** Discovery goes through client-node's own request path: bound it from outside. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('discovery timed out'), { name: 'TimeoutError' })), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}
