// Reporting of drift: the job summary, the CLI text, the `drift` output. Consumes the report;
// never decides. Values come from compare.ts already redacted for Secrets.

import { formatDuration } from '../../lib/duration.ts'
import { releaseKey } from '../../core/model.ts'
import { cell, code, columns } from '../../lib/text.ts'
import { driftFailure, ObjectState, ReleaseState, objectKey, type DriftReport, type ObjectDrift, type ReleaseDrift } from './run.ts'
import type { Annotation, ModeResult } from '../mode.ts'

const ICON: Readonly<Record<ReleaseState, string>> = { InSync: '✅', Drifted: '⚠️', Skipped: '⏭️', Error: '❌' }

export interface DriftCounts {
  readonly inSync: number
  readonly drifted: number
  readonly skipped: number
  readonly errors: number
}

export function driftCounts(report: DriftReport): DriftCounts {
  const count = (s: ReleaseState): number => report.releases.filter((r) => r.state === s).length
  return { inSync: count(ReleaseState.InSync), drifted: count(ReleaseState.Drifted), skipped: count(ReleaseState.Skipped), errors: count(ReleaseState.Error) }
}

export function driftHeadline(report: DriftReport): string {
  const c = driftCounts(report)
  const corrected = report.releases.filter((r) => r.correction !== undefined).length
  const parts = [`${c.inSync} in sync`, `${c.drifted} drifted`, `${c.skipped} skipped`, `${c.errors} not checked`]
  if (corrected > 0) parts.push(`${corrected} correction${corrected === 1 ? '' : 's'} requested${report.dryRun ? ' (dry run)' : ''}`)
  return `drift: ${parts.join(', ')}`
}

/** The `drift` output: every release with its drifted objects and field changes. */
export function driftOutput(report: DriftReport): unknown {
  return {
    action: report.action,
    scope: report.scope,
    dryRun: report.dryRun,
    counts: driftCounts(report),
    releases: report.releases.map((r) => ({
      namespace: r.namespace,
      name: r.name,
      releaseName: r.releaseName,
      storageNamespace: r.storageNamespace,
      revision: r.revision ?? null,
      chart: r.chart ?? null,
      state: r.state,
      reason: r.reason,
      message: r.message,
      objects: r.objects,
      inSync: r.inSync,
      ignored: r.ignored,
      drifted: r.drifted.map((o) => ({
        apiVersion: o.apiVersion,
        kind: o.kind,
        namespace: o.namespace ?? null,
        name: o.name,
        state: o.state,
        changes: o.changes,
        ...(o.message === undefined ? {} : { message: o.message }),
        ...(o.source === undefined ? {} : { source: o.source }),
      })),
      correction: r.correction ?? null,
    })),
  }
}

/** Rows of (object, field, desired, live): one per field change, one per missing or unreadable object. */
function rows(o: ObjectDrift): { object: string; field: string; desired: string; live: string; result: string }[] {
  // The chart template it came from, where Helm kept it (Helm v4 does, through helm-controller's post-renderer).
  const object = o.source === undefined ? objectKey(o) : `${objectKey(o)} (${o.source})`
  if (o.state === ObjectState.Missing) return [{ object, field: '—', desired: 'present', live: '(missing)', result: 'missing' }]
  if (o.state === ObjectState.Error) return [{ object, field: '—', desired: '—', live: '—', result: `not compared: ${o.message ?? ''}` }]
  return o.changes.map((c) => ({ object, field: c.path, desired: c.desired, live: c.live, result: 'changed' }))
}

function correctionText(r: ReleaseDrift): string {
  const c = r.correction
  if (c === undefined) return ''
  const after = r.state === ReleaseState.InSync ? 'back in sync' : r.state === ReleaseState.Drifted ? 'still drifted' : r.state
  return `correction ${c.status} (${c.reason})${c.revisionAfter === undefined ? '' : `, revision ${c.revisionAfter}`}; ${after}${c.message === '' ? '' : `: ${c.message}`}`
}

const MAX_SUMMARY_ROWS = 500

/** Markdown for $GITHUB_STEP_SUMMARY. Cells are escaped: names and values come from the cluster. */
export function driftSummary(report: DriftReport): string {
  const lines: string[] = [`## helmrelease-trigger ${driftHeadline(report)}`, '']
  for (const note of report.notes) lines.push(`> ${cell(note)}`, '')
  if (report.releases.length > 0) {
    lines.push('### Releases', '', '| Release | Helm release | Revision | Result | Objects | Details |', '| --- | --- | --- | --- | --- | --- |')
    for (const r of report.releases) {
      const details = [r.message, correctionText(r)].filter((t) => t !== '').join('; ')
      lines.push(
        `| ${code(releaseKey(r))} | ${code(`${r.storageNamespace}/${r.releaseName}`)} | ${r.revision ?? '—'} | ${ICON[r.state]} ${r.state}${r.reason !== r.state ? ` (${cell(r.reason)})` : ''} | ${r.objects} | ${cell(details)} |`,
      )
    }
  }
  const drift = report.releases.flatMap((r) => r.drifted.flatMap((o) => rows(o).map((row) => ({ release: releaseKey(r), ...row }))))
  if (drift.length > 0) {
    lines.push('', '### Drift', '', '| Release | Object | Field | Desired → live | Result |', '| --- | --- | --- | --- | --- |')
    for (const d of drift.slice(0, MAX_SUMMARY_ROWS)) {
      const change = d.field === '—' ? '—' : `${code(d.desired)} → ${code(d.live)}`
      lines.push(`| ${code(d.release)} | ${code(d.object)} | ${d.field === '—' ? '—' : `${code(d.field)}`} | ${change} | ${cell(d.result)} |`)
    }
    if (drift.length > MAX_SUMMARY_ROWS) lines.push('', `_${drift.length - MAX_SUMMARY_ROWS} more rows in the \`drift\` output._`)
  }
  return `${lines.join('\n')}\n`
}

/** Plain text for the CLI. */
export function driftText(report: DriftReport): string {
  const out: string[] = [`helmrelease-trigger ${driftHeadline(report)}`, ...report.notes.map((n) => `note: ${n}`)]
  if (report.releases.length > 0) {
    const table = report.releases.map((r) => [
      releaseKey(r),
      r.state,
      r.reason,
      String(r.revision ?? '-'),
      formatDuration(r.durationMs),
      [r.message, correctionText(r)].filter((t) => t !== '').join('; '),
    ])
    out.push('', ...columns([['RELEASE', 'STATE', 'REASON', 'REVISION', 'DURATION', 'DETAILS'], ...table]))
  }
  const drift = report.releases.flatMap((r) =>
    r.drifted.flatMap((o) =>
      rows(o).map((row) => [releaseKey(r), row.object, row.field, row.field === '—' ? '-' : `${row.desired} -> ${row.live}`, row.result]),
    ),
  )
  if (drift.length > 0) out.push('', ...columns([['RELEASE', 'OBJECT', 'FIELD', 'DESIRED -> LIVE', 'RESULT'], ...drift]))
  return `${out.join('\n')}\n`
}

/** Drift's result for the action and the CLI. */
export function driftResult(report: DriftReport): ModeResult {
  const output = driftOutput(report)
  return {
    headline: `helmrelease-trigger ${driftHeadline(report)}`,
    log: report.releases.map((r) => `  ${r.namespace}/${r.name}: ${r.state} (${r.reason}) ${r.message}`),
    outputs: { drift: JSON.stringify(output) },
    annotations: report.releases.flatMap(driftAnnotation),
    summaryMarkdown: driftSummary(report),
    text: driftText(report),
    json: output,
    failure: driftFailure(report),
  }
}

/** One per release that is not in sync: the job page lists them without opening the summary. */
function driftAnnotation(r: ReleaseDrift): Annotation[] {
  const severity = r.state === ReleaseState.Drifted ? 'warning' : r.state === ReleaseState.Error ? 'error' : undefined
  return severity === undefined ? [] : [{ severity, title: 'helmrelease-trigger drift', message: `${r.namespace}/${r.name}: ${r.message}` }]
}
