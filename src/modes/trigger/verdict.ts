// A trigger run as GitHub shows it: the check run's conclusion, title, table and annotations,
// and the sticky pull-request comment. Rendered from the one TriggerReport, with the job
// summary's own release table, so every place says the same.

import { chartSourceId, releaseKey, type ChartChange } from '../../core/model.ts'
import { FAILED, Status, type TriggerReport } from '../../engine/result.ts'
import type { CheckAnnotation, CheckConclusion, Verdict } from '../../github/reporter.ts'
import { cell, code, location } from '../../lib/text.ts'
import type { FailOn } from '../../settings.ts'
import { SkipReason } from './action.ts'
import { clusterSections, underCluster } from './cluster-sections.ts'
import { deployedMarkdown } from './deployed-report.ts'
import { predictedMarkdown } from './predicted-report.ts'
import { failureOf, fieldList, inClusterText, planHeadline, quietLine, resultTable, valueChanges } from './report.ts'

export interface VerdictContext {
  readonly failOn: FailOn
  readonly runUrl: string | undefined
}

/** Room for the table in a check's summary or a comment (GitHub: 65,535), leaving space for the rest. */
const TABLE_BUDGET = 40_000
const VALUES_BUDGET = 15_000
/** The deployed diff's details: every release keeps its headline, paths fill this much. */
const DEPLOYED_BUDGET = 6_000
/** The predicted diff's details in a comment or check: every release keeps its headline, the riskiest details fill this much. */
const PREDICTED_BUDGET = 20_000

export function triggerVerdict(report: TriggerReport, context: VerdictContext): Verdict {
  const title = verdictTitle(report)
  const conclusion = conclusionOf(report, context.failOn)
  const run = context.runUrl === undefined ? '' : `[Workflow run](${context.runUrl})`
  const superseded = report.results.filter((r) => r.reason === SkipReason.Superseded)
  const notes = [
    ...(superseded.length === 0
      ? []
      : [
          `> A newer commit is already live for ${superseded.length === 1 ? 'one release' : `${superseded.length} releases`}: this run was superseded there, and the newer commit's run reports them.`,
        ]),
    ...report.notes.map((n) => `> ${cell(n)}`),
    ...(report.planOnly === undefined ? [] : [`_${cell(report.planOnly)}_`]),
  ]
  // Several clusters share the room a comment and a check have.
  const sections = clusterSections(report)
  const share = Math.max(1, sections.length)
  const body = [
    ...section(notes),
    ...sections.flatMap(({ cluster, report: part }) => [
      ...section(cluster === undefined ? [] : [`### Cluster ${code(cluster)}`]),
      ...underCluster(outcomeSection(part, share), cluster),
    ]),
    ...section(quietLine(report).slice(1)),
  ]
  const plan =
    report.planOnly === undefined
      ? []
      : sections.flatMap(({ cluster, report: part }) => [
          ...section(cluster === undefined ? [] : [`### Plan for cluster ${code(cluster)}`]),
          ...underCluster(planSection(part.plan, share), cluster),
        ])
  const summary = join([...body, ...section(run === '' ? [] : [run])])
  const comment = join([
    `### ${ICON[conclusion]} helmrelease-trigger: ${cell(title)}`,
    '',
    ...(report.range === undefined ? [] : [`Commit ${code(report.range.head.slice(0, 12))}${run === '' ? '' : ` · ${run}`}`, '']),
    ...body,
    ...section(plan),
  ])
  return { conclusion, title, summary, text: join(plan), annotations: annotationsOf(report), comment }
}

/** What happened to each release, the values changed, and the problems: the check's and the comment's body, for one cluster or all. */
function outcomeSection(report: TriggerReport, share: number): string[] {
  const releases = report.results.length === 0 ? [] : fit(resultTable(report), TABLE_BUDGET / share)
  const deployed = deployedMarkdown(report.results, DEPLOYED_BUDGET / share)
  const predicted = predictedMarkdown(report.results, PREDICTED_BUDGET / share, 'the job summary and the `diff` output have them')
  const values = fit(valueChanges(report.plan.sources), VALUES_BUDGET / share)
  const unapplied = report.sources.filter((s) => !s.applied).map((s) => `- ❌ ${cell(s.message)}`)
  const problems = report.problems.map(
    (p) => `- ${p.severity === 'error' ? '❌' : p.severity === 'warning' ? '⚠️' : 'ℹ️'} ${code(location(p))} ${cell(p.message)}`,
  )
  return [
    ...section(releases),
    ...section(deployed),
    ...section(predicted),
    ...section(values),
    ...section(unapplied.length === 0 ? [] : ['### Sources that never reached the cluster', '', ...unapplied]),
    ...section(problems.length === 0 ? [] : ['### Manifest problems', '', ...problems]),
  ]
}

/** A run that ended before it had a report: the check and the comment say why. */
export function errorVerdict(message: string, runUrl: string | undefined): Verdict {
  const run = runUrl === undefined ? '' : `\n\n[Workflow run](${runUrl})`
  const text = `${cell(message)}${run}\n`
  return {
    conclusion: 'failure',
    title: 'failed before any release was triggered',
    summary: text,
    text: '',
    annotations: [],
    comment: `### ❌ helmrelease-trigger: failed before any release was triggered\n\n${text}`,
  }
}

const ICON: Readonly<Record<CheckConclusion, string>> = {
  success: '✅',
  failure: '❌',
  neutral: '📝',
  cancelled: '⏹️',
  skipped: '⏭️',
  timed_out: '⏱️',
  action_required: '⚠️',
}

/** "3 upgraded, 1 failed": the non-zero counts, most telling first. */
export function verdictTitle(report: TriggerReport): string {
  if (report.planOnly !== undefined) return planHeadline(report)
  const count = (test: (r: TriggerReport['results'][number]) => boolean): number => report.results.filter(test).length
  const parts: [number, string][] = [
    [count((r) => r.status === Status.Upgraded), 'upgraded'],
    [count((r) => r.status === Status.Unchanged), 'unchanged'],
    [count((r) => r.status === Status.Triggered), 'triggered'],
    [count((r) => r.status === Status.DryRun), 'dry run'],
    [count((r) => r.status === Status.Failed), 'failed'],
    [count((r) => r.status === Status.TimedOut), 'timed out'],
    [count((r) => r.reason === SkipReason.Superseded), 'superseded by a newer commit'],
    [count((r) => r.status === Status.Skipped && r.reason !== SkipReason.Superseded), 'skipped'],
    [report.sources.filter((s) => !s.applied).length, `source${report.sources.filter((s) => !s.applied).length === 1 ? '' : 's'} never applied`],
    [report.problems.filter((p) => p.severity === 'error').length, 'manifest errors'],
  ]
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`)
  return said.length === 0 ? 'nothing to trigger' : said.join(', ')
}

function conclusionOf(report: TriggerReport, failOn: FailOn): CheckConclusion {
  if (failureOf(report, failOn) !== undefined) return 'failure'
  // A plan is neither good nor bad news; a commit that changes nothing is fine.
  if (report.planOnly !== undefined) return report.plan.releases.length === 0 ? 'success' : 'neutral'
  const acted = report.results.some((r) => r.status !== Status.Skipped && r.status !== Status.Planned)
  if (!acted) return report.results.some((r) => r.reason === SkipReason.Superseded) ? 'neutral' : 'success'
  return report.results.some((r) => FAILED.has(r.status)) ? 'failure' : 'success'
}

/** The plan of a pull request: which release each changed source would trigger, and why; and the releases whose own spec or chart source changed. */
function planSection(plan: TriggerReport['plan'], share = 1): string[] {
  const rows = [
    ...plan.sources.flatMap((s) =>
      s.targets.map((t) => `| ${code(releaseKey(t))} | ${code(s.id)} | ${s.change} | ${t.reasons.map(reasonText).join(', ')} | ${code(location(s.origin))} |`),
    ),
    ...plan.releases.flatMap((r) => [
      ...(r.spec === undefined
        ? []
        : [
            `| ${code(releaseKey(r))} | ${code(`HelmRelease/${releaseKey(r)}`)} | ${r.spec.change} | its spec: ${fieldList(r.spec.fields)} | ${code(location(r.spec.origin))} |`,
          ]),
      ...(r.chart === undefined
        ? []
        : [
            `| ${code(releaseKey(r))} | ${code(chartSourceId(r.chart))} | modified | its chart (chartRef): ${fieldList(r.chart.fields)} | ${code(location(r.chart.origin))} |`,
          ]),
    ]),
  ]
  if (rows.length === 0) return ['### Plan', '', 'No release would be triggered.']
  return fit(['### Plan', '', '| Release | Source | Change | Why | File |', '| --- | --- | --- | --- | --- |', ...rows], TABLE_BUDGET / share)
}

function reasonText(reason: string): string {
  return reason === 'annotation' ? 'named by the source' : reason === 'valuesFrom' ? 'reads it (valuesFrom)' : reason
}

/** One annotation per changed source on the line that defines it, and one per manifest problem: the same on every re-run. */
function annotationsOf(report: TriggerReport): CheckAnnotation[] {
  const sources = report.plan.sources
    .filter((s) => s.change !== 'deleted')
    .map((s): CheckAnnotation => ({
      path: s.origin.file,
      startLine: s.origin.line,
      level: 'notice',
      title: inClusterText(s, `${s.id} ${s.change}`),
      message: [
        s.targets.length === 0 ? 'triggers no HelmRelease' : `triggers ${s.targets.map(releaseKey).join(', ')}`,
        ...((s.keyChanges ?? []).length === 0
          ? []
          : [`changed: ${(s.keyChanges ?? []).map((k) => (k.path === undefined ? k.key : `${k.key} → ${k.path}`)).join(', ')}`]),
      ].join('\n'),
    }))
  const specs = report.plan.releases.flatMap((r): CheckAnnotation[] =>
    r.spec === undefined
      ? []
      : [
          {
            path: r.spec.origin.file,
            startLine: r.spec.origin.line,
            level: 'notice',
            title: inClusterText(r, `HelmRelease ${releaseKey(r)} spec ${r.spec.change}`),
            message: `${r.spec.fields.join(', ')} changed: helm-controller upgrades it on the new generation; the run waits for it`,
          },
        ],
  )
  // One per chart source, however many releases name it.
  const charts = new Map<string, { readonly chart: ChartChange; readonly releases: string[] }>()
  for (const r of report.plan.releases) {
    if (r.chart === undefined) continue
    const entry = charts.get(chartSourceId(r.chart)) ?? { chart: r.chart, releases: [] }
    entry.releases.push(releaseKey(r))
    charts.set(chartSourceId(r.chart), entry)
  }
  const chartNotes = [...charts.values()].map(({ chart, releases }): CheckAnnotation => ({
    path: chart.origin.file,
    startLine: chart.origin.line,
    level: 'notice',
    title: `${chartSourceId(chart)} modified`,
    message: `${chart.fields.join(', ')} changed: the chart of ${releases.join(', ')}; helm-controller upgrades on the new artifact; the run waits for it`,
  }))
  const problems = report.problems.map((p): CheckAnnotation => ({
    path: p.file,
    startLine: p.line ?? 1,
    level: p.severity === 'error' ? 'failure' : p.severity === 'warning' ? 'warning' : 'notice',
    title: 'helmrelease-trigger',
    message: inClusterText(p, p.message),
  }))
  return [...sources, ...specs, ...chartNotes, ...problems].slice(0, MAX_ANNOTATIONS)
}

/** Past this many, the job summary lists the rest: ten requests of 50 are enough for a check. */
const MAX_ANNOTATIONS = 500

/** Keeps a table's rows within `budget` characters, saying how many were left out. */
function fit(lines: readonly string[], budget: number): string[] {
  const out: string[] = []
  let used = 0
  for (const [i, line] of lines.entries()) {
    if (used + line.length + 1 > budget) {
      const left = lines.length - i
      out.push('', `…and ${left} more row${left === 1 ? '' : 's'}: the job summary has them all.`)
      break
    }
    out.push(line)
    used += line.length + 1
  }
  return out
}

function section(lines: readonly string[]): string[] {
  return lines.length === 0 ? [] : [...lines, '']
}

function join(lines: readonly string[]): string {
  return `${lines.join('\n').trimEnd()}\n`
}
