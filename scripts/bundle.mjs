// Builds dist/index.js (the action), dist/cli.js (the CLI), dist/parse-worker.js (their
// plan's parse threads), dist/sandbox-worker.js (the renderer's threads) and
// dist/renderer.wasm.br (the sandboxed renderer, Go compiled to WebAssembly, brotli-compressed):
// every dependency inlined, reproducible (no timestamps, no absolute paths), so a test can check
// that the committed dist/ equals a fresh build.
// The bundles inline third-party code, so dist/THIRD-PARTY-NOTICES.txt carries the licence
// of every package and Go module that ends up in them.
// Usage: node scripts/bundle.mjs [outdir]   (default dist)
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { buildRenderer } from './renderer.mjs'

const outdir = process.argv[2] ?? 'dist'

const shared = {
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'esm',
  legalComments: 'none',
  sourcemap: false,
  minify: true,
  keepNames: true,
  logLevel: 'warning',
  // Some dependencies are CommonJS and call require(): give the ESM bundle one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
}

const action = await build({ ...shared, metafile: true, entryPoints: ['src/entry/index.ts'], outfile: join(outdir, 'index.js') })
const cli = await build({
  ...shared,
  metafile: true,
  entryPoints: ['src/entry/cli-entry.ts'],
  outfile: join(outdir, 'cli.js'),
  banner: { js: `#!/usr/bin/env node\n${shared.banner.js}` },
})

// The plan's parse threads (src/git/parse-pool.ts) load it from next to index.js and cli.js.
const parseWorker = await build({ ...shared, metafile: true, entryPoints: ['src/git/parse-worker.ts'], outfile: join(outdir, 'parse-worker.js') })

// The renderer's threads (src/sandbox/sandbox.ts) load it from next to index.js and cli.js, and
// the module (src/sandbox/renderer-module.ts) from the same place.
const sandboxWorker = await build({ ...shared, metafile: true, entryPoints: ['src/sandbox/worker.ts'], outfile: join(outdir, 'sandbox-worker.js') })
const renderer = buildRenderer()
writeFileSync(join(outdir, 'renderer.wasm.br'), renderer.compressed)

writeFileSync(join(outdir, 'THIRD-PARTY-NOTICES.txt'), notices([action.metafile, cli.metafile, parseWorker.metafile, sandboxWorker.metafile], renderer.modules))

/** One section per bundled package (name, version, licence text) and per Go module of the renderer, sorted, reproducible. */
function notices(metafiles, modules) {
  const dirs = new Set()
  for (const metafile of metafiles) {
    for (const input of Object.keys(metafile.inputs)) {
      const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input)
      if (match) dirs.add(match[1])
    }
  }
  const sections = [...dirs].map((dir) => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    const file = existsSync(dir) ? readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f)) : undefined
    const text = file ? readFileSync(join(dir, file), 'utf8').trim() : `License: ${pkg.license ?? 'see the package'}`
    return { key: `${pkg.name}@${pkg.version}`, text }
  })
  for (const m of modules) sections.push({ key: `${m.path}@${m.version} (Go module, in renderer.wasm.br)`, text: m.licence })
  const unique = new Map(sections.map((s) => [s.key, s.text]))
  const keys = [...unique.keys()].sort()
  const header = 'helmrelease-trigger bundles the following packages. Their licences follow.\n'
  return `${header}\n${keys.map((k) => `${'='.repeat(72)}\n${k}\n${'='.repeat(72)}\n${unique.get(k)}\n`).join('\n')}`
}
