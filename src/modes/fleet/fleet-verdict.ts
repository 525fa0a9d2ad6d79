// The whole fleet as GitHub shows it: one check run and one sticky pull-request comment for
// every cluster of the commit, rendered from the same FleetReport as the job summary.

import { releaseKey } from '../../core/model.ts'
import type { CheckAnnotation, CheckConclusion, Verdict } from '../../github/reporter.ts'
import { hasWork } from './fleet-plan.ts'
import { fleetFailure, fleetHeadline, fleetTable, type FleetReport } from './fleet-summary.ts'

const ICON: Readonly<Record<'success' | 'failure' | 'neutral', string>> = { success: '✅', failure: '❌', neutral: '📝' }
/** GitHub's cap for a check's summary and a comment is 65,535; keep room for the rest. */
const TABLE_BUDGET = 50_000
const MAX_ANNOTATIONS = 500

export function fleetVerdict(report: FleetReport, runUrl: string | undefined): Verdict {
  const conclusion: 'success' | 'failure' | 'neutral' =
    fleetFailure(report) !== undefined ? 'failure' : report.plan.clusters.some(hasWork) ? 'success' : 'neutral'
  const title = fleetHeadline(report).replace(/^fleet: /, '')
  const run = runUrl === undefined ? [] : ['', `[Workflow run](${runUrl})`]
  const table = fit(fleetTable(report), TABLE_BUDGET)
  const summary = `${[...table, ...run].join('\n')}\n`
  const comment = `${[`### ${ICON[conclusion]} helmrelease-trigger fleet: ${title}`, '', `Commit \`${report.plan.range.head.slice(0, 12)}\``, '', ...table, ...run].join('\n')}\n`
  return { conclusion: conclusion satisfies CheckConclusion, title, summary, text: '', annotations: annotationsOf(report), comment }
}

/** Each changed source once, on its line, naming the clusters and releases it triggers there. */
function annotationsOf(report: FleetReport): CheckAnnotation[] {
  const at = new Map<string, { path: string; line: number; title: string; targets: string[] }>()
  for (const cluster of report.plan.clusters) {
    for (const s of cluster.plan.sources.filter((x) => x.change !== 'deleted')) {
      const key = `${s.origin.file}:${s.origin.line}`
      const entry = at.get(key) ?? { path: s.origin.file, line: s.origin.line, title: `${s.id} ${s.change}`, targets: [] }
      entry.targets.push(...s.targets.map((t) => `${cluster.name}: ${releaseKey(t)}`))
      at.set(key, entry)
    }
  }
  return [...at.values()]
    .map((e): CheckAnnotation => ({
      path: e.path,
      startLine: e.line,
      level: 'notice',
      title: e.title,
      message: e.targets.length === 0 ? 'triggers no HelmRelease' : `triggers ${e.targets.join(', ')}`,
    }))
    .slice(0, MAX_ANNOTATIONS)
}

function fit(lines: readonly string[], budget: number): string[] {
  const out: string[] = []
  let used = 0
  for (const [i, line] of lines.entries()) {
    if (used + line.length + 1 > budget) {
      out.push('', `…and ${lines.length - i} more rows: see the job summary.`)
      break
    }
    out.push(line)
    used += line.length + 1
  }
  return out
}
