// Bundled as dist/index.js, the file action.yml runs.
import { run } from './action.ts'

await run()
