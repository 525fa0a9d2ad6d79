// The git reader against real repositories with real commits, made in the system temp directory.

import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile, chmod, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ConfigurationError, GitError } from '../../src/lib/errors.ts'
import { createGitReader, type GitReader } from '../../src/git/reader.ts'
import type { FileChange, FileContent } from '../../src/core/model.ts'
import { resolveRange } from '../../src/git/range.ts'

// Real git processes: generous limits for a busy machine.
vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 })

// Keep the machine's git configuration out of the repositories we build.
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' }

const scratch: string[] = []

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `hrt-${prefix}-`))
  scratch.push(dir)
  return dir
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' }).trim()
}

async function newRepo(): Promise<string> {
  const dir = await tempDir('repo')
  git(dir, 'init', '-q', '-b', 'main')
  git(dir, 'config', 'user.name', 'Test')
  git(dir, 'config', 'user.email', 'test@example.com')
  git(dir, 'config', 'commit.gpgsign', 'false')
  git(dir, 'config', 'core.autocrlf', 'false')
  return dir
}

type Edit = string | Uint8Array | { readonly symlink: string } | null

/** Writes (null deletes) the files, stages everything and commits; returns the commit's SHA. */
async function commit(dir: string, edits: Readonly<Record<string, Edit>>, message = 'change'): Promise<string> {
  for (const [path, edit] of Object.entries(edits)) {
    const file = join(dir, path)
    await rm(file, { force: true })
    if (edit === null) continue
    await mkdir(dirname(file), { recursive: true })
    if (typeof edit === 'object' && 'symlink' in edit) await symlink(edit.symlink, file)
    else await writeFile(file, edit)
  }
  // Only the edited paths: entries staged by hand (a gitlink) must survive.
  const paths = Object.keys(edits)
  if (paths.length > 0) git(dir, '--literal-pathspecs', 'add', '-A', '--', ...paths)
  git(dir, 'commit', '-q', '--allow-empty', '-m', message)
  return git(dir, 'rev-parse', 'HEAD')
}

const all = (): boolean => true
const text = (s: string): Uint8Array => new TextEncoder().encode(s)
const file = (s: string | Uint8Array): FileContent => ({ type: 'file', bytes: typeof s === 'string' ? text(s) : s })
const byPath = (changes: readonly FileChange[]): Map<string, FileChange> => new Map(changes.map((c) => [c.path, c]))

/** Compares contents with plain Uint8Arrays so a Buffer subclass does not fail equality. */
function plain(content: FileContent | undefined): unknown {
  return content?.type === 'file' ? { type: 'file', bytes: [...content.bytes] } : content
}

afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })))
})

describe('createGitReader', () => {
  it('refuses a directory that is not a repository, saying how to fix it', async () => {
    const dir = await tempDir('plain')
    const error = await createGitReader({ cwd: dir }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(String(error)).toContain(`${dir} is not a git repository; check out the repository first (actions/checkout)`)
    expect(String(error)).toContain('not a git repository (or any of the parent directories)')
  })

  // Only root can hand the directory to another user.
  it.skipIf(process.getuid?.() !== 0)('explains safe.directory when another user owns the clone', async () => {
    const dir = await newRepo()
    execFileSync('chown', ['-R', '12345', dir])
    const error = await createGitReader({ cwd: dir }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(String(error)).toContain(`git config --global --add safe.directory ${dir}`)
    expect(String(error)).toContain('detected dubious ownership')
  })

  it('refuses a directory that does not exist', async () => {
    const dir = join(await tempDir('gone'), 'nope')
    await expect(createGitReader({ cwd: dir })).rejects.toThrow(/nope is not a git repository \(no such directory\)/)
  })

  it('says so when the git executable is missing', async () => {
    const dir = await newRepo()
    const error = await createGitReader({ cwd: dir, git: '/nonexistent/git' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigurationError)
    expect(String(error)).toContain(`git executable '/nonexistent/git' not found`)
  })

  it('works from a subdirectory of the clone, with paths from the top', async () => {
    const dir = await newRepo()
    const sha = await commit(dir, { 'sub/a.yaml': 'a: 1\n', 'top.yaml': 't\n' })
    const reader = await createGitReader({ cwd: join(dir, 'sub') })
    const files = await reader.headFiles(sha, all)
    expect(files.map((f) => f.path).sort()).toEqual(['sub/a.yaml', 'top.yaml'])
  })
})

describe('resolve and parent', () => {
  let dir: string
  let reader: GitReader
  let first: string
  let second: string

  beforeAll(async () => {
    dir = await newRepo()
    first = await commit(dir, { 'a.txt': 'one\n' }, 'first')
    second = await commit(dir, { 'a.txt': 'two\n' }, 'second')
    git(dir, 'tag', 'v1', first)
    reader = await createGitReader({ cwd: dir })
  })

  it('gives full SHAs for names, tags and abbreviations', async () => {
    expect(second).toMatch(/^[0-9a-f]{40}$/)
    expect(await reader.resolve('HEAD')).toBe(second)
    expect(await reader.resolve('main')).toBe(second)
    expect(await reader.resolve('v1')).toBe(first)
    expect(await reader.resolve(first.slice(0, 8))).toBe(first)
    expect(await reader.resolve(second)).toBe(second)
  })

  it('gives undefined for what is not a commit in the clone', async () => {
    expect(await reader.resolve('0123456789abcdef0123456789abcdef01234567')).toBeUndefined()
    expect(await reader.resolve('no-such-branch')).toBeUndefined()
    expect(await reader.resolve('')).toBeUndefined()
    expect(await reader.resolve('--output=/tmp/x')).toBeUndefined()
    expect(await reader.resolve('HEAD^{tree}')).toBeUndefined()
  })

  it('gives the first parent, and undefined for the root commit', async () => {
    expect(await reader.parent(second)).toBe(first)
    expect(await reader.parent(first)).toBeUndefined()
  })
})

describe('changedFiles', () => {
  let dir: string
  let reader: GitReader

  beforeAll(async () => {
    dir = await newRepo()
    reader = await createGitReader({ cwd: dir })
  })

  it('reports added, modified and deleted files with their contents at each side', async () => {
    const base = await commit(dir, { 'keep.yaml': 'v: 1\n', 'gone.yaml': 'bye\n', 'same.yaml': 'same\n' })
    const head = await commit(dir, { 'keep.yaml': 'v: 2\n', 'gone.yaml': null, 'new.yaml': 'hi\n' })
    const changes = byPath(await reader.changedFiles(base, head, all))
    expect([...changes.keys()].sort()).toEqual(['gone.yaml', 'keep.yaml', 'new.yaml'])
    expect(changes.get('keep.yaml')?.status).toBe('modified')
    expect(plain(changes.get('keep.yaml')?.before)).toEqual(plain(file('v: 1\n')))
    expect(plain(changes.get('keep.yaml')?.after)).toEqual(plain(file('v: 2\n')))
    expect(changes.get('gone.yaml')).toMatchObject({ status: 'deleted' })
    expect(plain(changes.get('gone.yaml')?.before)).toEqual(plain(file('bye\n')))
    expect(changes.get('gone.yaml')).not.toHaveProperty('after')
    expect(changes.get('new.yaml')).not.toHaveProperty('before')
    expect(plain(changes.get('new.yaml')?.after)).toEqual(plain(file('hi\n')))
  })

  it('splits a rename into a delete and an add', async () => {
    const content = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n'
    const base = await commit(dir, { 'old/cm.yaml': content })
    git(dir, 'mv', 'old/cm.yaml', 'new-cm.yaml')
    git(dir, 'commit', '-q', '-m', 'rename')
    const head = git(dir, 'rev-parse', 'HEAD')
    const changes = await reader.changedFiles(base, head, all)
    expect(changes.map((c) => [c.path, c.status]).sort()).toEqual([
      ['new-cm.yaml', 'added'],
      ['old/cm.yaml', 'deleted'],
    ])
    expect(plain(byPath(changes).get('new-cm.yaml')?.after)).toEqual(plain(file(content)))
    expect(plain(byPath(changes).get('old/cm.yaml')?.before)).toEqual(plain(file(content)))
  })

  it('reads only what the filter lets through', async () => {
    const base = await commit(dir, { 'apps/a.yaml': 'a\n', 'docs/readme.md': 'r\n' })
    const head = await commit(dir, { 'apps/a.yaml': 'a2\n', 'docs/readme.md': 'r2\n', 'apps/b.yaml': 'b\n' })
    const seen: string[] = []
    const changes = await reader.changedFiles(base, head, (path) => {
      seen.push(path)
      return path.startsWith('apps/')
    })
    expect(changes.map((c) => c.path).sort()).toEqual(['apps/a.yaml', 'apps/b.yaml'])
    expect(seen.sort()).toEqual(['apps/a.yaml', 'apps/b.yaml', 'docs/readme.md'])
  })

  it('returns every byte of binary, CRLF and empty files as committed', async () => {
    const binary = Uint8Array.from({ length: 512 }, (_, i) => (i * 7) % 256) // NULs, LFs, high bytes
    const crlf = 'a: 1\r\nb: 2\r\n'
    const base = await commit(dir, { 'seed.txt': 'x\n' })
    const head = await commit(dir, { 'bin/blob.dat': binary, 'crlf.yaml': crlf, 'empty.yaml': '' })
    const changes = byPath(await reader.changedFiles(base, head, all))
    expect(plain(changes.get('bin/blob.dat')?.after)).toEqual(plain(file(binary)))
    expect(plain(changes.get('crlf.yaml')?.after)).toEqual(plain(file(crlf)))
    expect(plain(changes.get('empty.yaml')?.after)).toEqual(plain(file(new Uint8Array())))
  })

  it('reads a multi-megabyte file exactly (a body spread over many pipe chunks)', async () => {
    const big = Uint8Array.from({ length: 5 * 1024 * 1024 + 3 }, (_, i) => (i * 31 + (i >> 10)) % 256)
    const base = await commit(dir, { 'small.txt': 's\n' })
    const head = await commit(dir, { 'big.bin': big, 'small.txt': 't\n' })
    // Over the manifest limit, so read through a reader with a larger one.
    const changes = byPath(await (await createGitReader({ cwd: dir, maxBlobBytes: 8 * 1024 * 1024 })).changedFiles(base, head, all))
    const after = changes.get('big.bin')?.after
    expect(after?.type).toBe('file')
    if (after?.type !== 'file') return
    expect(after.bytes.length).toBe(big.length)
    expect(Buffer.compare(after.bytes, big)).toBe(0)
    expect(plain(changes.get('small.txt')?.after)).toEqual(plain(file('t\n')))
  })

  it('keeps spaces, unicode, quotes and newlines in paths (quotePath off, -z)', async () => {
    const names = ['dir with space/café ü.yaml', '日本/設定.yaml', 'quote"and\\back.yaml', 'tab\there.yaml', 'new\nline.yaml', ':colon.yaml']
    const base = await commit(dir, { 'seed2.txt': 'x\n' })
    const head = await commit(dir, Object.fromEntries(names.map((n) => [n, `name: ${n}\n`])))
    const changes = byPath(await reader.changedFiles(base, head, all))
    expect([...changes.keys()].sort()).toEqual([...names].sort())
    for (const name of names) expect(plain(changes.get(name)?.after)).toEqual(plain(file(`name: ${name}\n`)))
  })

  it('gives symlinks as targets, never followed, and gitlinks as other', async () => {
    const base = await commit(dir, { 'real.yaml': 'real\n', 'plain.yaml': 'plain\n' })
    git(dir, 'update-index', '--add', '--cacheinfo', `160000,${base},vendor/sub`)
    const head = await commit(dir, { 'link.yaml': { symlink: 'real.yaml' }, 'plain.yaml': { symlink: '../outside/secret' } })
    const changes = byPath(await reader.changedFiles(base, head, all))
    expect(changes.get('link.yaml')).toEqual({ path: 'link.yaml', status: 'added', after: { type: 'symlink', target: 'real.yaml' } })
    expect(changes.get('vendor/sub')).toEqual({ path: 'vendor/sub', status: 'added', after: { type: 'other' } })
    // A type change (file → symlink) is a modification with each side as it was.
    expect(changes.get('plain.yaml')?.status).toBe('modified')
    expect(plain(changes.get('plain.yaml')?.before)).toEqual(plain(file('plain\n')))
    expect(changes.get('plain.yaml')?.after).toEqual({ type: 'symlink', target: '../outside/secret' })
  })

  it('reports a mode-only change as modified with the same bytes', async () => {
    const base = await commit(dir, { 'run.sh': 'echo hi\n' })
    await chmod(join(dir, 'run.sh'), 0o755)
    git(dir, 'add', 'run.sh')
    const head = await commit(dir, {}, 'chmod')
    const changes = await reader.changedFiles(base, head, all)
    expect(changes.map((c) => [c.path, c.status])).toEqual([['run.sh', 'modified']])
    expect(plain(changes[0]?.after)).toEqual(plain(changes[0]?.before))
  })

  it('without a base, gives every file at head as added', async () => {
    const fresh = await newRepo()
    const root = await commit(fresh, { 'a.yaml': 'a\n', 'b/c.yaml': 'c\n', l: { symlink: 'a.yaml' } }, 'root')
    const freshReader = await createGitReader({ cwd: fresh })
    const changes = await freshReader.changedFiles(undefined, root, (p) => p !== 'b/c.yaml')
    expect(changes.map((c) => c.status)).toEqual(['added', 'added'])
    expect(changes.map((c) => c.path).sort()).toEqual(['a.yaml', 'l'])
    expect(changes.every((c) => c.before === undefined)).toBe(true)
  })

  it('gives nothing for identical commits', async () => {
    const head = git(dir, 'rev-parse', 'HEAD')
    expect(await reader.changedFiles(head, head, all)).toEqual([])
  })

  it('fails with a GitError naming the command and git’s message', async () => {
    const head = git(dir, 'rev-parse', 'HEAD')
    const error = await reader.changedFiles('0123456789abcdef0123456789abcdef01234567', head, all).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(GitError)
    if (!(error instanceof GitError)) return
    expect(error.command).toMatch(/^git -c core\.quotePath=false diff --raw -z --no-renames --no-abbrev/)
    expect(error.exitCode).toBe(128)
    expect(error.detail).toMatch(/^fatal: bad object 0123456789abcdef/)
    expect(error.message).toContain('failed (exit 128): fatal: bad object')
  })
})

describe('headFiles and show', () => {
  let dir: string
  let reader: GitReader
  let head: string

  beforeAll(async () => {
    dir = await newRepo()
    await commit(dir, { 'clusters/a.yaml': 'old\n' })
    head = await commit(dir, {
      'clusters/a.yaml': 'a\n',
      'clusters/deep/b.yaml': 'b\n',
      'clusters/link.yaml': { symlink: 'a.yaml' },
      'README.md': '# hi\n',
      'odd [name] *.yaml': 'glob chars\n',
    })
    reader = await createGitReader({ cwd: dir })
  })

  it('lists every file at head that passes the filter, with contents', async () => {
    const files = await reader.headFiles(head, (p) => p.startsWith('clusters/'))
    expect(files.map((f) => [f.path, plain(f.content)])).toEqual([
      ['clusters/a.yaml', plain(file('a\n'))],
      ['clusters/deep/b.yaml', plain(file('b\n'))],
      ['clusters/link.yaml', { type: 'symlink', target: 'a.yaml' }],
    ])
  })

  it('shows one file at a commit, undefined for directories and missing paths', async () => {
    expect(plain(await reader.show(head, 'clusters/deep/b.yaml'))).toEqual(plain(file('b\n')))
    expect(plain(await reader.show(`${head}~1`, 'clusters/a.yaml'))).toEqual(plain(file('old\n')))
    expect(plain(await reader.show(head, 'odd [name] *.yaml'))).toEqual(plain(file('glob chars\n')))
    expect(await reader.show(head, 'clusters/link.yaml')).toEqual({ type: 'symlink', target: 'a.yaml' })
    expect(await reader.show(head, 'clusters')).toBeUndefined()
    expect(await reader.show(head, 'clusters/nope.yaml')).toBeUndefined()
    expect(await reader.show(head, '*.yaml')).toBeUndefined()
  })
})

/** Commits through one `git fast-import` (packed, like a real clone, and fast to build); returns the SHAs. */
function importCommits(dir: string, commits: readonly Readonly<Record<string, string>>[]): string[] {
  const data = (content: string): string => `data ${Buffer.byteLength(content)}\n${content}\n`
  const stream = commits
    .map((files, i) =>
      [
        `commit refs/heads/main\nmark :${i + 1}\ncommitter Test <test@example.com> ${1_700_000_000 + i} +0000\n${data(`c${i}`)}`,
        i === 0 ? '' : `from :${i}\n`,
        ...Object.entries(files).map(([path, content]) => `M 100644 inline ${path}\n${data(content)}`),
      ].join(''),
    )
    .join('\n')
  execFileSync('git', ['fast-import', '--quiet'], { cwd: dir, env: GIT_ENV, input: stream })
  return commits.map((_, i) => git(dir, 'rev-parse', `main~${commits.length - 1 - i}`))
}

describe('a large commit', () => {
  it('reads 2,000 changed files correctly through one cat-file process', async () => {
    const dir = await newRepo()
    const count = 2000
    const before = (i: number): string => `n: ${i}\n`
    const after = (i: number): string => `n: ${i}\nchanged: ${'x'.repeat(i % 97)}\n`
    const [base = '', head = ''] = importCommits(dir, [
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`cm/${i}.yaml`, before(i)])),
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`cm/${i}.yaml`, after(i)])),
    ])

    // A wrapper records every git invocation; the reader runs it like git itself.
    const bin = await tempDir('bin')
    const log = join(bin, 'calls.log')
    const wrapper = join(bin, 'git')
    await writeFile(wrapper, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec git "$@"\n`)
    await chmod(wrapper, 0o755)
    const reader = await createGitReader({ cwd: dir, git: wrapper })
    await unlink(log)

    const changes = await reader.changedFiles(base, head, all)
    expect(changes).toHaveLength(count)
    const wrong = changes.filter((change) => {
      const i = Number(/^cm\/(\d+)\.yaml$/.exec(change.path)?.[1])
      const same = (content: FileContent | undefined, expected: string): boolean =>
        content?.type === 'file' && Buffer.from(content.bytes).toString('utf8') === expected
      return change.status !== 'modified' || !same(change.before, before(i)) || !same(change.after, after(i))
    })
    expect(wrong).toEqual([])
    expect(new Set(changes.map((c) => c.path)).size).toBe(count)
    const calls = (await readFile(log, 'utf8')).trim().split('\n')
    expect(calls.filter((c) => c.startsWith('cat-file'))).toEqual(['cat-file --batch-check --buffer', 'cat-file --batch --buffer'])
    expect(calls).toHaveLength(3) // the diff, the sizes and the batch
  }, 60_000)
})

describe('changeAndHead', () => {
  it('gives what changedFiles and headFiles give, from one listing per commit and one cat-file pair for every blob', async () => {
    const dir = await newRepo()
    const base = await commit(dir, { 'apps/a.yaml': 'a: 1\n', 'apps/gone.yaml': 'bye\n', 'apps/same.yaml': 'same\n', 'other/x.yaml': 'x\n' })
    const big = 'y'.repeat(2048)
    const head = await commit(dir, { 'apps/a.yaml': 'a: 2\n', 'apps/gone.yaml': null, 'apps/new.yaml': 'new\n', 'apps/big.yaml': big, 'other/x.yaml': 'x2\n' })
    const bin = await tempDir('bin')
    const log = join(bin, 'calls.log')
    const wrapper = join(bin, 'git')
    await writeFile(wrapper, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec git "$@"\n`)
    await chmod(wrapper, 0o755)
    const reader = await createGitReader({ cwd: dir, git: wrapper, maxBlobBytes: 1024 })
    const apps = (p: string): boolean => p.startsWith('apps/')
    const shape = (r: { changes: FileChange[]; headFiles: { path: string; content: FileContent }[] }): unknown => ({
      changes: [...r.changes].sort((x, y) => x.path.localeCompare(y.path)).map((c) => ({ ...c, before: plain(c.before), after: plain(c.after) })),
      headFiles: r.headFiles.map((f) => ({ path: f.path, content: plain(f.content) })),
    })

    await unlink(log)
    const together = await reader.changeAndHead({ base, head, filter: apps, withChanges: true })
    const calls = (await readFile(log, 'utf8')).trim().split('\n')
    expect(calls.filter((c) => c.startsWith('cat-file'))).toEqual(['cat-file --batch-check --buffer', 'cat-file --batch --buffer'])
    expect(calls).toHaveLength(4) // the diff, the listing, the sizes and the batch
    const apart = { changes: await reader.changedFiles(base, head, apps), headFiles: await reader.headFiles(head, apps) }
    expect(shape(together)).toEqual(shape(apart))
    expect(together.headFiles.find((f) => f.path === 'apps/big.yaml')?.content).toEqual({ type: 'oversized', size: 2048 })

    // No base: every file at head is added; a full sync: no changes, the head's files only.
    const fromRoot = await reader.changeAndHead({ base: undefined, head, filter: apps, withChanges: true })
    expect(shape(fromRoot)).toEqual(shape({ changes: await reader.changedFiles(undefined, head, apps), headFiles: apart.headFiles }))
    const fullSync = await reader.changeAndHead({ base, head, filter: apps, withChanges: false })
    expect(shape(fullSync)).toEqual(shape({ changes: [], headFiles: apart.headFiles }))

    // Both reads fail on a commit that is not there: one GitError, no rejection left unhandled.
    const missing = '0123456789abcdef0123456789abcdef01234567'
    await expect(reader.changeAndHead({ base, head: missing, filter: apps, withChanges: true })).rejects.toBeInstanceOf(GitError)
  })
})

describe('shallow clones and range resolution on a real repository', () => {
  let origin: string
  let commits: string[]

  beforeAll(async () => {
    origin = await newRepo()
    commits = []
    for (let i = 0; i < 4; i++) commits.push(await commit(origin, { 'cm.yaml': `v: ${i}\n` }, `c${i}`))
  })

  async function shallowClone(depth: number): Promise<string> {
    const dir = join(await tempDir('clone'), 'repo')
    execFileSync('git', ['clone', '-q', '--depth', String(depth), `file://${origin}`, dir], { env: GIT_ENV })
    return dir
  }

  const sha = (i: number): string => commits[i] ?? ''

  it('a push whose before is missing in a depth-1 clone compares against nothing, and says why', async () => {
    const reader = await createGitReader({ cwd: await shallowClone(1) })
    expect(await reader.resolve(sha(3))).toBe(sha(3))
    expect(await reader.resolve(sha(1))).toBeUndefined()
    expect(await reader.parent(sha(3))).toBeUndefined()

    const range = await resolveRange({ event: { before: sha(1), after: sha(3) }, eventName: 'push', inputs: { fullSync: false }, sha: sha(3) }, reader)
    expect(range).toEqual({
      head: sha(3),
      fullSync: false,
      notes: [
        `before commit ${sha(1).slice(0, 7)} is not in the clone (force push or shallow checkout? use fetch-depth: 2 or more); compared with the parent of the head instead`,
        `head ${sha(3).slice(0, 7)} has no parent in the clone (root commit, or a shallow checkout: use fetch-depth: 2 or more); every file at the head counts as added`,
      ],
    })
    const changes = await reader.changedFiles(range.base, range.head, all)
    expect(changes.map((c) => [c.path, c.status, plain(c.after)])).toEqual([['cm.yaml', 'added', plain(file('v: 3\n'))]])
  })

  it('a depth-2 clone falls back to the parent of the head', async () => {
    const reader = await createGitReader({ cwd: await shallowClone(2) })
    const range = await resolveRange({ event: { before: sha(0), after: sha(3) }, eventName: 'push', inputs: { fullSync: false }, sha: sha(3) }, reader)
    expect(range.base).toBe(sha(2))
    expect(range.head).toBe(sha(3))
    expect(range.notes).toHaveLength(1)
    const changes = await reader.changedFiles(range.base, range.head, all)
    expect(changes.map((c) => [c.path, plain(c.before), plain(c.after)])).toEqual([['cm.yaml', plain(file('v: 2\n')), plain(file('v: 3\n'))]])
  })

  it('a full clone compares before..after over several commits', async () => {
    const reader = await createGitReader({ cwd: origin })
    const range = await resolveRange({ event: { before: sha(0), after: sha(3) }, eventName: 'push', inputs: { fullSync: false }, sha: sha(3) }, reader)
    expect(range).toEqual({ base: sha(0), head: sha(3), fullSync: false, notes: [] })
  })

  it('names the input when a requested commit is not in the clone', async () => {
    const reader = await createGitReader({ cwd: await shallowClone(1) })
    await expect(resolveRange({ event: {}, eventName: 'workflow_dispatch', inputs: { base: sha(0), fullSync: false }, sha: sha(3) }, reader)).rejects.toThrow(
      `input 'base': commit '${sha(0)}' not found in the clone; fetch it (actions/checkout fetch-depth: 0)`,
    )
  })
})

describe('openObjects and grep', () => {
  let dir: string
  beforeAll(async () => {
    dir = await newRepo()
  })

  it('lists a commit without reading content: files, symbolic links, no submodules; reads blobs by id in one process', async () => {
    const sha = await commit(dir, { 'a.yaml': 'a: 1\n', 'apps/x/b.yml': 'b\r\n', 'apps/x/link': { symlink: '../../a.yaml' }, 'empty.txt': '' })
    git(dir, 'update-index', '--add', '--cacheinfo', `160000,${sha},vendor/sub`)
    git(dir, 'commit', '-q', '-m', 'gitlink')
    const head = git(dir, 'rev-parse', 'HEAD')
    const reader = await createGitReader({ cwd: dir })
    const session = reader.openObjects()
    try {
      const listed = await session.tree(head)
      expect(listed.map((b) => [b.path, b.type])).toEqual([
        ['a.yaml', 'file'],
        ['apps/x/b.yml', 'file'],
        ['apps/x/link', 'symlink'],
        ['empty.txt', 'file'],
      ])
      const ids = Object.fromEntries(listed.map((b) => [b.path, b.object]))
      const read = await session.read([ids['a.yaml'] ?? '', ids['apps/x/b.yml'] ?? '', ids['apps/x/link'] ?? '', ids['empty.txt'] ?? ''])
      expect([...read.values()].map((bytes) => new TextDecoder().decode(bytes))).toEqual(['a: 1\n', 'b\r\n', '../../a.yaml', ''])
      // The first commit's listing shares its trees with the second's.
      expect((await session.tree(sha)).map((b) => b.path)).toEqual(['a.yaml', 'apps/x/b.yml', 'apps/x/link', 'empty.txt'])
      await expect(session.read(['0'.repeat(40)])).rejects.toThrow(/not in the clone/)
    } finally {
      session.close()
    }
  })

  it('greps a commit for an extended regular expression among the globbed files, nothing found being an answer', async () => {
    const sha = await commit(dir, { 'deep/k.yaml': 'apiVersion: kustomize.toolkit.fluxcd.io/v1\n', 'k.txt': 'kustomize.toolkit.fluxcd.io\n' })
    const reader = await createGitReader({ cwd: dir })
    expect(await reader.grep(sha, 'kustomize\\.toolkit\\.fluxcd\\.io|nothing', ['*.yaml', '*.yml'])).toEqual(['deep/k.yaml'])
    expect(await reader.grep(sha, 'not-there', ['*.yaml'])).toEqual([])
  })

  it('greps for a fixed text: a name from the repository is never a pattern', async () => {
    const sha = await commit(dir, { 'f/one.yaml': 'name: (x+x+)+y\n', 'f/two.yaml': 'name: xxxy\n', 'f/three.yaml': 'name: bad(\n' })
    const reader = await createGitReader({ cwd: dir })
    expect(await reader.grep(sha, '(x+x+)+y', ['*.yaml'], { fixed: true })).toEqual(['f/one.yaml'])
    expect(await reader.grep(sha, 'bad(', ['*.yaml'], { fixed: true })).toEqual(['f/three.yaml'])
  })

  it('lists no entry git itself would refuse to check out (.., ., .git in any case), however the tree was crafted', async () => {
    const blob = git(dir, 'hash-object', '-w', '--stdin', '--path', 'x.yaml')
    const mktree = (entries: string): string => execFileSync('git', ['mktree'], { cwd: dir, input: entries, encoding: 'utf8' }).trim()
    // apps/../../escape.yaml and apps/.GIT/config, as tree entries.
    const up = mktree(`100644 blob ${blob}\tescape.yaml\n`)
    const dotGit = mktree(`100644 blob ${blob}\tconfig\n`)
    const apps = mktree(`040000 tree ${up}\t..\n040000 tree ${dotGit}\t.GIT\n040000 tree ${up}\t.\n100644 blob ${blob}\tok.yaml\n`)
    const root = mktree(`040000 tree ${apps}\tapps\n`)
    const crafted = execFileSync('git', ['commit-tree', root, '-m', 'crafted'], { cwd: dir, encoding: 'utf8' }).trim()
    const reader = await createGitReader({ cwd: dir })
    const session = reader.openObjects()
    try {
      expect((await session.tree(crafted)).map((b) => b.path)).toEqual(['apps/ok.yaml'])
    } finally {
      session.close()
    }
  })
})
