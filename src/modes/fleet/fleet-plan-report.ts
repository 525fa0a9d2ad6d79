// What the fleet plan tells before anything runs: per cluster, the releases the commit changes
// there, and the matrices that feed the workflow's jobs (fleet.yml reads these very outputs).

import { releaseKey } from '../../core/model.ts'
import { cell, columns, location } from '../../lib/text.ts'
import type { FileProblem } from '../../core/model.ts'
import type { FailOn } from '../../settings.ts'
import type { ModeResult } from '../mode.ts'
import { problemAnnotation } from '../trigger/report.ts'
import { hasWork, matrixOf, releasesByCluster, type FleetPlan } from './fleet-plan.ts'

/** The action's outputs of a fleet plan, by output name; values are JSON (or plain) strings. */
export function fleetPlanOutputs(plan: FleetPlan): Record<string, string> {
  const waves = Object.fromEntries(Array.from({ length: plan.waves }, (_, i) => [waveOutput(i + 1), JSON.stringify(matrixOf(plan, i + 1))]))
  return {
    matrix: JSON.stringify(matrixOf(plan)),
    'cluster-releases': JSON.stringify(releasesByCluster(plan)),
    'wave-count': String(plan.waves),
    ...waves,
  }
}

/** `wave-1`, `wave-2`, …: the output holding that wave's matrix. */
export function waveOutput(wave: number): string {
  return `wave-${wave}`
}

function planRows(plan: FleetPlan): string[][] {
  return plan.clusters.flatMap((c) =>
    c.plan.releases.length === 0
      ? [[c.name, String(c.wave), c.root, '-', '-']]
      : c.plan.releases.map((r) => [c.name, String(c.wave), c.root, releaseKey(r), r.sources.map((s) => s.id).join(',')]),
  )
}

export function fleetPlanHeadline(plan: FleetPlan): string {
  const withWork = plan.clusters.filter(hasWork)
  const releases = withWork.reduce((n, c) => n + c.plan.releases.length, 0)
  return `fleet plan: ${withWork.length} of ${plan.clusters.length} clusters with work, ${releases} release${releases === 1 ? '' : 's'} in all${withWork.length > 0 ? ` (${withWork.map((c) => c.name).join(', ')})` : ''}`
}

export function fleetPlanText(plan: FleetPlan): string {
  const problems = plan.clusters.flatMap((c) => c.plan.problems.map((p) => `${p.severity}: ${c.name}: ${location(p)}: ${p.message}`))
  return `helmrelease-trigger ${fleetPlanHeadline(plan)}\n\n${columns([['CLUSTER', 'WAVE', 'ROOT', 'RELEASE', 'SOURCES'], ...planRows(plan)]).join('\n')}\n${problems.map((p) => `${p}\n`).join('')}`
}

export function fleetPlanMarkdown(plan: FleetPlan): string {
  const lines = [
    `## helmrelease-trigger ${cell(fleetPlanHeadline(plan))}`,
    '',
    `Commit \`${plan.range.head.slice(0, 12)}\`, planned once; each cluster's job executes its part of this plan.`,
    '',
    '| Cluster | Wave | Root | Release | Sources |',
    '| --- | --- | --- | --- | --- |',
    ...planRows(plan).map(
      ([name = '', wave = '', root = '', release = '', sources = '']) =>
        `| \`${cell(name)}\` | ${wave} | \`${cell(root)}\` | ${release === '-' ? '—' : `\`${cell(release)}\``} | ${cell(sources === '-' ? '—' : sources)} |`,
    ),
  ]
  return `${lines.join('\n')}\n`
}

/** The fleet plan's result for the action and the CLI; `plan-file` is an output when the plan was saved. */
export function fleetPlanResult(plan: FleetPlan, options: { readonly failOn: FailOn; readonly planFile: string | undefined }): ModeResult {
  // A file shared by several clusters' trees is one problem, not one per cluster.
  const seen = new Set<string>()
  const problems = plan.clusters.flatMap((c) => c.plan.problems).filter((p) => !seen.has(problemKey(p)) && seen.add(problemKey(p)))
  const failing = problems.filter((p) => p.severity === 'error' || (options.failOn === 'warning' && p.severity === 'warning'))
  const outputs = fleetPlanOutputs(plan)
  return {
    headline: `helmrelease-trigger ${fleetPlanHeadline(plan)}`,
    log: [],
    outputs: { ...outputs, ...(options.planFile === undefined ? {} : { 'plan-file': options.planFile }) },
    annotations: problems.map(problemAnnotation),
    summaryMarkdown: fleetPlanMarkdown(plan),
    text: fleetPlanText(plan),
    json: outputs,
    failure:
      options.failOn !== 'never' && failing.length > 0
        ? `${failing.length} manifest problem${failing.length === 1 ? '' : 's'} (fail-on: ${options.failOn}); see the annotations.`
        : undefined,
  }
}

function problemKey(p: FileProblem): string {
  return `${p.file}:${p.line ?? ''}:${p.message}`
}
