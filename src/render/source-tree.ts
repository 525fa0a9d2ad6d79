// The files a Flux Kustomization's source holds at one commit: the repository itself for a
// GitRepository, or, for an ExternalArtifact an ArtifactGenerator makes from this repository,
// the files its copy rules select, laid out where the rules put them. Either way each file
// maps back to the repository path the user edits. Builds never write into a tree: each gets
// its own work directory of hard links (see linkInto).

import { copyFile, link, lstat, mkdir, readdir, readlink, symlink } from 'node:fs/promises'
import { dirname, join, posix } from 'node:path'
import type { ArtifactSpec } from './flux-objects.ts'

export interface SourceTree {
  /** Absolute directory holding the tree. */
  readonly root: string
  /** Repository path of a tree path; undefined when the file did not come from this repository. */
  toRepository(path: string): string | undefined
  /** Tree paths a repository path is copied to. */
  fromRepository(path: string): readonly string[]
}

export function repositoryTree(root: string): SourceTree {
  return { root, toRepository: (path) => path, fromRepository: (path) => [path] }
}

/** Every file under `root`, repository-relative, forward slashes. */
export async function listFiles(root: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(join(root, rel), { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`
      if (entry.isDirectory()) await walk(path)
      else out.push(path)
    }
  }
  await walk('')
  return out.sort()
}

/**
 * Lays out an ExternalArtifact from the repository's files (`files`, under `repositoryRoot`)
 * by its copy rules, in order (later rules overwrite). `alias` is the repository's alias in
 * the generator; rules naming other sources are skipped (the caller reports such artifacts).
 */
export async function artifactTree(repositoryRoot: string, files: readonly string[], artifact: ArtifactSpec, alias: string, root: string): Promise<SourceTree> {
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
  for (const [target, file] of toRepo) {
    await mkdir(dirname(join(root, target)), { recursive: true })
    await linkFile(join(repositoryRoot, file), join(root, target))
    fromRepo.set(file, [...(fromRepo.get(file) ?? []), target])
  }
  return { root, toRepository: (path) => toRepo.get(path), fromRepository: (path) => fromRepo.get(path) ?? [] }
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

/** Hard-links (or, across devices, copies) `paths` of `from` into `to`; directories whole. */
export async function linkInto(from: string, to: string, directories: Iterable<string>, files: Iterable<string>): Promise<void> {
  const dirs = [...directories].sort()
  // A directory inside another listed one is already covered.
  const outer = dirs.filter((d, i) => !dirs.slice(0, i).some((o) => o === '' || d === o || d.startsWith(`${o}/`)))
  for (const dir of outer) await linkDirectory(join(from, dir), join(to, dir))
  for (const file of files) {
    if (outer.some((o) => o === '' || file.startsWith(`${o}/`))) continue
    const source = join(from, file)
    const stats = await lstat(source).catch(() => undefined)
    if (!stats?.isFile()) continue
    await mkdir(dirname(join(to, file)), { recursive: true })
    await linkFile(source, join(to, file))
  }
}

async function linkDirectory(from: string, to: string): Promise<void> {
  const entries = await readdir(from, { withFileTypes: true }).catch(() => undefined)
  if (entries === undefined) return
  await mkdir(to, { recursive: true })
  for (const entry of entries) {
    const source = join(from, entry.name)
    const target = join(to, entry.name)
    if (entry.isDirectory()) await linkDirectory(source, target)
    else if (entry.isSymbolicLink()) await symlink(await readlink(source), target).catch(() => {})
    else if (entry.isFile()) await linkFile(source, target)
  }
}

async function linkFile(from: string, to: string): Promise<void> {
  await link(from, to).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code === 'EEXIST') return
    await copyFile(from, to)
  })
}
