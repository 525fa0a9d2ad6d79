// A worker thread holding one instance of the renderer module. Its WASI is an in-memory
// filesystem (@bjorn3/browser_wasi_shim) holding only the files of the build in progress: the
// module sees no host file, no network (wasip1 has none) and cannot start a process. The host
// bounds each request's time by ending this thread, and the module's memory by its maximum
// (memory-limit.ts); an instance that fails fatally reports it and the thread exits.

import { parentPort } from 'node:worker_threads'
import { ConsoleStdout, Directory, File, OpenFile, PreopenDirectory, WASI, type Inode } from '@bjorn3/browser_wasi_shim'
import type { Reply, SourceFiles, WorkerResult, WorkerStart, WorkerTask } from './protocol.ts'
import { compileRenderer } from './renderer-module.ts'

interface Exports {
  readonly memory: WebAssembly.Memory
  hrt_alloc(size: number): number
  hrt_free(pointer: number): void
  hrt_call(pointer: number, size: number): bigint
}

/** Go's own last words when the instance dies: its first `fatal error:` or `panic:` line. */
let lastWords: string | undefined
const root = new Map<string, Inode>()

const port = parentPort
if (port === null) throw new Error('the renderer worker runs as a worker thread')

let begin: (start: WorkerStart) => void = () => {}
const started = new Promise<WorkerStart>((resolve) => (begin = resolve)).then(async ({ module, memoryBytes }) => {
  const compiled = module ?? (await compileRenderer(memoryBytes))
  const wasi = new WASI(
    ['renderer'],
    // Go's collector works harder as the heap nears the module's maximum, before growing into it.
    [`GOMEMLIMIT=${Math.floor(memoryBytes * 0.8)}`],
    [
      new OpenFile(new File([])),
      ConsoleStdout.lineBuffered(() => {}),
      ConsoleStdout.lineBuffered((line) => {
        if (lastWords === undefined && /^(fatal error|panic): /.test(line)) lastWords = line.slice(0, 300)
      }),
      new PreopenDirectory('/', root),
    ],
    { debug: false },
  )
  const instance = await WebAssembly.instantiate(compiled, { wasi_snapshot_preview1: wasi.wasiImport })
  wasi.initialize(instance as unknown as { exports: { memory: WebAssembly.Memory; _initialize?: () => unknown } })
  return { module: compiled, exports: instance.exports as unknown as Exports }
})

const encoder = new TextEncoder()
const decoder = new TextDecoder()

port.on('message', (message: WorkerStart | WorkerTask) => {
  if ('module' in message) {
    begin(message)
    void started.then(
      ({ module }) => {
        port.postMessage({ ready: true, module } satisfies WorkerResult)
      },
      (error: unknown) => die(0, error),
    )
    return
  }
  const task = message
  void started.then(
    ({ exports }) => port.postMessage(run(exports, task)),
    (error: unknown) => die(task.id, error),
  )
})

function run(exports: Exports, task: WorkerTask): WorkerResult {
  const name = `t${task.id}`
  let request = task.request
  if (task.files !== undefined) {
    root.set(name, tree(task.files))
    if (request.op === 'build') request = { ...request, build: { ...request.build, root: `/${name}` } }
    if (request.op === 'helmTemplate') request = { ...request, helmTemplate: { ...request.helmTemplate, root: `/${name}` } }
  }
  try {
    return { id: task.id, reply: call(exports, JSON.stringify(request)) }
  } catch (error) {
    return die(task.id, error)
  } finally {
    root.delete(name)
  }
}

function call(exports: Exports, request: string): Reply {
  const bytes = encoder.encode(request)
  const input = exports.hrt_alloc(bytes.length)
  new Uint8Array(exports.memory.buffer, input, bytes.length).set(bytes)
  const packed = exports.hrt_call(input, bytes.length)
  exports.hrt_free(input)
  const pointer = Number(packed >> 32n)
  const length = Number(packed & 0xffffffffn)
  // Copied out before the free: the module may reuse the memory.
  const text = decoder.decode(new Uint8Array(exports.memory.buffer, pointer, length).slice())
  exports.hrt_free(pointer)
  return JSON.parse(text) as Reply
}

/** The files as directories of the in-memory filesystem; a path with an empty, `.` or `..` part is left out. */
function tree(files: SourceFiles): Directory {
  const top = new Directory(new Map())
  for (const [path, bytes] of files) {
    const parts = path.split('/')
    if (parts.some((p) => p === '' || p === '.' || p === '..')) continue
    let dir = top
    for (const part of parts.slice(0, -1)) {
      let next = dir.contents.get(part)
      if (next === undefined) {
        next = new Directory(new Map())
        dir.contents.set(part, next)
      }
      if (!(next instanceof Directory)) break
      dir = next
    }
    const last = parts[parts.length - 1] ?? ''
    if (!dir.contents.has(last)) dir.contents.set(last, new File(bytes))
  }
  return top
}

/** Reports why the instance died (Go's last words, when it said any) and ends the thread. */
function die(id: number, error: unknown): never {
  const message = lastWords ?? (error instanceof Error ? error.message : String(error))
  port?.postMessage({ id, fatal: message } satisfies WorkerResult)
  process.exit(1)
}
