// A real throwaway git repository with real commits, for action-level tests and the demo.

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

export interface Repo {
  readonly dir: string
  /** Writes files (path → content) relative to the repository root. */
  write(files: Readonly<Record<string, string>>): void
  remove(path: string): void
  /** Commits everything and returns the new commit's SHA. */
  commit(message: string): string
  git(...args: string[]): string
  cleanup(): void
}

export function createRepo(prefix = 'hrt-repo-'): Repo {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
  git('init', '-q', '-b', 'main')
  git('config', 'user.name', 'Test')
  git('config', 'user.email', 'test@example.invalid')
  git('config', 'commit.gpgsign', 'false')
  return {
    dir,
    git,
    write(files) {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true })
        writeFileSync(join(dir, path), text)
      }
    },
    remove(path) {
      rmSync(join(dir, path))
    },
    commit(message) {
      git('add', '-A')
      git('commit', '-q', '--allow-empty', '-m', message)
      return git('rev-parse', 'HEAD')
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
