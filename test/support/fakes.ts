// Hand-written fakes behind our own interfaces, for unit tests of the engine.
// They keep just enough state to behave like the real thing: resourceVersions that move,
// merge-patch semantics for metadata, conflicts on stale resourceVersions.

import { createHash } from 'node:crypto'
import type { ChangeAndHead, ChangeRequest, ObjectSession, GitReader, Remote, TreeBlob } from '../../src/git/reader.ts'
import type { ClusterClient, LiveSource, NewSecret, ReleaseEvent, ReleasePatch, SourceObject, WriteOptions } from '../../src/kube/cluster.ts'
import { ConflictError } from '../../src/kube/api-error.ts'
import { TransientError } from '../../src/lib/errors.ts'
import { toHelmRelease, type HelmRelease } from '../../src/core/helmrelease.ts'
import type { ChartSourceRef, FileChange, FileContent, HeadFile, ReleaseRef, SourceKind, SourceRef } from '../../src/core/model.ts'
import { toChartSource, type ChartSource } from '../../src/core/chart-source.ts'
import type { FluxBootstrap } from '../../src/core/flux-bootstrap.ts'
import type { Clock } from '../../src/engine/ports.ts'
import type { OutcomeWaiter, Triggered } from '../../src/engine/outcome.ts'
import { Status } from '../../src/engine/result.ts'

/** An in-memory commit history: each commit is a full snapshot of path → text. */
export class FakeGit implements GitReader {
  private readonly commits = new Map<string, { parent: string | undefined; files: ReadonlyMap<string, string> }>()

  commit(sha: string, parent: string | undefined, files: Readonly<Record<string, string>>): this {
    this.commits.set(sha, { parent, files: new Map(Object.entries(files)) })
    return this
  }

  async resolve(rev: string): Promise<string | undefined> {
    return this.commits.has(rev) ? rev : undefined
  }

  async parent(sha: string): Promise<string | undefined> {
    return this.commits.get(sha)?.parent
  }

  async changedFiles(base: string | undefined, head: string, filter: (p: string) => boolean): Promise<FileChange[]> {
    const before = base === undefined ? new Map<string, string>() : this.files(base)
    const after = this.files(head)
    const paths = [...new Set([...before.keys(), ...after.keys()])].filter(filter).sort()
    return paths.flatMap((path): FileChange[] => {
      const b = before.get(path)
      const a = after.get(path)
      if (b === a) return []
      if (b === undefined) return [{ path, status: 'added', after: content(a ?? '') }]
      if (a === undefined) return [{ path, status: 'deleted', before: content(b) }]
      return [{ path, status: 'modified', before: content(b), after: content(a) }]
    })
  }

  /** Blob ids are content hashes, so two commits share the blobs of the files they hold alike. */
  private readonly blobTexts = new Map<string, string>()

  openObjects(): ObjectSession {
    return {
      read: async (objects) =>
        new Map(
          objects.flatMap((o) => {
            const text = this.blobTexts.get(o)
            return text === undefined ? [] : [[o, new TextEncoder().encode(text)] as const]
          }),
        ),
      tree: async (sha) =>
        [...this.files(sha)].map(([path, text]): TreeBlob => {
          const object = createHash('sha1').update(text).digest('hex')
          this.blobTexts.set(object, text)
          return { path, type: 'file', object }
        }),
      close: () => {},
    }
  }

  async remotes(): Promise<readonly Remote[]> {
    return this.remoteList
  }

  /** The clone's remotes, `origin` first, as `git remote -v` would list them. */
  withRemotes(...remotes: Remote[]): this {
    this.remoteList = remotes
    return this
  }

  private remoteList: readonly Remote[] = []

  async grep(sha: string, pattern: string, globs: readonly string[]): Promise<string[]> {
    const regex = new RegExp(pattern)
    const suffixes = globs.map((g) => g.replace(/^\*/, ''))
    return [...this.files(sha)].filter(([path, text]) => suffixes.some((s) => path.endsWith(s)) && regex.test(text)).map(([path]) => path)
  }

  async changeAndHead(request: ChangeRequest): Promise<ChangeAndHead> {
    const changes = request.withChanges ? await this.changedFiles(request.base, request.head, request.filter) : []
    return { changes, headFiles: await this.headFiles(request.head, request.filter) }
  }

  async headFiles(head: string, filter: (p: string) => boolean): Promise<HeadFile[]> {
    return [...this.files(head)].filter(([p]) => filter(p)).map(([path, text]) => ({ path, content: content(text) }))
  }

  async show(sha: string, path: string): Promise<FileContent | undefined> {
    const text = this.files(sha).get(path)
    return text === undefined ? undefined : content(text)
  }

  private files(sha: string): ReadonlyMap<string, string> {
    const c = this.commits.get(sha)
    if (c === undefined) throw new Error(`fake git: no commit ${sha}`)
    return c.files
  }
}

function content(text: string): FileContent {
  return { type: 'file', bytes: new TextEncoder().encode(text) }
}

interface StoredRelease {
  object: Record<string, unknown>
}

/** A cluster of HelmReleases and ConfigMaps/Secrets kept in memory. */
export class FakeCluster implements ClusterClient {
  readonly server = 'https://fake.invalid'
  readonly patches: { ref: ReleaseRef; patch: ReleasePatch; dryRun: boolean }[] = []
  readonly events: ReleaseEvent[] = []
  readonly applied: unknown[] = []
  /** Names of releases whose next patch answers 409 once (someone else wrote first). */
  readonly conflictOnce = new Set<string>()
  /**
   * Releases whose next patch lands but whose answer is lost: the client's retry then gets 409
   * ('conflict'), or every retry fails too ('transient').
   */
  readonly loseAnswerOnce = new Map<string, 'conflict' | 'transient'>()
  private readonly releases = new Map<string, StoredRelease>()
  private readonly sources = new Map<string, LiveSource>()
  private readonly sourceAnnotations = new Map<string, Record<string, string>>()
  private version = 1

  addRelease(
    namespace: string,
    name: string,
    spec: Record<string, unknown> = {},
    extra: { annotations?: Record<string, string>; labels?: Record<string, string>; status?: Record<string, unknown> } = {},
  ): this {
    this.releases.set(`${namespace}/${name}`, {
      object: {
        metadata: {
          namespace,
          name,
          uid: `uid-${name}`,
          resourceVersion: String(this.version++),
          generation: 1,
          annotations: extra.annotations ?? {},
          labels: extra.labels ?? {},
        },
        spec,
        status: extra.status ?? {},
      },
    })
    return this
  }

  setSource(ref: SourceRef, data: Record<string, string>, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): this {
    this.sources.set(`${ref.kind}/${ref.namespace}/${ref.name}`, { kind: ref.kind, data, binaryData: {}, labels })
    this.sourceAnnotations.set(`${ref.kind}/${ref.namespace}/${ref.name}`, annotations)
    return this
  }

  /** Supports `key=value` selectors (comma-separated), as the tests use them. */
  async listSources(kind: SourceKind, namespace: string | undefined, labelSelector: string): Promise<SourceObject[]> {
    const wanted = labelSelector
      .split(',')
      .filter((t) => t !== '')
      .map((t) => t.split('='))
    return [...this.sources.entries()].flatMap(([id, s]): SourceObject[] => {
      const [k = '', ns = '', name = ''] = id.split('/')
      if (k !== kind || (namespace !== undefined && ns !== namespace)) return []
      if (!wanted.every(([key = '', value]) => s.labels[key] === value)) return []
      return [{ kind, namespace: ns, name, labels: s.labels, annotations: this.sourceAnnotations.get(id) ?? {} }]
    })
  }

  release(namespace: string, name: string): HelmRelease {
    const stored = this.releases.get(`${namespace}/${name}`)
    if (stored === undefined) throw new Error(`fake cluster: no release ${namespace}/${name}`)
    return toHelmRelease(stored.object)
  }

  async getRelease(ref: ReleaseRef): Promise<HelmRelease | undefined> {
    const stored = this.releases.get(`${ref.namespace}/${ref.name}`)
    return stored === undefined ? undefined : toHelmRelease(stored.object)
  }

  async listReleases(namespace: string | undefined): Promise<HelmRelease[]> {
    return [...this.releases.values()].map((r) => toHelmRelease(r.object)).filter((r) => namespace === undefined || r.namespace === namespace)
  }

  async patchRelease(ref: ReleaseRef, patch: ReleasePatch, options: WriteOptions): Promise<HelmRelease> {
    const key = `${ref.namespace}/${ref.name}`
    const stored = this.releases.get(key)
    if (stored === undefined) throw new Error(`fake cluster: no release ${key}`)
    this.patches.push({ ref, patch, dryRun: options.dryRun })
    const current = toHelmRelease(stored.object)
    if (this.conflictOnce.delete(key)) {
      this.bump(stored)
      throw new ConflictError(`patch ${key}: the object changed meanwhile (409 Conflict)`)
    }
    if (patch.resourceVersion !== undefined && patch.resourceVersion !== current.resourceVersion) {
      throw new ConflictError(`patch ${key}: the object changed meanwhile (409 Conflict)`)
    }
    if (options.dryRun) return current
    const metadata = record(stored.object['metadata'])
    metadata['annotations'] = mergeStrings(record(metadata['annotations']), patch.annotations)
    metadata['labels'] = mergeStrings(record(metadata['labels']), patch.labels)
    this.bump(stored)
    const lost = this.loseAnswerOnce.get(key)
    this.loseAnswerOnce.delete(key)
    if (lost === 'conflict') throw new ConflictError(`patch ${key}: the object changed meanwhile (409 Conflict)`)
    if (lost === 'transient') throw new TransientError(`patch ${key}: the connection was reset`)
    return toHelmRelease(stored.object)
  }

  async getSource(ref: SourceRef): Promise<LiveSource | undefined> {
    return this.sources.get(`${ref.kind}/${ref.namespace}/${ref.name}`)
  }

  async applyObject(object: unknown): Promise<void> {
    this.applied.push(object)
  }

  /** Secrets created (the digest key): 409 AlreadyExists as the apiserver answers when the name is taken. */
  readonly created: NewSecret[] = []

  async createSecret(secret: NewSecret): Promise<void> {
    const id = `Secret/${secret.namespace}/${secret.name}`
    if (this.sources.has(id)) throw new ConflictError(`create secrets ${secret.name} in namespace ${secret.namespace}: already exists (409 Conflict)`)
    this.created.push(secret)
    this.setSource({ kind: 'Secret', namespace: secret.namespace, name: secret.name }, { ...secret.data }, { ...secret.labels })
  }

  async getKustomizationRevision(): Promise<string | undefined> {
    return undefined
  }

  /** Flux bootstrap's sync as this cluster holds it; undefined: none. */
  bootstrap: FluxBootstrap | undefined = undefined
  /** Thrown by the read of the bootstrap (a role without get on it). */
  bootstrapError: Error | undefined = undefined

  async getBootstrap(): Promise<FluxBootstrap | undefined> {
    if (this.bootstrapError !== undefined) throw this.bootstrapError
    return this.bootstrap
  }

  /** OCIRepositories and HelmCharts as the API returns them, by "<namespace>/<name>". */
  readonly chartSources = new Map<string, Record<string, unknown>>()
  /** Thrown by every read of a chart source (a role without get on it). */
  chartSourceError: Error | undefined

  async getChartSource(ref: ChartSourceRef): Promise<ChartSource | undefined> {
    if (this.chartSourceError !== undefined) throw this.chartSourceError
    const object = this.chartSources.get(`${ref.namespace}/${ref.name}`)
    return object === undefined ? undefined : toChartSource(object)
  }

  async recordEvent(event: ReleaseEvent): Promise<void> {
    this.events.push(event)
  }

  async watchReleases(namespace: string, onRelease: (r: HelmRelease) => void): Promise<void> {
    for (const r of await this.listReleases(namespace)) onRelease(r)
  }

  private bump(stored: StoredRelease): void {
    record(stored.object['metadata'])['resourceVersion'] = String(this.version++)
  }
}

function record(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) throw new Error('fake cluster: expected an object')
  return value as Record<string, unknown>
}

function mergeStrings(current: Record<string, unknown>, patch: Readonly<Record<string, string | null>>): Record<string, unknown> {
  const next = { ...current }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k]
    else next[k] = v
  }
  return next
}

/** A clock that advances only when slept on: waits in tests take no time. */
export class FakeClock implements Clock {
  private current: number
  constructor(start = Date.UTC(2026, 10, 22, 10, 0, 0)) {
    this.current = start
  }
  now(): number {
    return this.current
  }
  async sleep(ms: number): Promise<void> {
    this.current += ms
  }
}

/** An outcome waiter that records what it is asked to wait for and answers each as upgraded. */
export function recordingWaiter(seen: Triggered[]): OutcomeWaiter {
  return {
    wait: async (_cluster, triggered) => {
      seen.push(...triggered)
      return triggered.map((t) => ({
        namespace: t.planned.namespace,
        name: t.planned.name,
        sources: t.planned.sources,
        status: Status.Upgraded,
        reason: 'UpgradeSucceeded',
        message: 'ok',
        durationMs: 0,
        severity: 'none' as const,
      }))
    },
  }
}
