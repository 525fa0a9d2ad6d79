// The cluster as the engine sees it: a small interface (a hand-written fake implements it in
// unit tests) and its implementation over @kubernetes/client-node. Every call is bounded
// in time, retried when transient, and fails with one sentence naming what and how to fix.

import { createHash, randomBytes } from 'node:crypto'
import type { RequestOptions as HttpsOptions } from 'node:https'
import { hostname } from 'node:os'
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  Observable,
  Watch,
  PatchStrategy,
  type ConfigurationOptions,
  type CoreV1Event,
  type KubeConfig,
  type KubernetesObject,
  type ObservableMiddleware,
  type RequestContext,
} from '@kubernetes/client-node'
import type { ChartSourceRef, LiveSource, ReleaseRef, SourceKind, SourceRef } from '../core/model.ts'
import { CHART_SOURCE_APIS, toChartSource, type ChartSource } from '../core/chart-source.ts'
import { BOOTSTRAP_NAME, BOOTSTRAP_NAMESPACE, bootstrapSourceOf, gitRepositoryUrlOf, type FluxBootstrap } from '../core/flux-bootstrap.ts'
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from '../lib/retry.ts'
import { paginate, type Page } from './paginate.ts'
import { classify, orUndefined, type Request } from './api-error.ts'
import { HELMRELEASE, toHelmRelease, type HelmRelease } from '../core/helmrelease.ts'

/** The content of a live ConfigMap or Secret (Secret data still base64, as the API sends it). */
export type { LiveSource }

/** A ConfigMap's or Secret's identity and metadata, as listed (content left out). */
export interface SourceObject extends SourceRef {
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
}

/** A merge patch of a release's metadata; null deletes a key. */
export interface ReleasePatch {
  readonly annotations: Readonly<Record<string, string | null>>
  readonly labels: Readonly<Record<string, string | null>>
  /** Optimistic concurrency: the patch fails with a conflict if the release changed since. */
  readonly resourceVersion?: string
}

export interface ReleaseEvent {
  readonly release: HelmRelease
  readonly type: 'Normal' | 'Warning'
  readonly reason: string
  readonly message: string
  /** Several occurrences in one Event (aggregated under a burst): how many, and when the first was (ms). */
  readonly count?: number
  readonly firstAt?: number
}

/** An Opaque Secret to create (data base64, as the API takes it). */
export interface NewSecret {
  readonly namespace: string
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly data: Readonly<Record<string, string>>
}

export interface WriteOptions {
  /** Server-side dry run: validated and admitted, never persisted. */
  readonly dryRun: boolean
}

export interface ClusterClient {
  readonly server: string
  /** undefined when the release does not exist. */
  getRelease(ref: ReleaseRef): Promise<HelmRelease | undefined>
  /** Every release in a namespace (or all), read page by page. */
  listReleases(namespace: string | undefined): Promise<HelmRelease[]>
  patchRelease(ref: ReleaseRef, patch: ReleasePatch, options: WriteOptions): Promise<HelmRelease>
  /** undefined when the object does not exist. */
  getSource(ref: SourceRef): Promise<LiveSource | undefined>
  /** The ConfigMaps or Secrets of a namespace (or all) that match a label selector, read page by page. */
  listSources(kind: SourceKind, namespace: string | undefined, labelSelector: string): Promise<SourceObject[]>
  /** Server-side apply of a manifest (field manager helmrelease-trigger). */
  applyObject(object: KubernetesObject, options: WriteOptions): Promise<void>
  /** Creates an Opaque Secret; ConflictError when one of that name exists (409 AlreadyExists). */
  createSecret(secret: NewSecret): Promise<void>
  /** status.lastAppliedRevision of a Flux Kustomization; undefined when it does not exist. */
  getKustomizationRevision(namespace: string, name: string): Promise<string | undefined>
  /** An OCIRepository or HelmChart a release's spec.chartRef names; undefined when absent. */
  getChartSource(ref: ChartSourceRef): Promise<ChartSource | undefined>
  /** What Flux bootstrap syncs in this cluster: the flux-system/flux-system Kustomization's path and its GitRepository's URL; undefined when there is none. */
  getBootstrap(): Promise<FluxBootstrap | undefined>
  recordEvent(event: ReleaseEvent, options: WriteOptions): Promise<void>
  /**
   * Watches the releases of a namespace from their current state (a watch without
   * resourceVersion first replays every object). Resolves when the server or `signal` ends it.
   */
  watchReleases(namespace: string, onRelease: (release: HelmRelease) => void, signal: AbortSignal): Promise<void>
  /**
   * Watches one ConfigMap or Secret (field-selected by name) from `resourceVersion`: each
   * change's content, undefined when it is deleted. Resolves when the server or `signal` ends
   * it; rejects when the watch is refused (RBAC) or its resourceVersion is too old (410).
   * Optional: a client without it leaves its callers to poll.
   */
  watchSource?(ref: SourceRef, resourceVersion: string, onSource: (live: LiveSource | undefined) => void, signal: AbortSignal): Promise<void>
}

export const FIELD_MANAGER = 'helmrelease-trigger'

export interface ClusterClientOptions {
  readonly requestTimeoutMs?: number
  readonly retry?: RetryPolicy
  readonly pageSize?: number
}

export function createClusterClient(config: KubeConfig, server: string, options: ClusterClientOptions = {}): ClusterClient {
  const custom = config.makeApiClient(CustomObjectsApi)
  const core = config.makeApiClient(CoreV1Api)
  const objects = KubernetesObjectApi.makeApiClient(config)
  const watcher = new Watch(config)
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const retry = options.retry ?? DEFAULT_RETRY
  const pageSize = options.pageSize ?? 500
  const connections = sharedConnections(config)

  /** Bounded, retried, classified. `notFound` turns a missing object into undefined. */
  async function call<T>(request: Request, fn: (o: RequestOptions) => Promise<T>, contentType?: string): Promise<T> {
    return withRetry(async () => {
      try {
        return await fn(requestOptions(timeoutMs, contentType, connections, await connections.identity()))
      } catch (error) {
        throw classify(error, request, server)
      }
    }, retry)
  }
  const hr = (verb: Request['verb'], namespace?: string, name?: string): Request => ({
    verb,
    resource: HELMRELEASE.plural,
    group: HELMRELEASE.group,
    namespace,
    name,
  })
  const gvp = { group: HELMRELEASE.group, version: HELMRELEASE.version, plural: HELMRELEASE.plural }

  return {
    server,

    getRelease: (ref) =>
      orUndefined(
        call(hr('get', ref.namespace, ref.name), (o) => custom.getNamespacedCustomObject({ ...gvp, namespace: ref.namespace, name: ref.name }, o)).then(
          toHelmRelease,
        ),
      ),

    listReleases: (namespace) =>
      paginate(async (next) => {
        const page: unknown = await call(hr('list', namespace), (o) =>
          namespace === undefined
            ? custom.listClusterCustomObject({ ...gvp, limit: pageSize, _continue: next }, o)
            : custom.listNamespacedCustomObject({ ...gvp, namespace, limit: pageSize, _continue: next }, o),
        )
        return { items: itemsOf(page).map(toHelmRelease), next: continueOf(page) }
      }),

    patchRelease: (ref, patch, o2) =>
      call(
        hr('patch', ref.namespace, ref.name),
        (o) =>
          custom.patchNamespacedCustomObject(
            {
              ...gvp,
              namespace: ref.namespace,
              name: ref.name,
              body: {
                metadata: {
                  annotations: patch.annotations,
                  labels: patch.labels,
                  ...(patch.resourceVersion === undefined ? {} : { resourceVersion: patch.resourceVersion }),
                },
              },
              dryRun: o2.dryRun ? 'All' : undefined,
              fieldManager: FIELD_MANAGER,
            },
            o,
          ),
        PatchStrategy.MergePatch,
      ).then(toHelmRelease),

    async getSource(ref) {
      const request: Request = {
        verb: 'get',
        resource: ref.kind === 'ConfigMap' ? 'configmaps' : 'secrets',
        group: '',
        namespace: ref.namespace,
        name: ref.name,
      }
      const object = await orUndefined(
        call(request, (o) =>
          ref.kind === 'ConfigMap'
            ? core.readNamespacedConfigMap({ namespace: ref.namespace, name: ref.name }, o)
            : core.readNamespacedSecret({ namespace: ref.namespace, name: ref.name }, o),
        ),
      )
      return object === undefined ? undefined : liveSourceOf(ref.kind, object)
    },

    async listSources(kind, namespace, labelSelector) {
      const request: Request = { verb: 'list', resource: kind === 'ConfigMap' ? 'configmaps' : 'secrets', group: '', namespace }
      return paginate(async (next): Promise<Page<SourceObject>> => {
        const query = { labelSelector, limit: pageSize, _continue: next }
        const page = await call(request, (o) => {
          if (kind === 'ConfigMap')
            return namespace === undefined ? core.listConfigMapForAllNamespaces(query, o) : core.listNamespacedConfigMap({ ...query, namespace }, o)
          return namespace === undefined ? core.listSecretForAllNamespaces(query, o) : core.listNamespacedSecret({ ...query, namespace }, o)
        })
        const items = page.items.map((item) => {
          const m = item.metadata
          return { kind, namespace: m?.namespace ?? '', name: m?.name ?? '', labels: m?.labels ?? {}, annotations: m?.annotations ?? {} }
        })
        return { items, next: page.metadata?._continue }
      })
    },

    async applyObject(object, o2) {
      // Server-side apply is a patch that creates the object when it is missing: RBAC checks both.
      const request: Request = {
        verb: 'patch',
        ruleVerbs: ['patch', 'create'],
        resource: `${(object.kind ?? '').toLowerCase()}s`,
        group: groupOf(object.apiVersion),
        namespace: object.metadata?.namespace,
        name: object.metadata?.name,
      }
      // Never forced: fields another manager owns (kustomize-controller, a person) stay theirs (409).
      await call(request, () => objects.patch(object, undefined, o2.dryRun ? 'All' : undefined, FIELD_MANAGER, false, PatchStrategy.ServerSideApply))
    },

    async createSecret(secret) {
      const request: Request = { verb: 'create', resource: 'secrets', group: '', namespace: secret.namespace, name: secret.name }
      const body = { metadata: { name: secret.name, namespace: secret.namespace, labels: { ...secret.labels } }, type: 'Opaque', data: { ...secret.data } }
      await call(request, (o) => core.createNamespacedSecret({ namespace: secret.namespace, body }, o))
    },

    async getKustomizationRevision(namespace, name) {
      const request: Request = { verb: 'get', resource: 'kustomizations', group: 'kustomize.toolkit.fluxcd.io', namespace, name }
      const object: unknown = await orUndefined(
        call(request, (o) =>
          custom.getNamespacedCustomObject({ group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations', namespace, name }, o),
        ),
      )
      if (typeof object !== 'object' || object === null || !('status' in object)) return undefined
      const status = object.status
      return typeof status === 'object' && status !== null && 'lastAppliedRevision' in status && typeof status.lastAppliedRevision === 'string'
        ? status.lastAppliedRevision
        : undefined
    },

    async getBootstrap() {
      const [namespace, name] = [BOOTSTRAP_NAMESPACE, BOOTSTRAP_NAME]
      const kustomization = await orUndefined(
        call({ verb: 'get', resource: 'kustomizations', group: 'kustomize.toolkit.fluxcd.io', namespace, name }, (o) =>
          custom.getNamespacedCustomObject({ group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations', namespace, name }, o),
        ),
      )
      const sync = bootstrapSourceOf(kustomization)
      if (sync === undefined) return undefined
      const source = `${sync.kind}/${sync.namespace}/${sync.name}`
      if (sync.kind !== 'GitRepository' || sync.name === '') return { path: sync.path, source, url: undefined }
      const ref = { namespace: sync.namespace, name: sync.name }
      const repository = await orUndefined(
        call({ verb: 'get', resource: 'gitrepositories', group: 'source.toolkit.fluxcd.io', ...ref }, (o) =>
          custom.getNamespacedCustomObject({ group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'gitrepositories', ...ref }, o),
        ),
      )
      return { path: sync.path, source, url: gitRepositoryUrlOf(repository) }
    },

    getChartSource: (ref) => {
      const api = CHART_SOURCE_APIS[ref.kind]
      const request: Request = { verb: 'get', resource: api.plural, group: api.group, namespace: ref.namespace, name: ref.name }
      return orUndefined(call(request, (o) => custom.getNamespacedCustomObject({ ...api, namespace: ref.namespace, name: ref.name }, o)).then(toChartSource))
    },

    async recordEvent(event, o2) {
      const { release } = event
      const now = new Date()
      const request: Request = { verb: 'create', resource: 'events', group: '', namespace: release.namespace }
      await call(request, (o) =>
        core.createNamespacedEvent(
          {
            namespace: release.namespace,
            dryRun: o2.dryRun ? 'All' : undefined,
            body: eventBody(event, now),
          },
          o,
        ),
      )
    },

    watchReleases: (namespace, onRelease, signal) =>
      watchPath(
        `/apis/${HELMRELEASE.group}/${HELMRELEASE.version}/namespaces/${namespace}/helmreleases`,
        { timeoutSeconds: 300 },
        hr('watch', namespace),
        signal,
        (phase, object) => {
          if (phase === 'ADDED' || phase === 'MODIFIED') onRelease(toHelmRelease(object))
        },
      ),

    watchSource(ref, resourceVersion, onSource, signal) {
      const resource = ref.kind === 'ConfigMap' ? 'configmaps' : 'secrets'
      const query = { fieldSelector: `metadata.name=${ref.name}`, resourceVersion, timeoutSeconds: 300 }
      const request: Request = { verb: 'watch', resource, group: '', namespace: ref.namespace, name: ref.name }
      const onEvent = (phase: string, object: unknown): void => {
        if (phase === 'DELETED') onSource(undefined)
        else if (phase === 'ADDED' || phase === 'MODIFIED') onSource(liveSourceOf(ref.kind, object as SourceLike))
      }
      return watchPath(`/api/v1/namespaces/${ref.namespace}/${resource}`, query, request, signal, onEvent, true)
    },
  }

  /**
   * One watch through client-node's Watch; resolves when the server or `signal` ends it.
   * `endOnError`: an ERROR event (a Status, e.g. 410 for a resourceVersion too old) rejects.
   */
  function watchPath(
    path: string,
    query: Record<string, string | number>,
    request: Request,
    signal: AbortSignal,
    onEvent: (phase: string, object: unknown) => void,
    endOnError = false,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let done = false
      let controller: AbortController | undefined
      const stop = (): void => controller?.abort()
      const finish = (error: unknown): void => {
        if (done) return
        done = true
        signal.removeEventListener('abort', stop)
        // An abort we asked for, or the server closing the watch, is a normal end.
        if (error === null || error === undefined || signal.aborted || (error instanceof Error && error.name === 'AbortError')) resolve()
        else reject(classify(asApiException(error), request, server))
      }
      signal.addEventListener('abort', stop)
      const onLine = (phase: string, object: unknown): void => {
        if (phase !== 'ERROR' || !endOnError) return onEvent(phase, object)
        finish(statusError(object))
        controller?.abort()
      }
      watcher.watch(path, query, onLine, finish).then((c) => {
        controller = c
        if (signal.aborted || done) c.abort()
      }, finish)
    })
  }
}

/** The core/v1 Event recording `event` on its HelmRelease, at `now`. */
export function eventBody(event: ReleaseEvent, now: Date): CoreV1Event {
  const { release } = event
  return {
    metadata: { name: `${release.name}.${randomBytes(8).toString('hex')}`, namespace: release.namespace },
    involvedObject: {
      apiVersion: `${HELMRELEASE.group}/${HELMRELEASE.version}`,
      kind: HELMRELEASE.kind,
      name: release.name,
      namespace: release.namespace,
      uid: release.uid,
      resourceVersion: release.resourceVersion,
    },
    type: event.type,
    reason: event.reason,
    message: event.message.slice(0, 1024),
    source: { component: FIELD_MANAGER },
    reportingComponent: FIELD_MANAGER,
    reportingInstance: hostname().slice(0, 128),
    firstTimestamp: event.firstAt === undefined ? now : new Date(event.firstAt),
    lastTimestamp: now,
    count: event.count ?? 1,
  }
}

interface SourceLike {
  readonly data?: Record<string, string>
  readonly binaryData?: Record<string, string>
  readonly metadata?: { readonly labels?: Record<string, string>; readonly resourceVersion?: string }
}

function liveSourceOf(kind: SourceKind, object: SourceLike): LiveSource {
  const m = object.metadata
  const live = { kind, data: object.data ?? {}, binaryData: object.binaryData ?? {}, labels: m?.labels ?? {} }
  return m?.resourceVersion === undefined ? live : { ...live, resourceVersion: m.resourceVersion }
}

type RequestOptions = ConfigurationOptions

/**
 * Per-call middleware: a deadline for every request, the patch content type when given (the
 * generated client would send strategic-merge-patch, which custom resources refuse), and one
 * shared connection pool. `identity` is the TLS identity read just before client-node built
 * this request.
 */
function requestOptions(timeoutMs: number, contentType: string | undefined, connections: SharedConnections, identity: string): RequestOptions {
  const middleware: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(AbortSignal.timeout(timeoutMs))
      if (contentType !== undefined) context.setHeaderParam('Content-Type', contentType)
      return new Observable(connections.share(context, identity).then(() => context))
    },
    post: (response) => new Observable(Promise.resolve(response)),
  }
  return { middleware: [middleware], middlewareMergeStrategy: 'append' }
}

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>

interface SharedConnections {
  /** A fingerprint of the TLS material (CA, client certificate and key, server name, verification) the kubeconfig gives now. */
  identity(): Promise<string>
  /** Puts the pool of that TLS identity on the request, or keeps the request's own as that pool. */
  share(context: RequestContext, identityBefore: string): Promise<void>
}

/**
 * client-node 2.0.1 builds a new undici Agent in every request's authentication step, so every
 * request paid a TLS handshake on a connection of its own. One Agent (one keep-alive pool) is
 * kept per client and set on each request instead. Authentication headers (tokens, exec and
 * auth-provider credentials) are still applied to every request by client-node; the pool is
 * replaced when the TLS material changes, e.g. an exec plugin handing out a new client
 * certificate. A request whose material changed while it was being built keeps its own Agent:
 * the Agent it carries was then built from material the fingerprint cannot vouch for.
 */
function sharedConnections(config: KubeConfig): SharedConnections {
  let current: { readonly identity: string; readonly dispatcher: Dispatcher } | undefined
  async function identity(): Promise<string> {
    const tls: HttpsOptions = {}
    await config.applyToHTTPSOptions(tls)
    const hash = createHash('sha256')
    for (const part of [tls.ca, tls.cert, tls.key, tls.pfx, tls.passphrase, tls.servername, tls.rejectUnauthorized]) {
      const bytes = fingerprintPart(part)
      hash.update(`${bytes.length}:`).update(bytes)
    }
    return hash.digest('hex')
  }
  return {
    identity,
    async share(context, identityBefore) {
      const own = context.getDispatcher()
      // No TLS options at all: undici's global dispatcher is used, and it already pools.
      if (own === undefined) return
      const now = await identity()
      if (now !== identityBefore) return
      if (current?.identity === now) {
        context.setDispatcher(current.dispatcher)
        return
      }
      // The old pool is not closed: a request may have just been handed it. Its idle
      // connections time out on their own.
      current = { identity: now, dispatcher: own }
    },
  }
}

function fingerprintPart(value: unknown): Buffer {
  if (value === undefined || value === null) return Buffer.alloc(0)
  if (Buffer.isBuffer(value)) return value
  if (Array.isArray(value)) return Buffer.concat(value.map((v) => Buffer.concat([fingerprintPart(v), Buffer.from('\0')])))
  return Buffer.from(String(value))
}

function itemsOf(list: unknown): unknown[] {
  if (typeof list !== 'object' || list === null || !('items' in list) || !Array.isArray(list.items)) return []
  return list.items
}

function continueOf(list: unknown): string | undefined {
  if (typeof list !== 'object' || list === null || !('metadata' in list)) return undefined
  const m = list.metadata
  const c = typeof m === 'object' && m !== null && 'continue' in m ? m.continue : undefined
  return typeof c === 'string' && c !== '' ? c : undefined
}

function groupOf(apiVersion: string | undefined): string {
  const parts = (apiVersion ?? 'v1').split('/')
  return parts.length === 2 ? (parts[0] ?? '') : ''
}

/** A watch's ERROR event: its Status, as the error classify knows. */
function statusError(object: unknown): ApiException<string> {
  const status = typeof object === 'object' && object !== null ? (object as { code?: unknown; message?: unknown }) : {}
  const code = typeof status.code === 'number' ? status.code : 500
  return new ApiException(code, typeof status.message === 'string' ? status.message : 'watch failed', JSON.stringify(object), {})
}

/** client-node's Watch fails with a plain Error carrying statusCode: give it the shape classify knows. */
function asApiException(error: unknown): unknown {
  if (error instanceof ApiException || typeof error !== 'object' || error === null || !('statusCode' in error)) return error
  const code = error.statusCode
  return typeof code === 'number' ? new ApiException(code, error instanceof Error ? error.message : 'watch failed', '', {}) : error
}
