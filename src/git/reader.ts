// Reads commits from a local clone: which files changed and what they contain.
// Read-only: never touches the index, the work tree or the refs.

import { spawn } from 'node:child_process'
import { stat } from 'node:fs/promises'
import { ConfigurationError, GitError, messageOf } from '../lib/errors.ts'
import type { FileChange, FileContent, HeadFile } from '../core/model.ts'
import { DEFAULT_MAX_BYTES } from '../core/manifest.ts'

/** Decides which repository-relative paths are listed and read at all. */
export type PathFilter = (path: string) => boolean

export interface GitReader {
  /** Full SHA of the commit `rev` names; undefined when it is not in the clone (shallow clone, force push). */
  resolve(rev: string): Promise<string | undefined>
  /** First parent of `sha`; undefined for a root commit or when the parent was not fetched. */
  parent(sha: string): Promise<string | undefined>
  /**
   * Files that differ between `base` and `head` and pass `filter`, with their contents.
   * Renames are split into a delete and an add. Without `base` every file at `head` is added.
   */
  changedFiles(base: string | undefined, head: string, filter: PathFilter): Promise<FileChange[]>
  /** Every file at `head` that passes `filter`, with its content. */
  headFiles(head: string, filter: PathFilter): Promise<HeadFile[]>
  /**
   * What a plan reads, together: the change (as `changedFiles`; none when `withChanges` is false)
   * and the head's files (as `headFiles`), each blob read once: a changed file's new side is a
   * head file too, and one `cat-file` pair serves both (a process costs ~20 ms to start).
   */
  changeAndHead(request: ChangeRequest): Promise<ChangeAndHead>
  /** One file at `sha`; undefined when there is no such path (or it is a directory). */
  show(sha: string, path: string): Promise<FileContent | undefined>
  /**
   * A reader of trees and blobs kept open (one `git cat-file --batch` for every read, started on
   * the first), so a caller lists commits and reads only the files it needs. Close it when done.
   */
  openObjects(): ObjectSession
  /**
   * Paths at `sha` whose text matches `pattern`, among the files `globs` name: an extended regular
   * expression of ours, or with `fixed` a plain text (never a pattern built from repository content).
   */
  grep(sha: string, pattern: string, globs: readonly string[], options?: { readonly fixed?: boolean }): Promise<string[]>
  /** The clone's remotes and the URLs they fetch from (git's `insteadOf` applied), `origin` first. */
  remotes(): Promise<readonly Remote[]>
}

export interface Remote {
  readonly name: string
  /** As git stores it: may hold credentials, never print it. */
  readonly url: string
}

export interface ChangeRequest {
  /** Undefined: every file at `head` counts as added. */
  readonly base: string | undefined
  readonly head: string
  readonly filter: PathFilter
  /** False for a full sync: only the head's files are read. */
  readonly withChanges: boolean
}

export interface ChangeAndHead {
  readonly changes: FileChange[]
  readonly headFiles: HeadFile[]
}

export interface ObjectSession {
  /** The bytes of these blobs, no size limit; a missing one fails the read. */
  read(objects: readonly string[]): Promise<Map<string, Uint8Array>>
  /** The files and symbolic links of commit `sha`'s tree with their blob ids, by path (submodules left out); content is not read. */
  tree(sha: string): Promise<TreeBlob[]>
  /** Ends the git process; reads still pending fail. */
  close(): void
}

/** One blob of a commit's tree. */
export interface TreeBlob {
  /** Repository-relative, forward slashes. */
  readonly path: string
  readonly type: 'file' | 'symlink'
  readonly object: string
}

export interface GitReaderOptions {
  /** A directory inside the clone. */
  readonly cwd: string
  /** The git executable; default `git` from PATH. */
  readonly git?: string
  /** Blobs larger than this are never read, only reported with their size (default: the manifest limit, 1 MiB). */
  readonly maxBlobBytes?: number
}

/** A path's entry in a tree: its mode and object. */
interface TreeEntry {
  readonly mode: string
  readonly object: string
}

interface RawChange {
  readonly path: string
  readonly status: FileChange['status']
  readonly before?: TreeEntry
  readonly after?: TreeEntry
}

type Run = ((args: readonly string[], options?: RunOptions) => Promise<RunResult>) & { readonly maxBlobBytes?: number }

export async function createGitReader(options: GitReaderOptions): Promise<GitReader> {
  const git: Run = (args, runOptions) => runGit(options.git ?? 'git', options.cwd, args, runOptions)
  await verifyRepository(options.cwd, git)
  const run: Run = Object.assign(git, { maxBlobBytes: options.maxBlobBytes ?? DEFAULT_MAX_BYTES })
  return {
    resolve: (rev) => resolveCommit(run, rev),
    parent: (sha) => resolveCommit(run, `${sha}^1`),
    changedFiles: (base, head, filter) => changedFiles(run, base, head, filter),
    headFiles: (head, filter) => headFiles(run, head, filter),
    changeAndHead: (request) => changeAndHead(run, request),
    show: (sha, path) => show(run, sha, path),
    openObjects: () => openObjectSession(options.git ?? 'git', options.cwd),
    grep: (sha, pattern, globs, options) => grepTree(run, sha, pattern, globs, options?.fixed === true),
    remotes: () => remotes(run),
  }
}

async function verifyRepository(cwd: string, run: Run): Promise<void> {
  const hint = 'check out the repository first (actions/checkout) or run from inside a clone'
  const isDirectory = await stat(cwd).then(
    (s) => s.isDirectory(),
    () => false,
  )
  if (!isDirectory) throw new ConfigurationError(`${cwd} is not a git repository (no such directory); ${hint}.`)
  try {
    await run(['rev-parse', '--git-dir'])
  } catch (error) {
    // A missing git binary is a GitError too; keep its detail, it is the actual problem.
    const detail = error instanceof GitError ? error.detail : messageOf(error)
    if (detail.includes('dubious ownership')) {
      // Containers often run as another user than the one that checked out.
      throw new ConfigurationError(
        `git refuses ${cwd}: another user owns it; run 'git config --global --add safe.directory ${cwd}' first (actions/checkout does this for its own steps) (${detail}).`,
        { cause: error },
      )
    }
    throw new ConfigurationError(`${cwd} is not a git repository; ${hint} (${detail}).`, { cause: error })
  }
}

async function resolveCommit(run: Run, rev: string): Promise<string | undefined> {
  if (rev.trim() === '') return undefined
  // --quiet makes an unknown or missing revision exit 1 with no output; anything else is a real failure.
  const { stdout, exitCode } = await run(['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`], {
    allowedExitCodes: [1],
  })
  const sha = stdout.toString('utf8').trim()
  return exitCode === 0 && sha !== '' ? sha : undefined
}

async function changedFiles(run: Run, base: string | undefined, head: string, filter: PathFilter): Promise<FileChange[]> {
  const changes = base === undefined ? await treeAsAdded(run, head, filter) : await diffTrees(run, base, head, filter)
  const blobs = await readBlobs(run, changes.flatMap(sidesOf))
  return changes.map((c) => changeOf(c, blobs))
}

/** The blobs a change reads: its old and new sides, where it has them. */
function sidesOf(c: RawChange): TreeEntry[] {
  return [c.before, c.after].filter(isDefined)
}

function changeOf(c: RawChange, blobs: ReadonlyMap<string, Uint8Array | number>): FileChange {
  return {
    path: c.path,
    status: c.status,
    ...(c.before === undefined ? {} : { before: contentOf(c.before, blobs) }),
    ...(c.after === undefined ? {} : { after: contentOf(c.after, blobs) }),
  }
}

async function changeAndHead(run: Run, request: ChangeRequest): Promise<ChangeAndHead> {
  const { base, head, filter } = request
  const [files, diffed] = await Promise.all([
    listTree(run, head, filter),
    request.withChanges && base !== undefined ? diffTrees(run, base, head, filter) : Promise.resolve(undefined),
  ])
  // Without a base the head's listing is the change: one ls-tree for both.
  const changes = !request.withChanges ? [] : (diffed ?? files.map(asAdded))
  const blobs = await readBlobs(run, [...changes.flatMap(sidesOf), ...files.map((f) => f.entry)])
  return { changes: changes.map((c) => changeOf(c, blobs)), headFiles: files.map((f) => headFileOf(f, blobs)) }
}

async function treeAsAdded(run: Run, head: string, filter: PathFilter): Promise<RawChange[]> {
  return (await listTree(run, head, filter)).map(asAdded)
}

function asAdded(file: ListedFile): RawChange {
  return { path: file.path, status: 'added', after: file.entry }
}

async function diffTrees(run: Run, base: string, head: string, filter: PathFilter): Promise<RawChange[]> {
  const args = ['-c', 'core.quotePath=false', 'diff', '--raw', '-z', '--no-renames', '--no-abbrev', '--end-of-options', base, head, '--']
  const { stdout } = await run(args)
  return parseRawDiff(stdout.toString('utf8'), commandLine(args)).filter((c) => filter(c.path))
}

/** `:<mode> <mode> <object> <object> <status>` NUL `<path>` NUL, once per file (no renames: one path each). */
function parseRawDiff(output: string, command: string): RawChange[] {
  const fields = splitNul(output)
  if (fields.length % 2 !== 0) throw unexpectedOutput(command, 'an odd number of NUL-separated fields')
  return fields.flatMap((meta, i) => (i % 2 === 0 ? [parseRawRecord(meta, fields[i + 1], command)] : []))
}

const RAW_META = /^:([0-7]{6}) ([0-7]{6}) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])[0-9]*$/

function parseRawRecord(meta: string, path: string | undefined, command: string): RawChange {
  const [, srcMode, dstMode, srcObject, dstObject, letter] = RAW_META.exec(meta) ?? []
  if (path === undefined || srcMode === undefined || dstMode === undefined || srcObject === undefined || dstObject === undefined || letter === undefined) {
    throw unexpectedOutput(command, `'${meta}'`)
  }
  const status = statusOf(letter, command)
  return {
    path,
    status,
    ...(status === 'added' ? {} : { before: { mode: srcMode, object: srcObject } }),
    ...(status === 'deleted' ? {} : { after: { mode: dstMode, object: dstObject } }),
  }
}

function statusOf(letter: string, command: string): FileChange['status'] {
  switch (letter) {
    case 'A':
      return 'added'
    case 'D':
      return 'deleted'
    case 'M': // content or mode
    case 'T': // type, e.g. file → symlink
      return 'modified'
    default:
      throw unexpectedOutput(command, `status '${letter}' (renames and copies are switched off)`)
  }
}

async function headFiles(run: Run, head: string, filter: PathFilter): Promise<HeadFile[]> {
  const files = await listTree(run, head, filter)
  const blobs = await readBlobs(
    run,
    files.map((f) => f.entry),
  )
  return files.map((f) => headFileOf(f, blobs))
}

function headFileOf(file: ListedFile, blobs: ReadonlyMap<string, Uint8Array | number>): HeadFile {
  return { path: file.path, content: contentOf(file.entry, blobs) }
}

async function show(run: Run, sha: string, path: string): Promise<FileContent | undefined> {
  const args = ['--literal-pathspecs', 'ls-tree', '-z', '--full-tree', '--end-of-options', sha, '--', path]
  const { stdout } = await run(args)
  const entry = parseTree(stdout.toString('utf8'), commandLine(args)).find((e) => e.path === path && e.type !== 'tree')
  if (entry === undefined) return undefined
  return contentOf(entry.entry, await readBlobs(run, [entry.entry]))
}

interface ListedFile {
  readonly path: string
  readonly type: string
  readonly entry: TreeEntry
}

async function listTree(run: Run, head: string, filter: PathFilter): Promise<ListedFile[]> {
  const args = ['ls-tree', '-r', '-z', '--full-tree', '--end-of-options', head]
  const { stdout } = await run(args)
  return parseTree(stdout.toString('utf8'), commandLine(args)).filter((f) => filter(f.path))
}

const TREE_META = /^([0-7]{6}) ([a-z]+) ([0-9a-f]+)$/

/** `<mode> <type> <object>` TAB `<path>` NUL, once per entry. */
function parseTree(output: string, command: string): ListedFile[] {
  return splitNul(output).map((record) => {
    const tab = record.indexOf('\t')
    const [, mode, type, object] = TREE_META.exec(record.slice(0, Math.max(tab, 0))) ?? []
    if (tab < 0 || mode === undefined || type === undefined || object === undefined) throw unexpectedOutput(command, `'${record}'`)
    return { path: record.slice(tab + 1), type, entry: { mode, object } }
  })
}

function splitNul(output: string): string[] {
  const fields = output.split('\0')
  return fields.at(-1) === '' ? fields.slice(0, -1) : fields
}

type EntryKind = FileContent['type']

function kindOf(mode: string): EntryKind {
  if (mode === '120000') return 'symlink'
  if (mode.startsWith('100')) return 'file' // 100644, 100755 (and the legacy 100664)
  return 'other' // 160000 gitlink (a submodule's commit, not in this repository)
}

function contentOf(entry: TreeEntry, blobs: ReadonlyMap<string, Uint8Array | number>): FileContent {
  const kind = kindOf(entry.mode)
  if (kind === 'other') return { type: 'other' }
  const bytes = blobs.get(entry.object)
  if (bytes === undefined) throw new Error(`blob ${entry.object} was not read`) // a bug here, not in git
  if (typeof bytes === 'number') return { type: 'oversized', size: bytes }
  return kind === 'symlink' ? { type: 'symlink', target: new TextDecoder().decode(bytes) } : { type: 'file', bytes }
}

// ---- cat-file --batch ------------------------------------------------------------------------

interface BatchObject {
  readonly object: string
  /** `blob`, `tree`, …, or `missing`. */
  readonly type: string
  readonly bytes: Uint8Array
}

/**
 * Reads the blobs of these entries (files and symlinks) through one `git cat-file --batch`, after
 * `--batch-check` gave their sizes: a blob over the limit is never read (a pull request of huge
 * files must not fill the runner's memory); its size stands in for its bytes.
 */
async function readBlobs(run: Run, entries: readonly TreeEntry[]): Promise<Map<string, Uint8Array | number>> {
  const objects = [...new Set(entries.filter((e) => kindOf(e.mode) !== 'other').map((e) => e.object))]
  if (objects.length === 0) return new Map()
  const sizes = await blobSizes(run, objects)
  const limit = run.maxBlobBytes ?? DEFAULT_MAX_BYTES
  const oversized = objects.filter((o) => (sizes.get(o) ?? 0) > limit)
  const wanted = objects.filter((o) => (sizes.get(o) ?? 0) <= limit)
  const read = await readSmallBlobs(run, wanted)
  return new Map<string, Uint8Array | number>([...read, ...oversized.map((o): [string, number] => [o, sizes.get(o) ?? 0])])
}

/** `git cat-file --batch-check`: each object's size, without reading it. */
async function blobSizes(run: Run, objects: readonly string[]): Promise<Map<string, number>> {
  const args = ['cat-file', '--batch-check', '--buffer']
  const { stdout } = await run(args, { input: objects.join('\n') + '\n' })
  const lines = stdout
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
  if (lines.length !== objects.length) throw unexpectedOutput(commandLine(args), `${lines.length} lines for ${objects.length} requests`)
  return new Map(
    lines.map((line, i) => {
      const [object = '', type = '', size = ''] = line.split(' ')
      if (object !== objects[i] || type !== 'blob' || !/^\d+$/.test(size)) {
        const detail = type === 'missing' ? 'not in the clone (partial or shallow clone?)' : `'${line}', not a blob`
        throw new GitError({ command: commandLine(args), detail: `object ${objects[i]} is ${detail}` })
      }
      return [object, Number(size)]
    }),
  )
}

async function readSmallBlobs(run: Run, wanted: readonly string[]): Promise<Map<string, Uint8Array>> {
  if (wanted.length === 0) return new Map()
  const args = ['cat-file', '--batch', '--buffer']
  const parser = createBatchParser()
  await run(args, { input: wanted.join('\n') + '\n', onStdout: parser.push })
  const objects = parser.end(commandLine(args))
  if (objects.length !== wanted.length) throw unexpectedOutput(commandLine(args), `${objects.length} objects for ${wanted.length} requests`)
  return new Map(
    objects.map((o, i) => {
      if (o.object !== wanted[i] || o.type !== 'blob') {
        const detail = o.type === 'missing' ? 'not in the clone (partial or shallow clone?)' : `a ${o.type}, not a blob`
        throw new GitError({ command: commandLine(args), detail: `object ${wanted[i]} is ${detail}` })
      }
      return [o.object, o.bytes]
    }),
  )
}

/**
 * `git cat-file --batch` without --buffer answers each request as it comes: one process for every
 * read of a session, trees included (a listing reads the trees a commit does not share with one
 * listed before, instead of a process per listing).
 */
function openObjectSession(git: string, cwd: string): ObjectSession {
  const args = ['cat-file', '--batch']
  const command = commandLine(args)
  interface Request {
    readonly names: readonly string[]
    readonly got: BatchObject[]
    readonly resolve: (objects: BatchObject[]) => void
  }
  const pending: Request[] = []
  let child: ReturnType<typeof spawn> | undefined
  let failure: Error | undefined
  let failed: (error: Error) => void = () => {}
  const failures = new Promise<never>((_, reject) => (failed = reject))
  failures.catch(() => {})
  const fail = (error: Error): void => {
    failure ??= error
    pending.splice(0)
    failed(failure)
  }
  const parser = createBatchParser((object) => {
    const request = pending[0]
    if (request === undefined) return fail(unexpectedOutput(command, 'an object nobody asked for'))
    request.got.push(object)
    if (request.got.length < request.names.length) return
    pending.shift()
    request.resolve(request.got)
  })
  const start = (): ReturnType<typeof spawn> => {
    const started = spawn(git, args, { cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' }, stdio: ['pipe', 'pipe', 'pipe'] })
    const stderr: Buffer[] = []
    started.stdout?.on('data', (chunk: Buffer) => {
      try {
        parser.push(chunk)
      } catch (error) {
        fail(new GitError({ command, detail: `unexpected output: ${messageOf(error)}` }, { cause: error }))
        started.kill()
      }
    })
    started.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk))
    started.stdin?.on('error', () => {})
    started.on('error', (error) => fail(new GitError({ command, detail: spawnProblem(git, error) }, { cause: error })))
    started.on('close', (code) => {
      if (pending.length > 0) fail(new GitError({ command, detail: firstLine(Buffer.concat(stderr).toString('utf8')) ?? `exit ${code ?? 'by signal'}` }))
    })
    return started
  }
  /** The objects these names (ids, or `<commit>^{tree}`) name, in order; `missing` ones included. */
  const objects = (names: readonly string[]): Promise<BatchObject[]> => {
    if (names.length === 0) return Promise.resolve([])
    if (failure !== undefined) return Promise.reject(failure)
    if (names.some((n) => /[\n\r]/.test(n))) return Promise.reject(new GitError({ command, detail: 'an object name holds a line break' }))
    child ??= start()
    const running = child
    const answer = new Promise<BatchObject[]>((resolve) => {
      pending.push({ names, got: [], resolve })
      running.stdin?.write(names.join('\n') + '\n')
    })
    return Promise.race([answer, failures])
  }
  const notA = (o: BatchObject, type: string): GitError =>
    new GitError({
      command,
      detail: `object ${o.object} is ${o.type === 'missing' ? 'not in the clone (partial or shallow clone?)' : `a ${o.type}, not a ${type}`}`,
    })
  const trees = new Map<string, Promise<TreeItem[]>>()
  const readTrees = (ids: readonly string[]): Promise<TreeItem[]>[] => {
    const wanted = [...new Set(ids.filter((id) => !trees.has(id)))]
    const read = objects(wanted)
    wanted.forEach((id, i) => {
      const items = read.then((all) => {
        const o = all[i]
        if (o === undefined || o.type !== 'tree') throw notA(o ?? { object: id, type: 'missing', bytes: new Uint8Array() }, 'tree')
        return parseTreeObject(o.bytes, id.length / 2)
      })
      items.catch(() => {})
      trees.set(id, items)
    })
    return ids.map((id) => trees.get(id) as Promise<TreeItem[]>)
  }
  const tree = async (sha: string): Promise<TreeBlob[]> => {
    const [root] = await objects([`${sha}^{tree}`])
    if (root === undefined || root.type !== 'tree') throw notA(root ?? { object: sha, type: 'missing', bytes: new Uint8Array() }, 'commit')
    trees.set(root.object, Promise.resolve(parseTreeObject(root.bytes, root.object.length / 2)))
    const out: TreeBlob[] = []
    // Breadth first: one request per depth, trees met before not read again.
    let level: { prefix: string; id: string }[] = [{ prefix: '', id: root.object }]
    while (level.length > 0) {
      const listed = await Promise.all(readTrees(level.map((l) => l.id)))
      const next: { prefix: string; id: string }[] = []
      level.forEach(({ prefix }, i) => {
        for (const item of listed[i] ?? []) {
          // A crafted tree can name entries git itself never checks out: they are no path of the commit.
          if (!checkableName(item.name)) continue
          const path = prefix + item.name
          const kind = kindOf(item.mode)
          if (item.mode === '40000') next.push({ prefix: `${path}/`, id: item.id })
          else if (kind === 'file' || kind === 'symlink') out.push({ path, type: kind, object: item.id })
        }
      })
      level = next
    }
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  }
  return {
    read: async (names) => {
      const unique = [...new Set(names)]
      const read = await objects(unique)
      const bad = read.find((o) => o.type !== 'blob')
      if (bad !== undefined) throw notA(bad, 'blob')
      return new Map(read.map((o) => [o.object, o.bytes]))
    },
    tree,
    close: () => {
      child?.stdin?.end()
      fail(new GitError({ command, detail: 'closed' }))
    },
  }
}

interface TreeItem {
  readonly mode: string
  readonly name: string
  readonly id: string
}

/**
 * Whether git's fsck accepts a tree entry's name (and checkout would write it): not empty, `.` or
 * `..`, no `/`, not `.git` in any case. Only such names make paths: `../x` or `.git/config` never do.
 */
export function checkableName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0') && name.toLowerCase() !== '.git'
}

/** A tree object: `<mode> <name>` NUL `<raw id>`, repeated; ids are `idBytes` long (20 SHA-1, 32 SHA-256). */
function parseTreeObject(bytes: Uint8Array, idBytes: number): TreeItem[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const items: TreeItem[] = []
  let offset = 0
  while (offset < buffer.length) {
    const space = buffer.indexOf(0x20, offset)
    const nul = buffer.indexOf(0, space)
    if (space < 0 || nul < 0 || nul + 1 + idBytes > buffer.length) throw new Error('a truncated tree object')
    items.push({
      mode: buffer.toString('latin1', offset, space),
      name: buffer.toString('utf8', space + 1, nul),
      id: buffer.toString('hex', nul + 1, nul + 1 + idBytes),
    })
    offset = nul + 1 + idBytes
  }
  return items
}

interface BatchParser {
  readonly push: (chunk: Buffer) => void
  readonly end: (command: string) => BatchObject[]
}

const LF = 0x0a

/**
 * Parses `<object> <type> <size>` LF `<size bytes>` LF (or `<object> missing` LF) as chunks arrive.
 * Each body is copied once into its own array, so large outputs stay linear.
 */
function createBatchParser(onObject?: (object: BatchObject) => void): BatchParser {
  const objects: BatchObject[] = []
  const emit = (object: BatchObject): void => (onObject ? onObject(object) : void objects.push(object))
  const allocate = createSlabAllocator()
  let header: Buffer[] = []
  let body: { object: string; type: string; bytes: Uint8Array; filled: number } | undefined
  let expectLf = false

  const startObject = (line: string): void => {
    const [object = '', type = '', size] = line.split(' ')
    if (type === 'missing' || type === 'ambiguous') {
      emit({ object, type: 'missing', bytes: new Uint8Array() })
      return
    }
    const length = Number(size)
    if (!Number.isSafeInteger(length) || length < 0) throw new Error(`unexpected header '${line}'`)
    body = { object, type, bytes: allocate(length), filled: 0 }
  }

  const push = (chunk: Buffer): void => {
    let offset = 0
    while (offset < chunk.length) {
      if (body !== undefined) {
        const n = Math.min(body.bytes.length - body.filled, chunk.length - offset)
        body.bytes.set(chunk.subarray(offset, offset + n), body.filled)
        body.filled += n
        offset += n
        if (body.filled === body.bytes.length) {
          emit({ object: body.object, type: body.type, bytes: body.bytes })
          body = undefined
          expectLf = true
        }
      } else if (expectLf) {
        if (chunk[offset] !== LF) throw new Error('no line feed after an object')
        offset += 1
        expectLf = false
      } else {
        const lf = chunk.indexOf(LF, offset)
        if (lf < 0) {
          header.push(chunk.subarray(offset))
          return
        }
        // Headers are ASCII and nearly always inside one chunk: decode in place.
        const line = header.length === 0 ? chunk.toString('latin1', offset, lf) : Buffer.concat([...header, chunk.subarray(offset, lf)]).toString('latin1')
        header = []
        offset = lf + 1
        startObject(line)
      }
    }
  }

  const end = (command: string): BatchObject[] => {
    // An empty body completes only when its LF arrives, so a pending one here means truncated output.
    if (body !== undefined || expectLf || header.length > 0) throw unexpectedOutput(command, 'output that ends mid-object')
    return objects
  }

  return { push, end }
}

const SLAB_SIZE = 256 * 1024
const OWN_ALLOCATION = 16 * 1024

/**
 * Hands out small arrays as views into shared slabs: thousands of tiny ConfigMaps would otherwise
 * be thousands of ArrayBuffers, and allocating and collecting those dominates the read.
 */
function createSlabAllocator(): (size: number) => Uint8Array {
  let slab = new Uint8Array(0)
  let used = 0
  return (size) => {
    if (size > OWN_ALLOCATION) return new Uint8Array(size)
    if (used + size > slab.length) {
      slab = new Uint8Array(SLAB_SIZE)
      used = 0
    }
    const view = slab.subarray(used, used + size)
    used += size
    return view
  }
}

// ---- running git -----------------------------------------------------------------------------

/** `git grep -l` at a commit: git reads the blobs itself, far faster than handing them to us. */
async function grepTree(run: Run, sha: string, pattern: string, globs: readonly string[], fixed: boolean): Promise<string[]> {
  // git grep takes no --end-of-options: a revision must not read as an option.
  if (sha.startsWith('-')) throw new GitError({ command: 'git grep', detail: `'${sha}' is not a revision` })
  const args = ['-c', 'grep.fallbackToNoIndex=false', 'grep', '-l', '-z', '-I', fixed ? '-F' : '-E', '--no-color', '-e', pattern, sha, '--', ...globs]
  // Exit 1: nothing matched.
  const { stdout } = await run(args, { allowedExitCodes: [1] })
  const prefix = `${sha}:`
  return splitNul(stdout.toString('utf8')).map((p) => (p.startsWith(prefix) ? p.slice(prefix.length) : p))
}

async function remotes(run: Run): Promise<Remote[]> {
  // `<name> TAB <url> (fetch|push)`, one line each.
  const { stdout } = await run(['remote', '-v'])
  const found = stdout
    .toString('utf8')
    .split('\n')
    .flatMap((line) => {
      const m = /^(\S+)\t(.*) \(fetch\)$/.exec(line)
      return m?.[1] === undefined || m[2] === undefined ? [] : [{ name: m[1], url: m[2] }]
    })
  return [...found.filter((r) => r.name === 'origin'), ...found.filter((r) => r.name !== 'origin')]
}

interface RunOptions {
  /** Written to stdin, which is then closed. */
  readonly input?: string
  /** Receives stdout as it arrives instead of collecting it. */
  readonly onStdout?: (chunk: Buffer) => void
  /** Exit codes that are answers rather than failures. */
  readonly allowedExitCodes?: readonly number[]
}

interface RunResult {
  readonly stdout: Buffer
  readonly exitCode: number
}

function runGit(git: string, cwd: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const command = commandLine(args)
  return new Promise((resolve, reject) => {
    // No prompts: a lazy fetch in a partial clone must fail, not hang the job.
    const child = spawn(git, args, { cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' } })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    let failure: Error | undefined

    child.stdout.on('data', (chunk: Buffer) => {
      if (failure !== undefined) return
      if (options.onStdout === undefined) {
        stdout.push(chunk)
        return
      }
      try {
        options.onStdout(chunk)
      } catch (error) {
        failure = new GitError({ command, detail: `unexpected output: ${messageOf(error)}` }, { cause: error })
        child.kill()
      }
    })
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
    // EPIPE when git exits early; the exit status tells the real story.
    child.stdin.on('error', () => {})
    child.stdin.end(options.input ?? '')

    // Git did not start (or could not be killed); 'close' may never follow.
    child.on('error', (error) => reject(new GitError({ command, detail: spawnProblem(git, error) }, { cause: error })))
    child.on('close', (code) => {
      if (failure !== undefined) return reject(failure)
      if (code === 0 || (code !== null && options.allowedExitCodes?.includes(code))) {
        return resolve({ stdout: Buffer.concat(stdout), exitCode: code })
      }
      const detail = firstLine(Buffer.concat(stderr).toString('utf8')) ?? (code === null ? 'killed by a signal' : 'no error output')
      reject(new GitError({ command, detail, ...(code === null ? {} : { exitCode: code }) }))
    })
  })
}

function spawnProblem(git: string, error: Error): string {
  const code = 'code' in error ? error.code : undefined
  return code === 'ENOENT' ? `git executable '${git}' not found; install git or put it on PATH` : error.message
}

function firstLine(text: string): string | undefined {
  return text
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '')
}

function commandLine(args: readonly string[]): string {
  return ['git', ...args].join(' ')
}

function unexpectedOutput(command: string, what: string): GitError {
  return new GitError({ command, detail: `unexpected output: ${what}` })
}

function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined
}
