// What each cluster of the fleet ended with, and its file form: a matrix job writes its
// cluster's result, the gathering job reads them all back into one fleet summary.

import { ConfigurationError } from '../../lib/errors.ts'
import { MAX_CELL } from '../../lib/text.ts'
import { oneLine } from '../../lib/untrusted.ts'
import type { FileProblem } from '../../core/model.ts'
import { failureOf } from '../trigger/report.ts'
import { reasonOf, Status, type ReleaseResult, type SourceResult, type TriggerReport } from '../../engine/result.ts'
import type { FailOn } from '../../settings.ts'

export const ClusterState = {
  /** The commit changes nothing this cluster triggers on: no job ran. */
  NoWork: 'NoWork',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  /** An earlier wave failed: never started. */
  NotStarted: 'NotStarted',
  /** Its job never wrote a result: it never ran, was cancelled or timed out (one that fails writes Failed). */
  NoResult: 'NoResult',
} as const
export type ClusterState = (typeof ClusterState)[keyof typeof ClusterState]

export interface ClusterResult {
  readonly cluster: string
  readonly wave: number
  readonly state: ClusterState
  /** Why it failed, was not started or left no result. */
  readonly message?: string
  readonly results: readonly ReleaseResult[]
  readonly sources: readonly SourceResult[]
  readonly problems: readonly FileProblem[]
  readonly durationMs: number
}

/** A cluster that ran: its report, judged by fail-on like a single-cluster run. */
export function clusterResultOf(cluster: { name: string; wave: number }, report: TriggerReport, failOn: FailOn, durationMs: number): ClusterResult {
  const failure = failureOf(report, failOn)
  return {
    cluster: cluster.name,
    wave: cluster.wave,
    state: failure === undefined ? ClusterState.Succeeded : ClusterState.Failed,
    ...(failure === undefined ? {} : { message: failure }),
    results: report.results,
    sources: report.sources,
    problems: report.problems,
    durationMs,
  }
}

/**
 * A cluster that did not get to a report (no connection, bad kubeconfig, no plan): failed, with
 * the error as one line. The text may be an apiserver's: made inert here, as a file another job
 * reads it, and cut where a summary cell would be.
 */
export function clusterErrorOf(cluster: { name: string; wave: number }, message: string, durationMs: number): ClusterResult {
  const reason = oneLine(message.trim(), MAX_CELL) || 'it failed without saying why (see its log)'
  return { cluster: cluster.name, wave: cluster.wave, state: ClusterState.Failed, message: reason, results: [], sources: [], problems: [], durationMs }
}

const RESULT_FILE_KIND = 'helmrelease-trigger/cluster-result'
const RESULT_FILE_VERSION = 1

export function writeResultFile(result: ClusterResult): string {
  return `${JSON.stringify({ kind: RESULT_FILE_KIND, version: RESULT_FILE_VERSION, ...result })}\n`
}

const STATUSES: ReadonlySet<string> = new Set(Object.values(Status))
const STATES: ReadonlySet<string> = new Set(Object.values(ClusterState))

/** Reads a cluster's result back; a damaged file is one sentence naming it. */
export function readResultFile(text: string, file: string): ClusterResult {
  const bad = (what: string) => new ConfigurationError(`${file} is not a helmrelease-trigger cluster result (${what}); was it written by the same release?`)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw bad('not JSON')
  }
  if (typeof json !== 'object' || json === null) throw bad('not an object')
  const r: Record<string, unknown> = { ...json }
  if (r['kind'] !== RESULT_FILE_KIND || r['version'] !== RESULT_FILE_VERSION) throw bad(`kind and version must be ${RESULT_FILE_KIND} ${RESULT_FILE_VERSION}`)
  if (typeof r['cluster'] !== 'string' || typeof r['wave'] !== 'number' || typeof r['state'] !== 'string' || !STATES.has(r['state']))
    throw bad('cluster, wave or state')
  if (!Array.isArray(r['results']) || !Array.isArray(r['sources']) || !Array.isArray(r['problems'])) throw bad('results, sources or problems')
  const results: ReleaseResult[] = r['results'].map((x: unknown) => {
    if (typeof x !== 'object' || x === null) throw bad('a result is not an object')
    const e: Record<string, unknown> = { ...x }
    const { namespace, name, status, reason, message, durationMs, severity } = e
    if (typeof namespace !== 'string' || typeof name !== 'string' || typeof status !== 'string' || !STATUSES.has(status))
      throw bad('a result lacks its release or status')
    if (typeof reason !== 'string' || typeof message !== 'string' || typeof durationMs !== 'number')
      throw bad(`result ${namespace}/${name} lacks reason, message or duration`)
    if (severity !== 'none' && severity !== 'warning' && severity !== 'error') throw bad(`result ${namespace}/${name} has no severity`)
    // A reason read back is helm-controller's or one of ours; either way it is shown, never decided on.
    return { ...(e as unknown as ReleaseResult), namespace, name, reason: reasonOf(reason), message, durationMs, severity }
  })
  return {
    cluster: r['cluster'],
    wave: r['wave'],
    state: r['state'] as ClusterState,
    ...(typeof r['message'] === 'string' ? { message: r['message'] } : {}),
    results,
    sources: r['sources'] as SourceResult[],
    problems: r['problems'] as FileProblem[],
    durationMs: typeof r['durationMs'] === 'number' ? r['durationMs'] : 0,
  }
}
