// What a kustomize build at a directory can read: its input closure. Used to decide whether
// a commit can have changed a Flux Kustomization's output (so only those are built) and to give
// a build just those files (the sandbox holds nothing else: a reference outside them is "no such
// file", whatever it names). Over-approximates on purpose: every kustomization directory counts
// whole. Remote references are not recognised here: the sandbox has no network, and says so.

import { posix } from 'node:path'
import { parseDocument } from 'yaml'
import { isRecord } from './flux-objects.ts'
import type { TreeView } from './snapshot.ts'

export const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const

export interface Closure {
  /** Repository-relative directories read recursively ('' is the root). */
  readonly directories: ReadonlySet<string>
  /** Repository-relative files read outside those directories. */
  readonly files: ReadonlySet<string>
  /** Some reference is absolute or leaves the source (`..` past its root): a file the build cannot have. */
  readonly outside: boolean
  /** Kustomization files met, bases before the overlays that use them. */
  readonly kustomizations: readonly string[]
  /** Kustomization file → the kustomization files that include it (as resource, base or component). */
  readonly includedBy: ReadonlyMap<string, ReadonlySet<string>>
}

/** Does `path` (repository-relative) fall inside the closure? */
export function inClosure(closure: Closure, path: string): boolean {
  if (closure.files.has(path)) return true
  for (const dir of closure.directories) if (dir === '' || path === dir || path.startsWith(`${dir}/`)) return true
  return false
}

/** A kustomization file of the directory `dir`, or undefined. */
export function kustomizationFileIn(view: Pick<TreeView, 'isFile'>, dir: string): string | undefined {
  return KUSTOMIZATION_FILES.map((name) => posix.join(dir, name)).find((path) => view.isFile(path))
}

/** The files of `view` a build with this closure reads. */
export function filesIn(view: Pick<TreeView, 'paths'>, closure: Closure): string[] {
  return view.paths.filter((p) => inClosure(closure, p))
}

/** The closure of a build at `start` in `view`, plus extra component directories; `parsed` caches kustomization files by text. */
export async function closureOf(view: TreeView, start: string, components: readonly string[] = [], parsed = new Map<string, unknown>()): Promise<Closure> {
  const directories = new Set<string>()
  const files = new Set<string>()
  let outside = false
  const kustomizations: string[] = []
  const includedBy = new Map<string, Set<string>>()
  const visiting = new Map<string, string | undefined>()

  const visitDirectory = async (dir: string, parent: string | undefined): Promise<void> => {
    const known = visiting.has(dir)
    const file = known ? visiting.get(dir) : kustomizationFileIn(view, dir)
    if (file !== undefined && parent !== undefined) includedBy.set(file, (includedBy.get(file) ?? new Set()).add(parent))
    if (known) return
    visiting.set(dir, file)
    directories.add(dir)
    // No kustomization file: Flux generates one listing the directory's YAML, nested
    // kustomization directories included; the whole directory is already in the closure.
    if (file === undefined) return
    const value = kustomizationOf((await view.text(file)) ?? '', parsed)
    if (isRecord(value)) for (const ref of references(value)) await visitReference(dir, ref, file)
    kustomizations.push(file)
  }

  const visitReference = async (dir: string, ref: Reference, from: string | undefined): Promise<void> => {
    const target = posix.normalize(posix.join(dir, ref.path))
    if (ref.path.startsWith('/') || target.startsWith('../') || target === '..') {
      outside = true
      return
    }
    const path = target === '.' ? '' : target
    if (ref.maybeDirectory && view.isDirectory(path)) await visitDirectory(path, from)
    else files.add(path)
  }

  await visitDirectory(start, undefined)
  const top = visiting.get(start)
  for (const component of components) await visitReference(start, { path: component, maybeDirectory: true }, top)
  return { directories, files, outside, kustomizations, includedBy }
}

/** A kustomization file's content, parsed once per text (`parsed` is the cache); undefined when it does not parse. */
export function kustomizationOf(text: string, parsed: Map<string, unknown>): unknown {
  if (!parsed.has(text)) parsed.set(text, parseKustomization(text))
  return parsed.get(text)
}

function parseKustomization(text: string): unknown {
  try {
    return parseDocument(text).toJS()
  } catch {
    return undefined
  }
}

/** The files a configMapGenerator or secretGenerator entry reads, relative to its kustomization file: `files` (after a `key=`), `envs`, `env`. */
export function generatorSources(entry: Readonly<Record<string, unknown>>): string[] {
  return [
    ...strings(entry.files).map((file) => (file.includes('=') ? file.slice(file.indexOf('=') + 1) : file)),
    ...strings(entry.envs),
    ...(typeof entry.env === 'string' ? [entry.env] : []),
  ]
}

interface Reference {
  readonly path: string
  readonly maybeDirectory: boolean
}

/** Every local path a kustomization file names. */
function references(k: Record<string, unknown>): Reference[] {
  const out: Reference[] = []
  const pathLike = (value: string): boolean => value !== '' && !value.includes('\n') && !/^\s*[\w.-]+\s*:/.test(value)
  for (const field of ['resources', 'bases', 'components']) for (const path of strings(k[field])) out.push({ path, maybeDirectory: true })
  for (const field of ['crds', 'configurations', 'transformers', 'generators', 'validators', 'patchesStrategicMerge'])
    for (const path of strings(k[field]).filter(pathLike)) out.push({ path, maybeDirectory: true })
  for (const field of ['patches', 'patchesJson6902', 'replacements']) {
    for (const entry of Array.isArray(k[field]) ? k[field] : []) {
      if (isRecord(entry) && typeof entry.path === 'string') out.push({ path: entry.path, maybeDirectory: false })
    }
  }
  for (const field of ['configMapGenerator', 'secretGenerator']) {
    for (const entry of Array.isArray(k[field]) ? k[field] : []) {
      if (isRecord(entry)) for (const path of generatorSources(entry)) out.push({ path, maybeDirectory: false })
    }
  }
  if (isRecord(k.openapi) && typeof k.openapi.path === 'string') out.push({ path: k.openapi.path, maybeDirectory: false })
  return out
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
}
