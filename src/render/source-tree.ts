// The files a Flux Kustomization's source holds at one commit: the repository itself for a
// GitRepository, or, for an ExternalArtifact an ArtifactGenerator makes from this repository,
// the files its copy rules select, laid out where the rules put them. Either way each file
// maps back to the repository path the user edits. Nothing is written here: a build writes
// the files of its closure into a work directory of its own (see writeFiles).

import { posix } from 'node:path'
import type { ArtifactSpec } from './flux-objects.ts'
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
 * sources are skipped (the caller reports such artifacts).
 */
export function artifactTree(repository: TreeView, artifact: ArtifactSpec, alias: string): SourceTree {
  const files = repository.paths
  const toRepo = new Map<string, string>()
  for (const rule of artifact.copy) {
    const from = /^@([^/]+)\/(.*)$/.exec(rule.from)
    const to = /^@artifact\/?(.*)$/.exec(rule.to)
    if (!from || from[1] !== alias || !to) continue
    const pattern = from[2] ?? ''
    const destination = to[1] ?? ''
    const hasGlob = /[*?[]/.test(pattern)
    const base = hasGlob
      ? pattern
          .split('/')
          .filter((_, i, parts) => !parts.slice(0, i + 1).some((p) => /[*?[]/.test(p)))
          .join('/')
      : undefined
    const matches = globMatcher(pattern)
    const excluded = rule.exclude.map(globMatcher)
    for (const file of files) {
      const inDirectory = !hasGlob && (file.startsWith(`${pattern.replace(/\/$/, '')}/`) || pattern === '')
      if (!(matches(file) || inDirectory)) continue
      if (excluded.some((m) => m(file) || m(posix.basename(file)))) continue
      let target: string
      if (base !== undefined) target = posix.join(destination, posix.relative(base, file))
      else if (inDirectory) target = posix.join(destination, posix.basename(pattern.replace(/\/$/, '')), posix.relative(pattern, file))
      else target = destination === '' || destination.endsWith('/') ? posix.join(destination, posix.basename(file)) : destination
      toRepo.set(posix.normalize(target), file)
    }
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
  return { view, toRepository: repositoryPath, fromRepository: (path) => fromRepo.get(path) ?? [] }
}

/** `*` within one path segment, `**` across any number of them, `?` one character. */
export function globMatcher(pattern: string): (path: string) => boolean {
  let source = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? ''
    if (c === '*' && pattern[i + 1] === '*') {
      const slash = pattern[i + 2] === '/'
      source += slash ? '(?:.*/)?' : '.*'
      i += slash ? 2 : 1
    } else if (c === '*') source += '[^/]*'
    else if (c === '?') source += '[^/]'
    else source += c.replace(/[.+^${}()|\\\]]/g, '\\$&')
  }
  const regex = new RegExp(`^${source}$`)
  return (path) => regex.test(path)
}
