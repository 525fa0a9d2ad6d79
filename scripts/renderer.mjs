// Builds the sandboxed renderer (renderer/, Go compiled to WebAssembly for wasip1) reproducibly,
// brotli-compresses it (quality 9, 16 MiB window: 57 → 7.3 MB, read back in well under a second;
// quality 11 saves another megabyte for minutes of compression), and caches both under ~/.cache
// keyed by its inputs (the Go sources, go.mod, go.sum and the Go version), so an unchanged
// renderer costs nothing. Also lists the Go modules linked into it, with their licence texts, for
// dist/THIRD-PARTY-NOTICES.txt.
// Usage: node scripts/renderer.mjs (setup warms the cache), or from scripts/bundle.mjs:
// buildRenderer() → { compressed: Uint8Array, modules: [{ path, version, licence }] }
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { brotliCompressSync, constants } from 'node:zlib'

const root = join(import.meta.dirname, '..')
const source = join(root, 'renderer')
const env = { ...process.env, GOOS: 'wasip1', GOARCH: 'wasm', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly', CGO_ENABLED: '0' }
// No VCS stamp (the commit and its time would differ in every clone) and no paths or build ID:
// the same inputs give the same bytes on any machine, which the dist/ freshness test relies on.
const buildArgs = ['build', '-trimpath', '-buildvcs=false', '-buildmode=c-shared', '-ldflags=-s -w -buildid=']

function inputsKey() {
  const hash = createHash('sha256')
  for (const name of readdirSync(source).sort()) {
    if (!/\.go$|^go\.(mod|sum)$/.test(name)) continue
    hash
      .update(`${name}\0`)
      .update(readFileSync(join(source, name)))
      .update('\0')
  }
  hash.update(execFileSync('go', ['version'], { env, encoding: 'utf8' })).update(buildArgs.join('\0'))
  return hash.digest('hex').slice(0, 16)
}

export function buildRenderer(log = (line) => process.stderr.write(`${line}\n`)) {
  const cache = join(process.env.HELMRELEASE_TRIGGER_CACHE ?? join(homedir(), '.cache', 'helmrelease-trigger'), 'renderer', inputsKey())
  const compressed = join(cache, 'renderer.wasm.br')
  const modules = join(cache, 'modules.json')
  if (!existsSync(compressed) || !existsSync(modules)) {
    log('renderer: building the sandboxed renderer from renderer/ (Go → WebAssembly; the first build takes a few minutes)')
    const started = Date.now()
    const tmp = `${cache}.tmp.${process.pid}`
    rmSync(tmp, { recursive: true, force: true })
    mkdirSync(tmp, { recursive: true })
    execFileSync('go', [...buildArgs, '-o', join(tmp, 'renderer.wasm'), '.'], {
      cwd: source,
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    const wasm = readFileSync(join(tmp, 'renderer.wasm'))
    const params = { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_LGWIN]: 24, [constants.BROTLI_PARAM_SIZE_HINT]: wasm.length }
    writeFileSync(join(tmp, 'renderer.wasm.br'), brotliCompressSync(wasm, { params }))
    rmSync(join(tmp, 'renderer.wasm'))
    writeFileSync(join(tmp, 'modules.json'), JSON.stringify(linkedModules()))
    rmSync(cache, { recursive: true, force: true })
    mkdirSync(join(cache, '..'), { recursive: true })
    renameSync(tmp, cache)
    log(`renderer: built in ${Math.round((Date.now() - started) / 1000)} s`)
  }
  return { compressed: new Uint8Array(readFileSync(compressed)), modules: JSON.parse(readFileSync(modules, 'utf8')) }
}

if (import.meta.url === `file://${process.argv[1]}`) buildRenderer()

/** The modules the renderer links, each with its licence text (LICENSE, COPYING, …). */
function linkedModules() {
  const out = execFileSync('go', ['list', '-deps', '-f', '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}', '.'], {
    cwd: source,
    env,
    encoding: 'utf8',
  })
  const seen = new Map()
  for (const line of out.split('\n')) {
    const [path, version, dir] = line.split(' ')
    if (!path || seen.has(path)) continue
    const file = dir ? readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f)) : undefined
    seen.set(path, { path, version, licence: file ? readFileSync(join(dir, file), 'utf8').trim() : 'See the module.' })
  }
  return [...seen.values()].sort((a, b) => (a.path < b.path ? -1 : 1))
}
