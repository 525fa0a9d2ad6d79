// One view of the fleet's rollout: cluster × release × result, for the job summary, the CLI,
// the outputs and the exit status. Consumes results; never decides.

import { formatDuration } from '../../lib/duration.ts'
import { releaseKey } from '../../core/model.ts'
import { cell, columns } from '../../lib/text.ts'
import { ICON } from '../trigger/report.ts'
import type { ReleaseResult } from '../../engine/result.ts'
import { ClusterState, type ClusterResult } from './fleet-result.ts'
import type { FleetPlan } from './fleet-plan.ts'
import type { ModeResult } from '../mode.ts'

export interface FleetReport {
  readonly plan: FleetPlan
  readonly clusters: readonly ClusterResult[]
}

const STATE_ICON: Readonly<Record<ClusterState, string>> = { NoWork: '➖', Succeeded: '✅', Failed: '❌', NotStarted: '⏸️', NoResult: '❔' }

function count(report: FleetReport, state: ClusterState): number {
  return report.clusters.filter((c) => c.state === state).length
}

export function fleetHeadline(report: FleetReport): string {
  const withWork = report.clusters.length - count(report, ClusterState.NoWork)
  if (withWork === 0) return `nothing to trigger on ${report.clusters.length} cluster${report.clusters.length === 1 ? '' : 's'}`
  const parts = [
    `${count(report, ClusterState.Succeeded)} succeeded`,
    `${count(report, ClusterState.Failed)} failed`,
    ...(count(report, ClusterState.NotStarted) > 0 ? [`${count(report, ClusterState.NotStarted)} not started`] : []),
    ...(count(report, ClusterState.NoResult) > 0 ? [`${count(report, ClusterState.NoResult)} without result`] : []),
  ]
  return `fleet: ${withWork} of ${report.clusters.length} clusters with work; ${parts.join(', ')}`
}

/** Why the fleet run fails: any cluster with work that did not succeed. */
export function fleetFailure(report: FleetReport): string | undefined {
  const bad = report.clusters.filter((c) => c.state !== ClusterState.Succeeded && c.state !== ClusterState.NoWork)
  if (bad.length === 0) return undefined
  return `${bad.length} cluster${bad.length === 1 ? '' : 's'} did not succeed: ${bad.map((c) => `${c.cluster} (${c.state}${c.message === undefined ? '' : `: ${c.message}`})`).join('; ')}`
}

interface Row {
  readonly cluster: string
  readonly wave: number
  readonly release: string
  readonly result: string
  readonly duration: string
  readonly details: string
}

function rows(report: FleetReport): Row[] {
  return report.clusters.flatMap((c): Row[] => {
    const base = { cluster: c.cluster, wave: c.wave }
    if (c.results.length === 0) {
      const details = c.state === ClusterState.NoWork ? 'the commit changes nothing this cluster triggers on' : (c.message ?? '')
      return [{ ...base, release: '—', result: `${STATE_ICON[c.state]} ${c.state}`, duration: c.durationMs > 0 ? formatDuration(c.durationMs) : '—', details }]
    }
    return c.results.map((r: ReleaseResult) => ({
      ...base,
      release: releaseKey(r),
      result: `${ICON[r.status]} ${r.status}${r.reason && r.reason !== r.status ? ` (${r.reason})` : ''}`,
      duration: formatDuration(r.durationMs),
      details: r.message,
    }))
  })
}

/** Markdown for the job summary; cells are escaped (names and messages come from users and clusters). */
export function fleetSummaryMarkdown(report: FleetReport): string {
  const { range } = report.plan
  const lines = [
    `## helmrelease-trigger ${fleetHeadline(report)}`,
    '',
    `Range: \`${range.fullSync ? 'full sync at ' : range.base === undefined ? '(empty tree)..' : `${range.base.slice(0, 12)}..`}${range.head.slice(0, 12)}\`, planned once for ${report.plan.clusters.length} cluster${report.plan.clusters.length === 1 ? '' : 's'}${report.plan.waves > 1 ? ` in ${report.plan.waves} waves` : ''}`,
    ...range.notes.map((n) => `\n> ${cell(n)}`),
    '',
    ...fleetTable(report),
  ]
  const failure = fleetFailure(report)
  if (failure !== undefined) lines.push('', `**${cell(failure)}**`)
  return `${lines.join('\n')}\n`
}

/** The cluster × release × result table, as Markdown lines. */
export function fleetTable(report: FleetReport): string[] {
  return [
    '| Cluster | Wave | Release | Result | Duration | Details |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows(report).map(
      (r) =>
        `| \`${cell(r.cluster)}\` | ${r.wave} | ${r.release === '—' ? '—' : `\`${cell(r.release)}\``} | ${cell(r.result)} | ${r.duration} | ${cell(r.details)} |`,
    ),
  ]
}

export function fleetText(report: FleetReport): string {
  const table = columns([
    ['CLUSTER', 'WAVE', 'RELEASE', 'RESULT', 'DURATION', 'DETAILS'],
    ...rows(report).map((r) => [r.cluster, String(r.wave), r.release, r.result, r.duration, r.details]),
  ])
  return `helmrelease-trigger ${fleetHeadline(report)}\n\n${table.join('\n')}\n`
}

/** The `fleet` output: per cluster, its state and each release's result. */
export function fleetOutput(report: FleetReport): unknown {
  return {
    head: report.plan.range.head,
    clusters: report.clusters.map((c) => ({
      cluster: c.cluster,
      wave: c.wave,
      state: c.state,
      ...(c.message === undefined ? {} : { message: c.message }),
      releases: c.results.map((r) => ({ namespace: r.namespace, name: r.name, status: r.status, reason: r.reason, message: r.message })),
    })),
  }
}

/** The fleet's result (fleet and fleet-summary) for the action and the CLI. */
export function fleetResult(report: FleetReport): ModeResult {
  const output = fleetOutput(report)
  return {
    headline: `helmrelease-trigger ${fleetHeadline(report)}`,
    log: report.clusters.flatMap((c) => [
      `  ${c.cluster} (wave ${c.wave}): ${c.state}${c.message === undefined ? '' : ` ${c.message}`}`,
      ...c.results.map((r) => `    ${r.namespace}/${r.name}: ${r.status} (${r.reason}) ${r.message}`),
    ]),
    outputs: { fleet: JSON.stringify(output) },
    annotations: [],
    summaryMarkdown: fleetSummaryMarkdown(report),
    text: fleetText(report),
    json: output,
    failure: fleetFailure(report),
  }
}
