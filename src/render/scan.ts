// The Flux objects written in a commit's files, found without building anything: which
// Kustomizations exist, where they are written, which GitRepositories and ArtifactGenerators
// they read. A cheap text filter first, so a large file that is no Flux object (a dashboard,
// a CRD bundle) is never parsed, and never an error.

import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import {
  artifactGenerator,
  fluxKustomization,
  gitRepository,
  isRecord,
  type ArtifactGeneratorSpec,
  type FluxKustomization,
  type GitRepositorySpec,
} from './flux-objects.ts'

/** Flux objects are small; bigger files are skipped by the scan (they are still built). */
const SCAN_LIMIT = 2 * 1024 * 1024

export interface Written<T> {
  readonly value: T
  /** Repository path of the file it is written in. */
  readonly file: string
}

export interface FluxScan {
  readonly kustomizations: readonly Written<FluxKustomization>[]
  readonly gitRepositories: readonly Written<GitRepositorySpec>[]
  readonly generators: readonly Written<ArtifactGeneratorSpec>[]
}

export async function scanFluxObjects(root: string, files: readonly string[]): Promise<FluxScan> {
  const kustomizations: Written<FluxKustomization>[] = []
  const gitRepositories: Written<GitRepositorySpec>[] = []
  const generators: Written<ArtifactGeneratorSpec>[] = []
  for (const file of files) {
    if (!/\.ya?ml$/.test(file)) continue
    for (const object of await objectsIn(root, file, /toolkit\.fluxcd\.io|source\.extensions\.fluxcd\.io/)) {
      const k = fluxKustomization(object)
      if (k) kustomizations.push({ value: k, file })
      const g = gitRepository(object)
      if (g) gitRepositories.push({ value: g, file })
      const a = artifactGenerator(object)
      if (a) generators.push({ value: a, file })
    }
  }
  return { kustomizations, gitRepositories, generators }
}

/** The YAML documents of a file that mention `filter`, parsed; [] for big, unreadable or bad files. */
export async function objectsIn(root: string, file: string, filter: RegExp): Promise<Record<string, unknown>[]> {
  const path = join(root, file)
  const size = await stat(path).then(
    (s) => (s.isFile() ? s.size : Infinity),
    () => Infinity,
  )
  if (size > SCAN_LIMIT) return []
  const text = await readFile(path, 'utf8').catch(() => '')
  if (!filter.test(text)) return []
  const out: Record<string, unknown>[] = []
  try {
    for (const doc of parseAllDocuments(text, { uniqueKeys: false })) {
      if (!('contents' in doc) || doc.errors.length > 0) continue
      const value: unknown = doc.toJS()
      if (isRecord(value)) out.push(value)
    }
  } catch {
    return []
  }
  return out
}
