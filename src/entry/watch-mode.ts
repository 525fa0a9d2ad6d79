// Watch as a row of the table of modes, in a file of its own: the CLI imports only this for
// `watch`, so the process that runs for days never evaluates the GitHub client, git, rendering,
// fleet, drift or discover code (modes.ts imports them all).

import { formatDuration } from '../lib/duration.ts'
import type { ModeResult } from '../modes/mode.ts'
import { runWatchProcess } from '../modes/watch/process.ts'
import type { WatchReport } from '../modes/watch/run.ts'
import type { EntryMode } from './entry-ports.ts'

export const watch: EntryMode = {
  name: 'watch',
  async run(settings, ports) {
    return watchResult(await runWatchProcess(settings, { env: ports.env, mask: ports.mask, sink: ports.watchSink }))
  },
}

/** Watch logs as it goes; its result is the closing line (the CLI prints nothing more). */
function watchResult(report: WatchReport): ModeResult {
  const line = `watch stopped (${report.stoppedBy}) after ${formatDuration(report.durationMs)}: ${report.triggered} triggered, ${report.skipped} skipped, ${report.failed} failed, ${report.deletions} sources deleted, ${report.restarts} watch restarts`
  return {
    headline: `helmrelease-trigger: ${line}`,
    log: [],
    outputs: {},
    annotations: [],
    summaryMarkdown: `## helmrelease-trigger: ${line}\n`,
    text: '',
    json: undefined,
    failure: undefined,
  }
}
