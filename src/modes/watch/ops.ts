// What the operations endpoints answer (server.ts serves them): /readyz is ready once the
// initial sync is done and says whether this replica leads or stands by.

import type { ListenAddress } from '../../settings.ts'
import type { EventLog } from './log.ts'
import { startOpsServer, type OpsServer, type Probe } from './server.ts'

/** `holder`: the Lease's holder as last seen, undefined without leader election. */
export function readiness(ready: boolean, leading: boolean, holder: string | undefined): Probe {
  if (!ready) return { ok: false, body: 'initial sync in progress' }
  if (holder === undefined) return { ok: true, body: 'ok: synced' }
  return { ok: true, body: leading ? 'ok: synced; leading' : `ok: synced; standing by (leader: ${holder || 'none'})` }
}

export interface OpsState {
  readonly ready: () => boolean
  readonly leading: () => boolean
  readonly holder: () => string | undefined
  readonly metrics: () => string
}

/** Serves /healthz, /readyz and /metrics on `address`, or nothing when it is unset. */
export async function serveOps(address: ListenAddress | undefined, state: OpsState, log: EventLog): Promise<OpsServer | undefined> {
  if (address === undefined) return undefined
  const server = await startOpsServer(address, {
    health: () => ({ ok: true, body: 'ok' }),
    ready: () => readiness(state.ready(), state.leading(), state.holder()),
    metrics: state.metrics,
  })
  log.event('info', 'serving /healthz, /readyz and /metrics', { url: server.url })
  return server
}
