// Builds dist/index.js (the action) and dist/cli.js (the CLI): one ESM file each, every
// dependency inlined, reproducible (no timestamps, no absolute paths), so a test can check
// that the committed dist/ equals a fresh build.
// Usage: node scripts/bundle.mjs [outdir]   (default dist)
import { join } from 'node:path'
import { build } from 'esbuild'

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

await build({ ...shared, entryPoints: ['src/index.ts'], outfile: join(outdir, 'index.js') })
await build({
  ...shared,
  entryPoints: ['src/cli-entry.ts'],
  outfile: join(outdir, 'cli.js'),
  banner: { js: `#!/usr/bin/env node\n${shared.banner.js}` },
})
