// The real, native kustomize as the oracle of the differential rendering tests and the baseline
// of the bench (the product renders in its sandbox, never with this): built from its Go module by
// test/cluster/build.sh (cached like the cluster's binaries), found through the same helper.

import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { ensureBinaries } from './cluster.ts'

const run = promisify(execFile)

/** Path of the pinned kustomize, built on first use (about 11 s with a warm Go cache). */
export async function kustomizeBinary(log?: (line: string) => void): Promise<string> {
  const paths = await ensureBinaries(['kustomize'], { ...(log ? { log } : {}), timeoutMs: 15 * 60_000 })
  const path = paths.kustomize
  if (path === undefined) throw new Error('test/cluster/build.sh built no kustomize')
  return path
}

/** `kustomize build` of a directory as a user would run it: the reference output. */
export async function kustomizeAlone(binary: string, directory: string): Promise<string> {
  const { stdout } = await run(binary, ['build', '--load-restrictor', 'LoadRestrictionsNone', directory], { maxBuffer: 512 * 1024 * 1024 })
  return stdout
}
