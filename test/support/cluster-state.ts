// What `npm run cluster -- up` leaves in .cluster/state.json for `down`, `status`
// and for test runs that reuse that cluster (HELMRELEASE_TRIGGER_CLUSTER=.cluster).

import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ClusterProcess, Ports } from './cluster.ts'
import type { ProvidedCluster } from './global-setup.ts'

/** What tests are handed, plus what `down` and `status` need. */
export interface ClusterState extends ProvidedCluster {
  /** The detached supervisor that owns every process below. */
  readonly supervisorPid: number
  readonly startedAt: string
  readonly flux: boolean
  readonly dir: string
  readonly ports: Ports
  readonly processes: readonly ClusterProcess[]
  readonly timings: Readonly<Record<string, number>>
}

export function statePath(dir: string): string {
  return join(dir, 'state.json')
}

/** The state, or undefined when there is none (never started, or stopped). */
export async function readClusterState(dir: string): Promise<ClusterState | undefined> {
  try {
    return JSON.parse(await readFile(statePath(dir), 'utf8')) as ClusterState
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Whether pid is a live cluster supervisor (`cluster-cli.ts __supervise`), not a reused pid. */
export function isSupervisor(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('__supervise')
  } catch {
    return false
  }
}
