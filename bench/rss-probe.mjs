// Preloaded into the bundled action (NODE_OPTIONS=--import) by the bench: writes the
// process's peak RSS (getrusage ru_maxrss, KiB) to $BENCH_RSS_FILE when it exits.
import { writeFileSync } from 'node:fs'

const file = process.env.BENCH_RSS_FILE
if (file) {
  process.on('exit', () => writeFileSync(file, String(process.resourceUsage().maxRSS)))
}
