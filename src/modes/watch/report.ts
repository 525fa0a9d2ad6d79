// What a watch run did, read from its metrics when it stops (the CLI prints it, the action
// publishes it).

import type { WatchMetrics } from './metrics.ts'

export interface WatchReport {
  readonly triggered: number
  readonly skipped: number
  readonly failed: number
  readonly deletions: number
  readonly restarts: number
  readonly durationMs: number
  /** Why it stopped: signal, watch-duration, error. */
  readonly stoppedBy: string
}

export function watchReport(metrics: Pick<WatchMetrics, 'triggers' | 'deletions' | 'restarts'>, durationMs: number, stoppedBy: string): WatchReport {
  const result = (r: string): number => metrics.triggers.total({ result: r })
  return {
    triggered: result('triggered') + result('dry-run'),
    skipped: result('skipped'),
    failed: result('failed'),
    deletions: metrics.deletions.get(),
    // An expired watch is the server's normal rotation, not a restart worth counting.
    restarts: metrics.restarts.total({ reason: 'gone' }) + metrics.restarts.total({ reason: 'error' }),
    durationMs,
    stoppedBy,
  }
}
