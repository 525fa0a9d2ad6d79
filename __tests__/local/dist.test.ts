// dist/ is a product file: the committed bundle must equal a fresh build of the sources.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const fresh = mkdtempSync(join(tmpdir(), 'hrt-dist-'))

beforeAll(() => {
  execFileSync(process.execPath, [join(root, 'scripts', 'bundle.mjs'), fresh], { cwd: root })
}, 120_000)
afterAll(() => rmSync(fresh, { recursive: true, force: true }))

describe('dist/', () => {
  it.each(['index.js', 'cli.js', 'parse-worker.js', 'THIRD-PARTY-NOTICES.txt'])('%s equals a fresh bundle (run npm run bundle and commit dist/)', (file) => {
    const committed = readFileSync(join(root, 'dist', file), 'utf8')
    const rebuilt = readFileSync(join(fresh, file), 'utf8')
    expect(committed.length).toBe(rebuilt.length)
    expect(committed === rebuilt).toBe(true)
  })
})
