// A large commit's manifests parsed on worker threads as well as this one. YAML parsing is
// most of a plan's time and every file parses on its own, so the files are shared out in
// chunks; the plan itself stays a pure function of its input (PlanInput.parsed) and parses
// whatever this leaves out, so a thread that fails costs time, never a result.

import { availableParallelism } from 'node:os'
import { setImmediate as yieldToEvents } from 'node:timers/promises'
import { Worker } from 'node:worker_threads'
import { parseManifestFile, type ManifestFile, type ManifestOptions } from '../core/manifest.ts'
import type { FileContent } from '../core/model.ts'
import { changedToRead, manifestOptionsOf, sourceNamesIn, unchangedToRead, type FileToRead, type PlanInput } from '../core/plan.ts'

/**
 * Below this many file contents to parse (both sides of a change count; ~20,000 changed files)
 * the threads' start-up, copying results back and the extra CPU (a cold JIT each) cost about what
 * they save. Since the fast YAML load (core/yaml-load.ts) the parse is a small part of a plan: on
 * two cores, 5,000 changed files (20,000 contents) planned in 2.54 s without threads and 2.73 s
 * with them; at 40,000 contents both took 5–6 s.
 */
export const PARALLEL_FROM = 40_000
const CHUNK = 50

type Parsed = Map<FileContent, ManifestFile>

/** The files the plan would parse, parsed on `threads` threads (this one included) when there are enough. */
export async function parseInParallel(
  input: Omit<PlanInput, 'parsed'>,
  threads = availableParallelism(),
  from = PARALLEL_FROM,
): Promise<ReadonlyMap<FileContent, ManifestFile>> {
  const changed = changedToRead(input)
  // Both sides of one path in one chunk: the digest memo then parses a shared value once.
  const first = [...changed.head, ...changed.base].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  if (threads < 2 || first.length + (input.fullSync ? input.headFiles.length : 0) < from) return new Map()
  let pool: Pool
  try {
    pool = startPool(manifestOptionsOf(input.options), Math.min(threads, 8) - 1)
  } catch {
    return new Map() // no threads here: the plan parses everything itself
  }
  try {
    const parsed = await pool.parse(first)
    for (const [content, file] of await pool.parse(unchangedToRead(input, sourceNamesIn(parsed.values())))) parsed.set(content, file)
    return parsed
  } finally {
    await pool.close()
  }
}

interface Pool {
  parse(files: readonly FileToRead[]): Promise<Parsed>
  close(): Promise<void>
}

interface Thread {
  readonly worker: Worker
  /** The answer to the chunk in flight (one at a time). */
  pending: { resolve: (files: ManifestFile[]) => void; reject: (error: Error) => void } | undefined
  failed: boolean
}

function startPool(options: ManifestOptions, workers: number): Pool {
  // Next to this module: src/parse-worker.ts when run from source, dist/parse-worker.js bundled.
  const url = new URL(import.meta.url.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js', import.meta.url)
  const threads: Thread[] = Array.from({ length: workers }, () => {
    const thread: Thread = { worker: new Worker(url, { workerData: options }), pending: undefined, failed: false }
    const fail = (error: Error): void => {
      thread.failed = true
      thread.pending?.reject(error)
      thread.pending = undefined
    }
    thread.worker.on('message', (files: ManifestFile[]) => {
      const pending = thread.pending
      thread.pending = undefined
      pending?.resolve(files)
    })
    thread.worker.on('error', fail)
    thread.worker.on('exit', (code) => fail(new Error(`parse thread exited with code ${code}`)))
    return thread
  })
  const ask = (thread: Thread, chunk: readonly FileToRead[]): Promise<ManifestFile[]> =>
    new Promise((resolve, reject) => {
      if (thread.failed) return reject(new Error('parse thread failed'))
      thread.pending = { resolve, reject }
      thread.worker.postMessage(chunk)
    })

  return {
    async parse(files) {
      const chunks: FileToRead[][] = []
      for (let i = 0; i < files.length; i += CHUNK) chunks.push(files.slice(i, i + CHUNK))
      const parsed: Parsed = new Map()
      const store = (chunk: readonly FileToRead[], results: readonly ManifestFile[]): void => {
        chunk.forEach((file, i) => {
          const result = results[i]
          if (result !== undefined) parsed.set(file.content, result)
        })
      }
      const here = (chunk: readonly FileToRead[]): void =>
        store(
          chunk,
          chunk.map((f) => parseManifestFile(f.path, f.content, options)),
        )
      const served = threads.map(async (thread) => {
        for (let chunk = chunks.shift(); chunk !== undefined; chunk = chunks.shift()) {
          try {
            store(chunk, await ask(thread, chunk))
          } catch {
            chunks.push(chunk) // given back: another thread parses it
            return
          }
        }
      })
      // This thread takes chunks too, letting the workers' answers in between.
      for (let chunk = chunks.shift(); chunk !== undefined; chunk = chunks.shift()) {
        here(chunk)
        await yieldToEvents()
      }
      await Promise.all(served)
      for (let chunk = chunks.shift(); chunk !== undefined; chunk = chunks.shift()) here(chunk)
      return parsed
    },
    async close() {
      await Promise.all(threads.map((t) => t.worker.terminate()))
    },
  }
}
