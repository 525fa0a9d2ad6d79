// Reporting consumes results; it never decides. One TriggerReport feeds the job summary,
// the outputs, the CLI table and the exit status.

import { cell, code, columns, failureSentence, location, plural } from '../../lib/text.ts'
import { formatDuration } from '../../lib/duration.ts'
import { oneLine } from '../../lib/untrusted.ts'
import type { FileProblem, KeyChange, Origin, PlannedRelease, PlannedSource, ReleaseRef } from '../../core/model.ts'
import { chartSourceId, releaseKey } from '../../core/model.ts'
import type { Range } from '../../git/range.ts'
import { FAILED, Status, type Reason, type ReleaseResult, type TriggerReport } from '../../engine/result.ts'
import type { FailOn } from '../../settings.ts'
import { shownDigest } from '../../core/digest.ts'
import type { Annotation, ModeResult } from '../mode.ts'
import type { Digest, SourceId } from '../../core/model.ts'
import { clusterSections, quietClusters, underCluster } from './cluster-sections.ts'
import { deployedMarkdown, deployedText } from './deployed-report.ts'
import { predictedMarkdown, predictedText } from './predicted-report.ts'
import type { DeployedDiff } from '../../core/deployed-diff.ts'

/** The job summary's room for the deployed diff's details (GitHub allows 1 MiB per step). */
const SUMMARY_DEPLOYED_BUDGET = 400_000

export const ICON: Readonly<Record<Status, string>> = {
  Triggered: '🚀',
  Upgraded: '✅',
  Unchanged: '➖',
  DryRun: '🧪',
  Planned: '📝',
  Skipped: '⏭️',
  Failed: '❌',
  TimedOut: '⏱️',
}

const TRIGGERED: ReadonlySet<Status> = new Set([Status.Triggered, Status.Upgraded, Status.Unchanged, Status.DryRun])

export interface OutputEntry extends ReleaseRef {
  /** The cluster tree, when the repository holds several. */
  readonly cluster?: string
  readonly status: Status
  readonly token?: string
  readonly sources: readonly string[]
  readonly reason?: Reason
  readonly message?: string
  readonly revisionBefore?: number
  readonly revisionAfter?: number
  /** Its chart source changed: which one and the artifact revision source-controller fetched. */
  readonly chart?: { readonly source: string; readonly revision?: string }
  /** What the upgrade changed, from Helm's storage: objects and paths, values (a Secret's as paths only). */
  readonly deployed?: DeployedDiff
}

export interface Outputs {
  readonly triggered: readonly OutputEntry[]
  readonly skipped: readonly OutputEntry[]
  readonly failed: readonly OutputEntry[]
  readonly plan: unknown
}

export function outputsOf(report: TriggerReport): Outputs {
  const entry = (r: ReleaseResult): OutputEntry => ({
    ...(r.cluster === undefined ? {} : { cluster: r.cluster }),
    namespace: r.namespace,
    name: r.name,
    status: r.status,
    ...(r.token === undefined ? {} : { token: r.token }),
    sources: r.sources.map((s) => s.id),
    reason: r.reason,
    message: r.message,
    ...(r.revisionBefore === undefined ? {} : { revisionBefore: r.revisionBefore }),
    ...(r.revisionAfter === undefined ? {} : { revisionAfter: r.revisionAfter }),
    ...(r.chart === undefined ? {} : { chart: { source: r.chart.source, ...(r.chart.revision === undefined ? {} : { revision: r.chart.revision }) } }),
    ...(r.deployed === undefined ? {} : { deployed: r.deployed }),
  })
  return {
    triggered: report.results.filter((r) => TRIGGERED.has(r.status)).map(entry),
    skipped: report.results.filter((r) => r.status === Status.Skipped || r.status === Status.Planned).map(entry),
    failed: report.results.filter((r) => FAILED.has(r.status)).map(entry),
    plan: report.range === undefined ? null : planJson(report, report.range),
  }
}

function planJson(report: TriggerReport, range: Range): unknown {
  return {
    base: range.base ?? null,
    head: range.head,
    fullSync: range.fullSync,
    ...(report.clusters === undefined ? {} : { clusters: report.clusters }),
    sources: report.plan.sources.map((s) => ({
      ...(s.cluster === undefined ? {} : { cluster: s.cluster }),
      id: s.id,
      change: s.change,
      // A Secret's digest is never published, not even keyed: anyone reading outputs could test guesses of an unkeyed one.
      digest: s.kind === 'Secret' ? null : (s.digest ?? null),
      previousDigest: s.kind === 'Secret' ? null : (s.previousDigest ?? null),
      encrypted: s.encrypted,
      file: s.origin.file,
      line: s.origin.line,
      ...(s.edits === undefined ? {} : { edits: s.edits }),
      ...(s.renamedFrom === undefined ? {} : { renamedFrom: s.renamedFrom }),
      ...(s.suspended === undefined ? {} : { suspended: s.suspended }),
      targets: s.targets.map((t) => ({ namespace: t.namespace, name: t.name, reasons: t.reasons })),
    })),
    releases: report.plan.releases.map((r) => ({
      ...(r.cluster === undefined ? {} : { cluster: r.cluster }),
      namespace: r.namespace,
      name: r.name,
      sources: r.sources.map((s) => ({
        id: s.id,
        digest: shownFull(s.id, s.digest),
        ...(s.origin === undefined ? {} : { file: s.origin.file, line: s.origin.line }),
      })),
      ...(r.spec === undefined ? {} : { spec: { change: r.spec.change, fields: r.spec.fields, file: r.spec.origin.file, line: r.spec.origin.line } }),
      ...(r.chart === undefined
        ? {}
        : { chart: { source: chartSourceId(r.chart), fields: r.chart.fields, file: r.chart.origin.file, line: r.chart.origin.line } }),
    })),
    problems: report.problems,
  }
}

/** Why the run fails under `failOn`, or undefined when it passes. */
export function failureOf(report: TriggerReport, failOn: FailOn): string | undefined {
  if (failOn === 'never') return undefined
  const errors = [
    ...report.results.filter((r) => r.severity === 'error').map((r) => `${releaseKey(r)}: ${r.status} (${r.reason})`),
    ...report.sources.filter((s) => !s.applied).map((s) => `${s.id} never reached the cluster`),
    ...report.problems.filter((p) => p.severity === 'error').map((p) => `${location(p)}: ${p.message}`),
  ]
  const warnings =
    failOn === 'warning'
      ? [
          ...report.results.filter((r) => r.severity === 'warning').map((r) => `${releaseKey(r)}: ${r.reason}`),
          ...report.problems.filter((p) => p.severity === 'warning').map((p) => `${location(p)}: ${p.message}`),
        ]
      : []
  return failureSentence([...errors, ...warnings], (n) => `${plural(n, 'problem')} (fail-on: ${failOn})`)
}

/** A plan-only run (a pull request, `mode: plan`) writes nothing: it counts what would be triggered, never "skipped". */
export function planHeadline(report: TriggerReport): string {
  const n = report.plan.releases.length
  return n === 0 ? 'nothing to trigger' : `plan: ${plural(n, 'release')} would be triggered`
}

export function headline(report: TriggerReport): string {
  const o = outputsOf(report)
  if (report.planOnly !== undefined) return report.plan.releases.length === 0 ? `nothing to trigger: ${report.planOnly}` : planHeadline(report)
  return `${o.triggered.length} triggered, ${o.skipped.length} skipped, ${o.failed.length} failed${report.dryRun ? ' (dry run)' : ''}`
}

function rangeText(r: Range): string {
  if (r.fullSync) return `full sync at \`${r.head.slice(0, 12)}\``
  return `\`${r.base === undefined ? '(empty tree)' : r.base.slice(0, 12)}..${r.head.slice(0, 12)}\``
}

/** Markdown for $GITHUB_STEP_SUMMARY. Cells are escaped: file names and messages come from users. */
export function summaryMarkdown(report: TriggerReport): string {
  const lines: string[] = [`## helmrelease-trigger: ${headline(report)}`]
  if (report.range !== undefined) lines.push('', `Range: ${rangeText(report.range)}`)
  for (const note of report.notes) lines.push('', `> ${cell(note)}`)
  if (report.planOnly !== undefined) lines.push('', `_${cell(report.planOnly)}_`)
  for (const { cluster, report: part } of clusterSections(report)) {
    if (cluster !== undefined) lines.push('', `### Cluster ${code(cluster)}`)
    lines.push(...underCluster(summaryBody(part), cluster))
  }
  lines.push(...quietLine(report))
  return `${lines.join('\n')}\n`
}

/** The clusters planned without work, in one line. */
export function quietLine(report: TriggerReport): string[] {
  const quiet = quietClusters(report)
  if (quiet.length === 0) return []
  return ['', `_Nothing to trigger in ${quiet.length === 1 ? 'cluster' : 'clusters'} ${quiet.map((c) => code(c)).join(', ')}._`]
}

function summaryBody(report: TriggerReport): string[] {
  const lines: string[] = []
  if (report.range !== undefined) lines.push('', ...planTable(report.plan), ...specTable(report.plan.releases))
  if (report.results.length > 0) lines.push('', ...resultTable(report))
  const deployed = deployedMarkdown(report.results, SUMMARY_DEPLOYED_BUDGET)
  if (deployed.length > 0) lines.push('', ...deployed)
  const predicted = predictedMarkdown(report.results, SUMMARY_DEPLOYED_BUDGET, 'the `diff` output has them')
  if (predicted.length > 0) lines.push('', ...predicted)
  const values = valueChanges(report.plan.sources)
  if (values.length > 0) lines.push('', ...values)
  const unapplied = report.sources.filter((s) => !s.applied)
  if (unapplied.length > 0) lines.push('', '### Sources that never reached the cluster', '', ...unapplied.map((s) => `- ❌ ${cell(s.message)}`))
  if (report.problems.length > 0) {
    lines.push(
      '',
      '### Manifest problems',
      '',
      ...report.problems.map((p) => `- ${p.severity === 'error' ? '❌' : p.severity === 'warning' ? '⚠️' : 'ℹ️'} ${code(location(p))} ${cell(p.message)}`),
    )
  }
  return lines
}

function planTable(plan: TriggerReport['plan']): string[] {
  const { sources } = plan
  if (sources.length === 0) {
    const own = plan.releases.some((r) => r.spec !== undefined || r.chart !== undefined)
    return ['### Plan', '', `No ConfigMap or Secret that triggers a release changed${own ? '; these releases changed themselves or their chart source:' : '.'}`]
  }
  return [
    '### Plan',
    '',
    '| Source | Change | Digest | File | Targets |',
    '| --- | --- | --- | --- | --- |',
    ...sources.map(
      (s) =>
        `| ${code(s.id)} | ${s.change}${s.encrypted ? ' (encrypted)' : ''} | ${digestCell(s.id, s.digest)} | ${code(`${s.origin.file}:${s.origin.line}`)} | ${s.targets.map((t) => code(releaseKey(t))).join(', ') || '—'} |`,
    ),
  ]
}

/**
 * Which keys each changed source changed: a ConfigMap's old → new values (leaves of a YAML value
 * by path), a Secret's key names only. Values come from the repository, shortened.
 */
export function valueChanges(sources: readonly PlannedSource[]): string[] {
  const rows = valueRows(sources).map(
    (v) =>
      `| ${code(v.source)} | ${v.path === undefined ? code(v.key) : `${code(v.key)} → ${code(v.path)}`} | ${v.change} | ${shown(v.before, code)} | ${shown(v.after, code)} |`,
  )
  if (rows.length === 0) return []
  return ['### Values changed', '', '| Source | Key | Change | Before | After |', '| --- | --- | --- | --- | --- |', ...rows]
}

/** A key's value as the report shows it: absent on that side, hidden (a Secret's, an encrypted one's) or the value. */
type ShownValue = { readonly absent: true } | { readonly hidden: true } | { readonly value: string }

interface ValueRow {
  readonly source: string
  readonly key: string
  readonly path: string | undefined
  readonly change: KeyChange['change']
  readonly before: ShownValue
  readonly after: ShownValue
}

/** The summary's and the CLI's one source of the value changes: Secret values are never shown. */
function valueRows(sources: readonly PlannedSource[]): ValueRow[] {
  return sources.flatMap((s) =>
    (s.keyChanges ?? []).map((k) => {
      const side = (value: string | undefined, absent: boolean): ShownValue =>
        absent ? { absent: true } : s.kind === 'Secret' || s.encrypted ? { hidden: true } : value === undefined ? { absent: true } : { value }
      return {
        source: s.id,
        key: k.key,
        path: k.path,
        change: k.change,
        before: side(k.before, k.change === 'added'),
        after: side(k.after, k.change === 'removed'),
      }
    }),
  )
}

function shown(v: ShownValue, format: (value: string) => string): string {
  return 'value' in v ? format(v.value) : 'hidden' in v ? '(hidden)' : '—'
}

/**
 * Releases whose own spec or chart source changed: helm-controller upgrades them on the new
 * generation or artifact; the run waits for them.
 */
function specTable(releases: readonly PlannedRelease[]): string[] {
  const rows = releases.flatMap((r) => [
    ...(r.spec === undefined ? [] : [`| ${code(releaseKey(r))} | spec ${r.spec.change} | ${fieldList(r.spec.fields)} | ${code(at(r.spec.origin))} |`]),
    ...(r.chart === undefined
      ? []
      : [`| ${code(releaseKey(r))} | chart ${code(chartSourceId(r.chart))} | ${fieldList(r.chart.fields)} | ${code(at(r.chart.origin))} |`]),
  ])
  if (rows.length === 0) return []
  return ['', '| HelmRelease | Change | Fields | File |', '| --- | --- | --- | --- |', ...rows]
}

/** Changed fields as code spans, comma-separated: the summary's, the check's and the pull request's one format. */
export function fieldList(fields: readonly string[]): string {
  return fields.map((f) => code(f)).join(', ')
}

/** A digest cell: a ConfigMap's first 12 hex characters; for a Secret only that it changed. */
function digestCell(id: SourceId, digest: Digest | undefined): string {
  const shown = shownDigest(id, digest)
  if (shown !== undefined) return `\`${shown}\``
  return id.startsWith('Secret/') ? '(changed)' : '—'
}

/** A ConfigMap's digest in full for the JSON plan; a Secret's never (null). */
function shownFull(id: SourceId, digest: Digest | undefined): Digest | null {
  return digest === undefined || shownDigest(id, digest) === undefined ? null : digest
}

/** `file:line` */
export function at(origin: Origin): string {
  return `${origin.file}:${origin.line}`
}

/** A result row's first cell: the source (and where it was edited), or the release's own spec change. */
function sourceCell(r: ReleaseResult, s: ReleaseResult['sources'][number] | undefined): string {
  if (s !== undefined) return `${code(s.id)}${s.origin === undefined ? '' : ` (${code(at(s.origin))})`}`
  const changes = [
    ...(r.spec === undefined ? [] : [`spec ${fieldList(r.spec.fields)} (${code(at(r.spec.origin))})`]),
    ...(r.chart === undefined ? [] : [`chart ${code(r.chart.source)} ${fieldList(r.chart.fields)} (${code(at(r.chart.origin))})`]),
  ]
  // Recovered releases have no source: one row each all the same.
  return changes.length === 0 ? '—' : changes.join('; ')
}

/** The per-release table: the job summary, the check run and the pull-request comment all show this one. */
export function resultTable(report: TriggerReport): string[] {
  const rows = report.results.flatMap((r) =>
    (r.sources.length > 0 ? r.sources : [undefined]).map(
      (s) =>
        `| ${sourceCell(r, s)} | ${code(releaseKey(r))} | ${s === undefined ? '—' : digestCell(s.id, s.digest)} | ${ICON[r.status]} ${r.status}${r.reason && r.reason !== r.status ? ` (${cell(r.reason)})` : ''} | ${revision(r)} | ${formatDuration(r.durationMs)} | ${cell(r.message)} |`,
    ),
  )
  return ['### Releases', '', '| Source | Release | Digest | Result | Revision | Duration | Details |', '| --- | --- | --- | --- | --- | --- | --- |', ...rows]
}

function revision(r: ReleaseResult): string {
  if (r.revisionBefore === undefined && r.revisionAfter === undefined) return '—'
  if (r.revisionAfter === undefined || r.revisionAfter === r.revisionBefore) return String(r.revisionBefore ?? r.revisionAfter)
  return `${r.revisionBefore ?? '—'} → ${r.revisionAfter}`
}

/** Plain-text table for the CLI. */
export function textReport(report: TriggerReport): string {
  const range = report.range === undefined ? [] : [`range: ${rangeText(report.range).replaceAll('`', '')}`]
  const out: string[] = [`helmrelease-trigger: ${headline(report)}`, ...range, ...report.notes.map((n) => `note: ${n}`)]
  if (report.planOnly !== undefined) out.push(report.planOnly)
  for (const { cluster, report: part } of clusterSections(report)) {
    if (cluster !== undefined) out.push('', `== cluster ${oneLine(cluster)} ==`)
    out.push(...textBody(part))
  }
  const quiet = quietClusters(report)
  if (quiet.length > 0) out.push('', `nothing to trigger in ${quiet.length === 1 ? 'cluster' : 'clusters'} ${quiet.map((c) => oneLine(c)).join(', ')}`)
  return `${out.join('\n')}\n`
}

function textBody(report: TriggerReport): string[] {
  const out: string[] = []
  const header = ['SOURCE', 'CHANGE', 'DIGEST', 'FILE', 'TARGETS']
  const sourceRows = report.plan.sources.map((s) => [
    s.id,
    s.change,
    s.digest === undefined ? '-' : (shownDigest(s.id, s.digest) ?? '(changed)'),
    at(s.origin),
    s.targets.map(releaseKey).join(',') || '-',
  ])
  if (sourceRows.length > 0) out.push('', ...columns([header, ...sourceRows]))
  const values = valueRows(report.plan.sources).map((v) => [
    v.source,
    v.path === undefined ? v.key : `${v.key} → ${v.path}`,
    v.change,
    shown(v.before, oneLine),
    shown(v.after, oneLine),
  ])
  if (values.length > 0) out.push('', ...columns([['SOURCE', 'KEY', 'CHANGE', 'BEFORE', 'AFTER'], ...values]))
  for (const r of report.plan.releases) {
    if (r.spec !== undefined) out.push(`spec ${r.spec.change}: ${releaseKey(r)} (${r.spec.fields.join(', ')}) at ${at(r.spec.origin)}`)
    if (r.chart !== undefined) out.push(`chart changed: ${releaseKey(r)} (${chartSourceId(r.chart)} ${r.chart.fields.join(', ')}) at ${at(r.chart.origin)}`)
  }
  if (report.results.length > 0) {
    const rows = report.results.map((r) => [releaseKey(r), r.status, r.reason, revision(r), formatDuration(r.durationMs), r.message])
    out.push('', ...columns([['RELEASE', 'RESULT', 'REASON', 'REVISION', 'DURATION', 'DETAILS'], ...rows]))
  }
  const deployed = deployedText(report.results)
  if (deployed.length > 0) out.push('', ...deployed)
  const predicted = predictedText(report.results)
  if (predicted.length > 0) out.push('', ...predicted)
  for (const s of report.sources.filter((x) => !x.applied)) out.push(`error: ${s.message}`)
  for (const p of report.problems) out.push(`${p.severity}: ${location(p)}: ${p.message}`)
  return out
}

/** Trigger's (and plan's, recover's, a cluster part's) result for the action and the CLI. */
export function triggerResult(report: TriggerReport, failOn: FailOn): ModeResult {
  const outputs = outputsOf(report)
  return {
    headline: `helmrelease-trigger: ${headline(report)}`,
    log: [
      // Why nothing was written (a fork, a pull request), when the headline counts planned releases instead.
      ...(report.planOnly !== undefined && report.results.length > 0 ? [report.planOnly] : []),
      ...report.results.map((r) => `  ${inClusterText(r, releaseKey(r))}: ${r.status} (${r.reason}) ${r.message}`),
    ],
    outputs: {
      triggered: JSON.stringify(outputs.triggered),
      skipped: JSON.stringify(outputs.skipped),
      failed: JSON.stringify(outputs.failed),
      plan: JSON.stringify(outputs.plan),
      diff: diffOutput(report.results),
    },
    annotations: report.problems.map(problemAnnotation),
    summaryMarkdown: summaryMarkdown(report),
    text: textReport(report),
    json: outputs,
    failure: failureOf(report, failOn),
  }
}

/** An output holds 1 MB: past this the `diff` output keeps each release's headline only, then a count. */
const DIFF_OUTPUT_MAX = 512 * 1024

/** The `diff` output: every predicted release with its whole diff (headlines only, or a count, past DIFF_OUTPUT_MAX bytes). */
function diffOutput(results: readonly ReleaseResult[]): string {
  const entries = results.flatMap((r) =>
    r.predicted === undefined ? [] : [{ ...(r.cluster === undefined ? {} : { cluster: r.cluster }), namespace: r.namespace, name: r.name, ...r.predicted }],
  )
  const whole = JSON.stringify(entries)
  if (Buffer.byteLength(whole) <= DIFF_OUTPUT_MAX) return whole
  const headlines = JSON.stringify(
    entries.map((e) =>
      'notPredicted' in e ? e : { cluster: e.cluster, namespace: e.namespace, name: e.name, chart: e.chart, headline: e.headline, truncated: true },
    ),
  )
  return Buffer.byteLength(headlines) <= DIFF_OUTPUT_MAX ? headlines : JSON.stringify([{ truncated: entries.length }])
}

/** A line about an entry, prefixed with its cluster when the repository holds several. */
export function inClusterText(entry: { readonly cluster?: string }, text: string): string {
  return entry.cluster === undefined ? text : `cluster ${oneLine(entry.cluster)}: ${text}`
}

/** A manifest problem on its file and line. */
export function problemAnnotation(p: FileProblem): Annotation {
  return {
    severity: p.severity,
    title: 'helmrelease-trigger',
    message: inClusterText(p, p.message),
    file: p.file,
    ...(p.line === undefined ? {} : { line: p.line }),
  }
}
