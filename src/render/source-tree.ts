// The files a Flux Kustomization's source holds at one commit: the repository itself for a
// GitRepository, or, for an ExternalArtifact an ArtifactGenerator makes from this repository,
// the files its copy rules select, laid out where the rules put them. Either way each file
// maps back to the repository path the user edits. Nothing is written anywhere: a build gets
// the files of its closure in memory (the sandbox).

import { posix } from 'node:path'
import { matchPath } from '../lib/glob.ts'
import { quoted } from '../lib/untrusted.ts'
import type { ArtifactSpec, CopyRule } from './flux-objects.ts'
import { directoriesOf, type TreeView } from './snapshot.ts'

export interface SourceTree {
  /** The files the source holds. */
  readonly view: TreeView
  /** Repository path of a tree path; undefined when the file did not come from this repository. */
  toRepository(path: string): string | undefined
  /** Tree paths a repository path is copied to. */
  fromRepository(path: string): readonly string[]
}

/**
 * Lays out an ExternalArtifact from the repository's files by its copy rules, in order (later
 * rules overwrite). `alias` is the repository's alias in the generator; rules naming other
 * sources are skipped (the caller reports such artifacts). A rule whose source or destination
 * leaves its root (`..`, an absolute path) is refused: one problem each, the others still apply.
 */
export function artifactTree(repository: TreeView, artifact: ArtifactSpec, alias: string): { tree: SourceTree; problems: string[] } {
  const files = repository.paths
  const toRepo = new Map<string, string>()
  const problems: string[] = []
  for (const rule of artifact.copy) {
    const from = rule.from.startsWith('@') ? rule.from.slice(1).split('/') : undefined
    const to = rule.to === '@artifact' || rule.to.startsWith('@artifact/') ? rule.to.slice('@artifact'.length).replace(/^\//, '') : undefined
    if (from === undefined || from[0] !== alias || to === undefined) continue
    const pattern = from.slice(1).join('/')
    const refused = escaping(pattern) ? 'from' : escaping(to) ? 'to' : undefined
    if (refused !== undefined) {
      problems.push(
        `ArtifactGenerator copy rule ${refused} ${quoted(refused === 'from' ? rule.from : rule.to)} leaves its root; Flux refuses it. Copy from and to paths inside the source and the artifact.`,
      )
      continue
    }
    const laid = layOut(files, rule, pattern, to)
    for (const [target, file] of laid) toRepo.set(target, file)
  }
  const fromRepo = new Map<string, string[]>()
  for (const [target, file] of toRepo) fromRepo.set(file, [...(fromRepo.get(file) ?? []), target])
  const paths = [...toRepo.keys()].sort()
  const directories = directoriesOf(paths)
  const repositoryPath = (path: string): string | undefined => toRepo.get(path)
  const view: TreeView = {
    paths,
    isFile: (p) => toRepo.has(p),
    isDirectory: (p) => directories.has(p),
    bytes: async (p) => {
      const file = repositoryPath(p)
      return file === undefined ? undefined : repository.bytes(file)
    },
    text: async (p) => {
      const file = repositoryPath(p)
      return file === undefined ? undefined : repository.text(file)
    },
    prefetch: (ps) => repository.prefetch([...ps].flatMap((p) => toRepo.get(p) ?? [])),
  }
  return { tree: { view, toRepository: repositoryPath, fromRepository: (path) => fromRepo.get(path) ?? [] }, problems }
}

/** Artifact path → repository path for the files one rule copies. */
function layOut(files: readonly string[], rule: CopyRule, pattern: string, destination: string): Map<string, string> {
  const out = new Map<string, string>()
  const hasGlob = /[*?[]/.test(pattern)
  const base = hasGlob
    ? pattern
        .split('/')
        .filter((_, i, parts) => !parts.slice(0, i + 1).some((p) => /[*?[]/.test(p)))
        .join('/')
    : undefined
  for (const file of files) {
    const inDirectory = !hasGlob && (file.startsWith(`${pattern.replace(/\/$/, '')}/`) || pattern === '')
    if (!(matchPath(pattern, file) || inDirectory)) continue
    if (rule.exclude.some((e) => matchPath(e, file) || matchPath(e, posix.basename(file)))) continue
    let target: string
    if (base !== undefined) target = posix.join(destination, posix.relative(base, file))
    else if (inDirectory) target = posix.join(destination, posix.basename(pattern.replace(/\/$/, '')), posix.relative(pattern, file))
    else target = destination === '' || destination.endsWith('/') ? posix.join(destination, posix.basename(file)) : destination
    const normal = posix.normalize(target)
    // Defence in depth: every target stays inside the artifact.
    if (!escaping(normal)) out.set(normal, file)
  }
  return out
}

/** Whether a relative path normalises outside its root, or is absolute. */
function escaping(path: string): boolean {
  if (path.startsWith('/')) return true
  const normal = posix.normalize(path === '' ? '.' : path)
  return normal === '..' || normal.startsWith('../')
}
