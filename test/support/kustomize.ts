// The real kustomize for rendering tests and the bench: built from its Go module by
// test/cluster/build.sh (cached like the cluster's binaries), found through the same helper.

import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { kustomizeAt, type Kustomize } from '../../src/kustomize/kustomize.ts'
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

/** A kustomize that records which directories it was asked to build. */
export function countingKustomize(binary: string): Kustomize & { readonly builds: string[] } {
  const inner = kustomizeAt(binary, [])
  const builds: string[] = []
  return {
    description: inner.description,
    builds,
    build: (directory, options) => {
      builds.push(directory)
      return inner.build(directory, options)
    },
  }
}

/**
 * An executable around `binary` that logs each directory it builds, for code that locates
 * kustomize by path (the kustomize-path input): a shell script in `dir`.
 */
export function loggingKustomize(binary: string, dir: string): { readonly path: string; builds(): string[] } {
  const path = join(dir, 'kustomize')
  const log = join(dir, 'builds.log')
  writeFileSync(log, '')
  // kustomize build --load-restrictor LoadRestrictionsNone <directory>: the directory comes last.
  writeFileSync(path, `#!/bin/sh\nfor last; do :; done\nprintf '%s\\n' "$last" >> '${log}'\nexec '${binary}' "$@"\n`, { mode: 0o755 })
  return {
    path,
    builds: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
  }
}
