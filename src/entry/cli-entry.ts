// Bundled as dist/cli.js, the package's `helmrelease-trigger` command.
// First: refuses an older Node with one line before any dependency loads.
import './node-version.ts'
import { main } from './cli.ts'

process.exitCode = await main(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
})
