// A parse-pool thread (see parse-pool.ts): parses the manifest files it is sent and answers
// with the results, in order. Bundled as dist/parse-worker.js next to the entry points.

import { parentPort, workerData } from 'node:worker_threads'
import { parseManifestFile, type ManifestOptions } from '../core/manifest.ts'
import type { FileToRead } from '../core/plan.ts'

// Handed over by the pool that started this thread, with the plan's options.
const options: ManifestOptions = workerData

parentPort?.on('message', (files: readonly FileToRead[]) => {
  parentPort?.postMessage(files.map((file) => parseManifestFile(file.path, file.content, options)))
})
