// The pre-merge diff as the job summary, the check run, the pull-request comment and the CLI show
// it: per planned release a headline (always, however many releases), then its objects and paths
// while the room lasts, the riskiest releases' details first. Everything in it came from the
// pull request's content and the charts: escaped as code, one line each, bounded.

import type { PredictedDiff } from '../../core/predicted-diff.ts'
import { releaseKey } from '../../core/model.ts'
import type { ReleaseResult } from '../../engine/result.ts'
import { cell, code, plural } from '../../lib/text.ts'
import { oneLine } from '../../lib/untrusted.ts'
import { diffDetails, diffText, objectLines } from './deployed-report.ts'

type Shown = ReleaseResult & { readonly predicted: PredictedDiff }
type Predicted = Exclude<PredictedDiff, { notPredicted: string }>

function withPrediction(results: readonly ReleaseResult[]): Shown[] {
  return results.filter((r): r is Shown => r.predicted !== undefined)
}

/** Markdown: `### What the upgrade will change`, a headline per release, then details within `budget` characters, riskiest first. */
export function predictedMarkdown(results: readonly ReleaseResult[], budget: number, overflow: string): string[] {
  const shown = withPrediction(results)
  if (shown.length === 0) return []
  const details = new Map(shown.map((r) => [r, 'notPredicted' in r.predicted ? [] : detailsOf(r.predicted)]))
  // Details fill by risk: deletions and immutable fields before RBAC, images and the rest.
  const fitted = new Set<Shown>()
  let left = budget
  for (const r of [...shown].sort((a, b) => risk(b.predicted) - risk(a.predicted))) {
    const used = (details.get(r) ?? []).reduce((n, l) => n + l.length + 1, 0)
    if (used <= left) {
      fitted.add(r)
      left -= used
    }
  }
  const lines = ['### What the upgrade will change', '']
  for (const r of shown) {
    const name = `${r.cluster === undefined ? '' : `${code(r.cluster)} `}${code(releaseKey(r))}`
    const d = r.predicted
    if ('notPredicted' in d) {
      lines.push(`- ${name}: not predicted: ${cell(d.notPredicted)}`)
      continue
    }
    const headline = d.headline.length === 0 ? 'no object changes' : d.headline.map(cell).join('; ')
    const hidden = d.valuesHidden ? ' (values not shown: the release reads a Secret)' : ''
    lines.push(`- ${name} ${code(d.chart)}: ${headline}${hidden}`)
    const own = details.get(r) ?? []
    if (fitted.has(r)) lines.push(...own)
    else if (own.length > 0) lines.push(`  - ${plural(own.length, 'more line')}: ${overflow}`)
  }
  return lines
}

function detailsOf(d: Predicted): string[] {
  return [
    ...d.notes.map((n) => `  - ℹ️ ${cell(n)}`),
    ...diffDetails(d),
    ...(d.crds.length === 0
      ? []
      : [
          `  - chart CRDs (crds/): applied by helm-controller's CRD policy (install and upgrade default Create: new ones only), not by the upgrade`,
          ...d.crds.flatMap((o) => objectLines(o, 'CRD ').map((l) => `  ${l}`)),
        ]),
    ...(d.nondeterministic.length === 0
      ? []
      : [`  - ${plural(d.nondeterministic.length, 'path')} differ between two renders of head (random or time-based values): not shown as changes`]),
  ]
}

function risk(d: PredictedDiff): number {
  if ('notPredicted' in d) return 0
  const weights: readonly (readonly [RegExp, number])[] = [
    [/^deletes /, 100],
    [/^changes immutable/, 100],
    [/^RBAC/, 10],
    [/^images/, 5],
    [/^replicas/, 5],
    [/^rolls out/, 5],
  ]
  return d.headline.reduce((sum, h) => sum + (weights.find(([re]) => re.test(h))?.[1] ?? 1), 0)
}

/** The CLI's lines: `predicted ns/name chart: headline` and each path. */
export function predictedText(results: readonly ReleaseResult[]): string[] {
  return withPrediction(results).flatMap((r) => {
    const d = r.predicted
    const name = `${r.cluster === undefined ? '' : `${oneLine(r.cluster)} `}${releaseKey(r)}`
    if ('notPredicted' in d) return [`predicted ${name}: not predicted: ${oneLine(d.notPredicted)}`]
    return [
      `predicted ${name} ${oneLine(d.chart)}: ${d.headline.map((h) => oneLine(h)).join('; ') || 'no object changes'}`,
      ...d.notes.map((n) => `  note: ${oneLine(n)}`),
      ...diffText(d),
      ...d.crds.flatMap((o) => [`  CRD ${o.change} ${oneLine(o.object)}`]),
      ...(d.nondeterministic.length === 0 ? [] : [`  ${d.nondeterministic.length} non-deterministic paths not shown`]),
    ]
  })
}
