// One commit's files, read lazily from git: the listing first (paths, blob ids, sizes), content
// only for what the Flux scan, a closure or a build reads. Blobs are shared by id between the
// two commits of a range and read in batches, so a one-app commit costs its closures, not the
// repository. A build gets the files of its closure, in memory.

import { posix } from 'node:path'
import type { ObjectSession, TreeBlob } from '../git/reader.ts'

/** The files a kustomize build can see: a commit's tree, an artifact laid out from one, a filtered one. */
export interface TreeView {
  /** Every file, sorted, forward slashes. */
  readonly paths: readonly string[]
  isFile(path: string): boolean
  isDirectory(path: string): boolean
  bytes(path: string): Promise<Uint8Array | undefined>
  text(path: string): Promise<string | undefined>
  /** Reads these files in one batch ahead of their use. */
  prefetch(paths: Iterable<string>): Promise<void>
}

/** Blob contents by id, each read once; reads asked for in the same turn go to git as one batch. */
export class BlobStore {
  private readonly cache = new Map<string, Promise<Uint8Array>>()
  private queue = new Map<string, { resolve: (bytes: Uint8Array) => void; reject: (error: unknown) => void }>()
  private readonly session: ObjectSession

  constructor(session: ObjectSession) {
    this.session = session
  }

  get(object: string): Promise<Uint8Array> {
    let found = this.cache.get(object)
    if (found === undefined) {
      found = new Promise<Uint8Array>((resolve, reject) => {
        if (this.queue.size === 0) setImmediate(() => void this.flush())
        this.queue.set(object, { resolve, reject })
      })
      // A failed read is reported to every reader that awaits it; none must be left unhandled.
      found.catch(() => {})
      this.cache.set(object, found)
    }
    return found
  }

  private async flush(): Promise<void> {
    const batch = this.queue
    this.queue = new Map()
    try {
      const read = await this.session.read([...batch.keys()])
      for (const [object, waiter] of batch) {
        const bytes = read.get(object)
        if (bytes === undefined) waiter.reject(new Error(`blob ${object} was not read`))
        else waiter.resolve(bytes)
      }
    } catch (error) {
      for (const waiter of batch.values()) waiter.reject(error)
    }
  }
}

const decoder = new TextDecoder()

/** A view's text reader: UTF-8 like Node's readFile(…, 'utf8'). */
export async function textOf(view: Pick<TreeView, 'bytes'>, path: string): Promise<string | undefined> {
  const bytes = await view.bytes(path)
  return bytes === undefined ? undefined : decoder.decode(bytes)
}

/** Every ancestor directory of these paths, '' (the root) included. */
export function directoriesOf(paths: Iterable<string>): Set<string> {
  const out = new Set<string>([''])
  for (const path of paths) {
    for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
      const dir = path.slice(0, i)
      if (out.has(dir)) break
      out.add(dir)
    }
  }
  return out
}

/** Symbolic links followed this deep at most, like a kernel refusing a loop. */
const MAX_LINKS = 8

export class Snapshot implements TreeView {
  readonly sha: string
  readonly paths: readonly string[]
  /** Path → the blob read for it (a symbolic link's target file). */
  private readonly entries: ReadonlyMap<string, TreeBlob>
  private readonly directories: ReadonlySet<string>
  private readonly store: BlobStore

  private constructor(sha: string, entries: ReadonlyMap<string, TreeBlob>, store: BlobStore) {
    this.sha = sha
    this.entries = entries
    this.store = store
    this.paths = [...entries.keys()].sort()
    this.directories = directoriesOf(this.paths)
  }

  /**
   * Lists commit `sha`. A symbolic link is the file it points to inside the tree; one that leaves
   * the tree, or names a directory, is dropped, so a build can read nothing outside the repository.
   */
  static async open(session: ObjectSession, store: BlobStore, sha: string): Promise<Snapshot> {
    const listed = await session.tree(sha)
    const byPath = new Map(listed.map((b) => [b.path, b]))
    const links = listed.filter((b) => b.type === 'symlink')
    const targets = new Map(await Promise.all(links.map(async (l) => [l.path, decoder.decode(await store.get(l.object))] as const)))
    const resolveLink = (path: string, depth: number): TreeBlob | undefined => {
      const blob = byPath.get(path)
      if (blob === undefined || blob.type === 'file' || depth > MAX_LINKS) return blob?.type === 'file' ? blob : undefined
      const target = targets.get(path) ?? ''
      if (target.startsWith('/')) return undefined
      const next = posix.normalize(posix.join(posix.dirname(path), target))
      if (next === '..' || next.startsWith('../')) return undefined
      return resolveLink(next, depth + 1)
    }
    const entries = new Map<string, TreeBlob>()
    for (const blob of listed) {
      const file = blob.type === 'file' ? blob : resolveLink(blob.path, 0)
      if (file !== undefined) entries.set(blob.path, file)
    }
    return new Snapshot(sha, entries, store)
  }

  /** The blob id at `path`, for telling which files two commits hold differently. */
  object(path: string): string | undefined {
    return this.entries.get(path)?.object
  }

  isFile(path: string): boolean {
    return this.entries.has(path)
  }

  isDirectory(path: string): boolean {
    return this.directories.has(path)
  }

  async bytes(path: string): Promise<Uint8Array | undefined> {
    const entry = this.entries.get(path)
    return entry === undefined ? undefined : this.store.get(entry.object)
  }

  text(path: string): Promise<string | undefined> {
    return textOf(this, path)
  }

  async prefetch(paths: Iterable<string>): Promise<void> {
    await Promise.all([...paths].map((p) => this.bytes(p)))
  }
}

/** `view` without the paths `keep` refuses (what source-controller leaves out of the artifact). */
export function filteredView(view: TreeView, keep: (path: string) => boolean): TreeView {
  const paths = view.paths.filter(keep)
  const files = new Set(paths)
  const directories = directoriesOf(paths)
  return {
    paths,
    isFile: (p) => files.has(p),
    isDirectory: (p) => directories.has(p),
    bytes: async (p) => (files.has(p) ? view.bytes(p) : undefined),
    text: async (p) => (files.has(p) ? view.text(p) : undefined),
    prefetch: (ps) => view.prefetch([...ps].filter((p) => files.has(p))),
  }
}
