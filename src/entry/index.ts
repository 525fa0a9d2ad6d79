// Bundled as dist/index.js, the file action.yml runs.
// First: refuses an older Node with one line before any dependency loads.
import './node-version.ts'
import { run } from './action.ts'

await run()
