// The sandboxed renderer, as the rest of the program sees it: Flux's kustomize code (and the
// generated kustomization.yaml, postBuild substitution, commonMetadata) and Helm's engine run in WebAssembly
// instances on worker threads, each seeing only the files of one build (worker.ts). A request
// gets an answer, never an exception, whatever the repository holds: a build past its deadline
// ends its thread, one past its memory maximum ends its instance, and either is the answer's
// error. Threads start on demand, up to the concurrency, and hold the process open only while busy.

import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type {
  BuildAnswer,
  BuildRequest,
  ChartVersionAnswer,
  ChartVersionRequest,
  HelmTemplateAnswer,
  HelmTemplateRequest,
  PostBuildAnswer,
  PostBuildRequest,
  Reply,
  Request,
  SourceFiles,
  WorkerResult,
  WorkerStart,
  WorkerTask,
} from './protocol.ts'
import { rendererInstalled } from './renderer-module.ts'

export interface Sandbox {
  /** kustomize's build of `request.path` in a source holding `files`, as kustomize-controller builds it. */
  build(request: BuildRequest, files: SourceFiles): Promise<BuildAnswer>
  /** Flux's postBuild substitution and commonMetadata on a build's output. */
  postBuild(request: PostBuildRequest): Promise<PostBuildAnswer>
  /** One release rendered as helm-controller renders it, from a chart holding `files`. */
  helmTemplate(request: HelmTemplateRequest, files: SourceFiles): Promise<HelmTemplateAnswer>
  /** A chart version picked from a Helm repository index's versions, as source-controller picks it. */
  chartVersion(request: ChartVersionRequest): Promise<ChartVersionAnswer>
  /** Starts loading the module and one instance ahead of the first request. */
  warm(): void
  /** Ends every thread. */
  close(): Promise<void>
}

export interface SandboxOptions {
  /** Instances (worker threads) at most; default two, fewer on a one-CPU machine. */
  readonly concurrency?: number
  /** How long one request may run; default 60 s. */
  readonly deadlineMs?: number
  /** Each instance's memory maximum; default 1 GiB. */
  readonly memoryBytes?: number
}

export const DEFAULT_DEADLINE_MS = 60_000
/** Builds waiting per instance before another instance is started. */
const QUEUE_PER_THREAD = 4
export const DEFAULT_MEMORY_BYTES = 1024 * 1024 * 1024

interface Task {
  readonly message: WorkerTask
  readonly resolve: (reply: Reply) => void
}

interface Thread {
  readonly worker: Worker
  /** Its instance has started: the deadline of a task counts from here, not from the start-up. */
  ready: boolean
  task: Task | undefined
  timer: NodeJS.Timeout | undefined
  /** Why the thread was ended, for the answer of the task it held. */
  ended: string | undefined
}

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const concurrency = Math.max(1, options.concurrency ?? Math.min(2, availableParallelism()))
  const deadline = options.deadlineMs ?? DEFAULT_DEADLINE_MS
  const memory = options.memoryBytes ?? DEFAULT_MEMORY_BYTES
  const threads = new Set<Thread>()
  const queue: Task[] = []
  let ids = 0
  let closed = false
  /** Compiled by the first thread, handed to the others. */
  let module: WebAssembly.Module | undefined

  const start = (): Thread => {
    const worker = new Worker(WORKER_URL)
    const thread: Thread = { worker, ready: false, task: undefined, timer: undefined, ended: undefined }
    threads.add(thread)
    worker.unref()
    worker.postMessage({ module, memoryBytes: memory } satisfies WorkerStart)
    worker.on('message', (result: WorkerResult) => {
      if ('ready' in result) {
        module ??= result.module
        thread.ready = true
        pump()
      } else if ('fatal' in result) thread.ended ??= fatalReason(result.fatal, memory)
      else finish(thread, result.reply)
    })
    worker.on('error', (error) => (thread.ended ??= `the renderer failed: ${error.message}`))
    worker.on('exit', () => {
      threads.delete(thread)
      if (thread.timer !== undefined) clearTimeout(thread.timer)
      const task = thread.task
      thread.task = undefined
      const reason = thread.ended ?? 'the renderer stopped'
      task?.resolve({ error: reason })
      // An instance that cannot even start would fail again: the waiting requests get why.
      if (!thread.ready) for (const waiting of queue.splice(0)) waiting.resolve({ error: reason })
      pump()
    })
    return thread
  }

  const end = (thread: Thread, reason: string): void => {
    thread.ended ??= reason
    void thread.worker.terminate()
  }

  const finish = (thread: Thread, reply: Reply): void => {
    if (thread.timer !== undefined) clearTimeout(thread.timer)
    const task = thread.task
    thread.task = undefined
    thread.timer = undefined
    thread.worker.unref()
    task?.resolve(reply)
    pump()
  }

  const pump = (): void => {
    while (queue.length > 0 && !closed) {
      const thread = [...threads].find((t) => t.ready && t.task === undefined && t.ended === undefined)
      if (thread === undefined) {
        // Another instance costs a second of CPU to start: worth it only for a queue several
        // builds deep per instance (a full render), not for the few builds of a small commit.
        if (threads.size < concurrency && queue.length >= QUEUE_PER_THREAD * threads.size) start()
        return
      }
      const task = queue.shift() as Task
      thread.task = task
      thread.worker.ref()
      const busy = thread
      busy.timer = setTimeout(() => end(busy, `it ran longer than ${deadline / 1000} s, the renderer's deadline for one build`), deadline)
      thread.worker.postMessage(task.message)
    }
  }

  const ask = async (request: Request, files?: SourceFiles): Promise<Reply> => {
    if (closed) return { error: 'the renderer is closed' }
    // A module that is not installed is the installation's fault, not the repository's: thrown.
    await rendererInstalled()
    return new Promise((resolve) => {
      queue.push({ message: { id: ++ids, request, ...(files === undefined ? {} : { files }) }, resolve })
      pump()
    })
  }

  return {
    build: async (request, files) => {
      const reply = await ask({ op: 'build', build: { ...request, root: '' } }, files)
      return reply.build ?? { error: reply.error ?? 'the renderer gave no answer' }
    },
    postBuild: async (request) => {
      const reply = await ask({ op: 'postBuild', postBuild: request })
      return reply.postBuild ?? { error: reply.error ?? 'the renderer gave no answer' }
    },
    helmTemplate: async (request, files) => {
      const reply = await ask({ op: 'helmTemplate', helmTemplate: { ...request, root: '' } }, files)
      return reply.helmTemplate ?? { error: reply.error ?? 'the renderer gave no answer' }
    },
    chartVersion: async (request) => {
      const reply = await ask({ op: 'chartVersion', chartVersion: request })
      return reply.chartVersion ?? { error: reply.error ?? 'the renderer gave no answer' }
    },
    warm: () => {
      if (threads.size === 0 && !closed) start()
    },
    close: async () => {
      closed = true
      for (const task of queue.splice(0)) task.resolve({ error: 'the renderer is closed' })
      await Promise.all([...threads].map((t) => t.worker.terminate()))
    },
  }
}

/** Next to this module when run from source, next to the bundle (dist/sandbox-worker.js) when bundled. */
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './sandbox-worker.js', import.meta.url)

/** Go prints "out of memory" when the module's memory cannot grow past its maximum. */
function fatalReason(fatal: string, memory: number): string {
  if (/out of memory/i.test(fatal)) return `it needed more than ${Math.round(memory / 1024 / 1024)} MiB, the renderer's memory limit for one build`
  return `the renderer failed: ${fatal}`
}
