// Preloaded into the watch process by hand (BENCH_WATCH_NODE_ARGS="--import=<this file>",
// BENCHMARKS.md §4): the time inside the process from the last body chunk of a ConfigMap watch
// to the end() of the PATCH that follows it, i.e. the event-to-patch path without the network.
// At exit it appends one line per spacing between patches (about 1, 10 and 100 changes/s) to
// $BENCH_EVENT_PATH_FILE: count, p50 and p90 in ms.
import { appendFileSync } from 'node:fs'
import { ClientRequest, IncomingMessage } from 'node:http'
import { performance } from 'node:perf_hooks'

const file = process.env.BENCH_EVENT_PATH_FILE
if (file) {
  let chunkAt = 0
  let lastPatchAt = 0
  /** [ms since the previous patch, ms from the chunk to this patch's end()] */
  const rows = []
  const push = IncomingMessage.prototype.push
  IncomingMessage.prototype.push = function (chunk, encoding) {
    const path = this.req?.path ?? ''
    if (chunk !== null && path.includes('watch=') && path.includes('/configmaps')) chunkAt = performance.now()
    return push.call(this, chunk, encoding)
  }
  const end = ClientRequest.prototype.end
  ClientRequest.prototype.end = function (...args) {
    if (this.method === 'PATCH' && chunkAt > 0) {
      const now = performance.now()
      rows.push([now - lastPatchAt, now - chunkAt])
      lastPatchAt = now
      chunkAt = 0
    }
    return end.apply(this, args)
  }
  const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(3)
  let written = false
  const write = () => {
    if (written || rows.length === 0) return
    written = true
    const spacings = [
      ['~1/s', (gap) => gap > 500],
      ['~10/s', (gap) => gap > 50 && gap <= 500],
      ['~100/s', (gap) => gap <= 50],
    ]
    for (const [name, within] of spacings) {
      const ms = rows.filter(([gap]) => within(gap)).map(([, d]) => d)
      ms.sort((a, b) => a - b)
      if (ms.length > 0) appendFileSync(file, `${name} n=${ms.length} p50=${quantile(ms, 0.5)} ms p90=${quantile(ms, 0.9)} ms\n`)
    }
  }
  process.on('exit', write)
}
