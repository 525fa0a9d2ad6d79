// The watch mode as a process (CLI, container, self-hosted runner job): SIGTERM and SIGINT stop
// it gracefully (in-flight patches drained, Lease released, exit 0); a second signal exits at once.

import type { ConnectOptions } from '../../kube/connect.ts'
import type { Settings } from '../../settings.ts'
import { connectWatch } from '../../kube/connect.ts'
import { createEventLog, type LogSink } from './log.ts'
import { runWatch, type WatchReport } from './run.ts'

export interface WatchProcessOptions extends ConnectOptions {
  readonly sink: LogSink
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']

export async function runWatchProcess(settings: Settings, options: WatchProcessOptions): Promise<WatchReport> {
  const log = createEventLog(settings.logFormat, options.sink)
  const stop = new AbortController()
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stop.signal.aborted) {
      log.event('warning', 'second signal: exiting without draining', { signal })
      process.exit(130)
    }
    log.event('info', 'signal received', { signal })
    stop.abort()
  }
  for (const s of SIGNALS) process.on(s, onSignal)
  try {
    return await runWatch(settings, {
      connect: async () => connectWatch(settings, options),
      log,
      signal: stop.signal,
    })
  } finally {
    for (const s of SIGNALS) process.off(s, onSignal)
  }
}
