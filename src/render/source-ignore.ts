// What source-controller leaves out of a GitRepository's artifact, so files Flux never sees are
// never rendered or planned: its default excludes (VCS files, images and archives, CI files,
// .sops.yaml…), every `.sourceignore` (scoped to its directory), then the GitRepository's
// `spec.ignore`, in gitignore syntax as fluxcd/pkg/sourceignore reads it: the last pattern that
// matches decides, `!` includes again, a pattern with a slash is anchored to its directory, one
// without matches any path component. Pure.

import { matchComponent } from '../lib/glob.ts'

export const SOURCE_IGNORE_FILE = '.sourceignore'

const DEFAULT_PATTERNS = [
  '.git/',
  '.gitignore',
  '.gitmodules',
  '.gitattributes',
  '*.jpg',
  '*.jpeg',
  '*.gif',
  '*.png',
  '*.wmv',
  '*.flv',
  '*.tar.gz',
  '*.zip',
  '.github/',
  '.circleci/',
  '.travis.yml',
  '.gitlab-ci.yml',
  'appveyor.yml',
  '.drone.yml',
  'cloudbuild.yaml',
  'codeship-services.yml',
  'codeship-steps.yml',
  '**/.goreleaser.yml',
  '**/.sops.yaml',
  '**/.flux.yaml',
]

interface Pattern {
  /** Directory components the pattern is scoped to (a nested .sourceignore's directory). */
  readonly domain: readonly string[]
  readonly parts: readonly string[]
  readonly include: boolean
  readonly dirOnly: boolean
  readonly anchored: boolean
}

/** The patterns of one ignore text (a .sourceignore at `directory`, or spec.ignore at the root). */
export function ignorePatterns(text: string, directory = ''): Pattern[] {
  const domain = directory === '' ? [] : directory.split('/')
  return text
    .split(/\r?\n/)
    .filter((line) => !line.startsWith('#') && line.trim() !== '')
    .map((line) => parsePattern(line, domain))
}

function parsePattern(line: string, domain: readonly string[]): Pattern {
  let p = line
  const include = p.startsWith('!')
  if (include) p = p.slice(1)
  if (!p.endsWith('\\ ')) p = p.replace(/ +$/, '')
  const dirOnly = p.endsWith('/')
  if (dirOnly) p = p.slice(0, -1)
  return { domain, parts: p.split('/'), include, dirOnly, anchored: p.includes('/') }
}

/**
 * Keeps a file (repository path) unless the defaults, the `.sourceignore` files (path → text)
 * and `spec.ignore` exclude it.
 */
export function artifactFilter(ignoreFiles: ReadonlyMap<string, string>, specIgnore: string | undefined): (path: string) => boolean {
  const patterns = [
    ...DEFAULT_PATTERNS.map((p) => parsePattern(p, [])),
    // Outer files before inner ones, like the directory walk that loads them.
    ...[...ignoreFiles]
      .sort(([a], [b]) => a.split('/').length - b.split('/').length || (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([file, text]) => ignorePatterns(text, file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '')),
    ...(specIgnore === undefined ? [] : ignorePatterns(specIgnore)),
  ]
  return (path) => {
    const parts = path.split('/')
    for (let i = patterns.length - 1; i >= 0; i--) {
      const pattern = patterns[i] as Pattern
      if (matches(pattern, parts)) return pattern.include
    }
    return true
  }
}

/** Files are matched as files (source-controller archives files; directories are never asked). */
function matches(p: Pattern, path: readonly string[]): boolean {
  if (path.length <= p.domain.length || p.domain.some((d, i) => path[i] !== d)) return false
  const rest = path.slice(p.domain.length)
  return p.anchored ? globMatch(p, rest) : nameMatch(p, rest)
}

function nameMatch(p: Pattern, path: readonly string[]): boolean {
  const index = path.findIndex((name) => matchComponent(p.parts[0] ?? '', name))
  // A directory-only pattern names a directory: the file itself (the last component) is not one.
  return index >= 0 && !(p.dirOnly && index === path.length - 1)
}

function globMatch(p: Pattern, path: readonly string[]): boolean {
  let rest = [...path]
  let matched = false
  let traverse = false
  for (let i = 0; i < p.parts.length; i++) {
    const part = p.parts[i] ?? ''
    if (part === '') {
      traverse = false
      continue
    }
    if (part === '**') {
      if (i === p.parts.length - 1) break
      traverse = true
      continue
    }
    if (part.includes('**') || rest.length === 0) return false
    if (traverse) {
      traverse = false
      const at = rest.findIndex((name) => matchComponent(part, name))
      if (at < 0) return false
      rest = rest.slice(at + 1)
      matched = true
    } else {
      if (!matchComponent(part, rest[0] ?? '')) return false
      rest = rest.slice(1)
      matched = true
    }
  }
  return matched && !(p.dirOnly && rest.length === 0)
}
