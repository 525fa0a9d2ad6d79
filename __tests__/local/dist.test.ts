// dist/ is a product file: the committed bundle, and the renderer module built from renderer/,
// must equal a fresh build of the sources.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const fresh = mkdtempSync(join(tmpdir(), 'hrt-dist-'))

beforeAll(() => {
  // A renderer not yet in the cache is built from its Go module first (minutes, once).
  execFileSync(process.execPath, [join(root, 'scripts', 'bundle.mjs'), fresh], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
}, 900_000)
afterAll(() => rmSync(fresh, { recursive: true, force: true }))

describe('dist/', () => {
  it.each(['index.js', 'cli.js', 'parse-worker.js', 'sandbox-worker.js', 'renderer.wasm.br', 'THIRD-PARTY-NOTICES.txt'])(
    '%s equals a fresh bundle (run npm run bundle and commit dist/)',
    (file) => {
      const committed = readFileSync(join(root, 'dist', file))
      const rebuilt = readFileSync(join(fresh, file))
      expect(committed.length).toBe(rebuilt.length)
      expect(committed.equals(rebuilt)).toBe(true)
    },
  )
})
