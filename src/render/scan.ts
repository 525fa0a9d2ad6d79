// The Flux objects written in a commit's files, found without building anything: which
// Kustomizations exist, where they are written, which GitRepositories and ArtifactGenerators
// they read. A cheap text filter first, so a large file that is no Flux object (a dashboard,
// a CRD bundle) is never parsed, and never an error.

import { LineCounter, parseAllDocuments } from 'yaml'
import {
  artifactGenerator,
  fluxKustomization,
  gitRepository,
  isRecord,
  type ArtifactGeneratorSpec,
  type FluxKustomization,
  type GitRepositorySpec,
} from './flux-objects.ts'
import type { TreeView } from './snapshot.ts'

/** Flux objects are small; bigger files are skipped by the scan (they are still built). */
const SCAN_LIMIT = 2 * 1024 * 1024

/** What marks a file that may hold a Flux object (an extended regular expression, for git grep too). */
export const FLUX_MARK = '(kustomize|source)\\.toolkit\\.fluxcd\\.io|source\\.extensions\\.fluxcd\\.io'
const FLUX_MARK_REGEX = new RegExp(FLUX_MARK)

/** The files a scan reads. */
export const YAML_FILE = /\.ya?ml$/

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

/** The Flux objects written in `files` of `view` (those not YAML are skipped). */
export async function scanFluxObjects(view: TreeView, files: readonly string[]): Promise<FluxScan> {
  const kustomizations: Written<FluxKustomization>[] = []
  const gitRepositories: Written<GitRepositorySpec>[] = []
  const generators: Written<ArtifactGeneratorSpec>[] = []
  const yaml = files.filter((f) => YAML_FILE.test(f))
  await view.prefetch(yaml)
  for (const file of yaml) {
    for (const { object, line } of await documentsIn(view, file, FLUX_MARK_REGEX)) {
      const k = fluxKustomization(object)
      if (k) kustomizations.push({ value: { ...k, definedAt: { file, line } }, file })
      const g = gitRepository(object)
      if (g) gitRepositories.push({ value: g, file })
      const a = artifactGenerator(object)
      if (a) generators.push({ value: a, file })
    }
  }
  return { kustomizations, gitRepositories, generators }
}

/** The YAML documents of a file that mention `filter` (our pattern, or a plain text), parsed; [] for big, unreadable or bad files. */
export async function objectsIn(view: TreeView, file: string, filter: RegExp | string): Promise<Record<string, unknown>[]> {
  return (await documentsIn(view, file, filter)).map((d) => d.object)
}

/** objectsIn, each with the 1-based line its content starts on. */
async function documentsIn(view: TreeView, file: string, filter: RegExp | string): Promise<{ object: Record<string, unknown>; line: number }[]> {
  const bytes = await view.bytes(file).catch(() => undefined)
  if (bytes === undefined || bytes.length > SCAN_LIMIT) return []
  const text = new TextDecoder().decode(bytes)
  if (typeof filter === 'string' ? !text.includes(filter) : !filter.test(text)) return []
  const out: { object: Record<string, unknown>; line: number }[] = []
  try {
    const lines = new LineCounter()
    for (const doc of parseAllDocuments(text, { uniqueKeys: false, lineCounter: lines })) {
      if (!('contents' in doc) || doc.errors.length > 0) continue
      const value: unknown = doc.toJS()
      const start = doc.contents?.range[0] ?? 0
      if (isRecord(value)) out.push({ object: value, line: lines.linePos(start).line })
    }
  } catch {
    return []
  }
  return out
}
