// Starts bench/worker.ts in a fresh Node process and reads its one JSON line.

import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { run } from './lib.ts'
import type { Job, WorkerOutput } from './worker.ts'

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'worker.ts')

export async function runWorker(job: Job, timeoutMs: number): Promise<WorkerOutput> {
  const ran = await run(process.execPath, ['--experimental-strip-types', '--no-warnings', WORKER, JSON.stringify(job)], { timeoutMs })
  const line = ran.stdout.trim().split('\n').at(-1) ?? ''
  if (ran.code !== 0 || line === '') throw new Error(`bench worker (${job.kind}) exited ${ran.code}: ${ran.stderr.slice(-3000)}`)
  return JSON.parse(line) as WorkerOutput
}
