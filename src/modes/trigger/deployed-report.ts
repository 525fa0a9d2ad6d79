// The deployed diff as the job summary, the check run, the pull-request comment and the CLI show
// it: per upgraded release a headline, then each changed object and path. Everything in it came
// from the cluster's Helm storage (chart content): escaped as code, one line each, bounded.

import type { DeployedDiff } from '../../core/deployed-diff.ts'
import type { ObjectChange, PathChange } from '../../core/manifest-diff.ts'
import { releaseKey } from '../../core/model.ts'
import type { ReleaseResult } from '../../engine/result.ts'
import { cell, code } from '../../lib/text.ts'
import { oneLine } from '../../lib/untrusted.ts'

type Shown = ReleaseResult & { readonly deployed: DeployedDiff }

function withDiff(results: readonly ReleaseResult[]): Shown[] {
  return results.filter((r): r is Shown => r.deployed !== undefined)
}

/** Markdown: `### What Helm deployed`, a headline per release, then its objects' paths (at most `budget` characters of detail in all). */
export function deployedMarkdown(results: readonly ReleaseResult[], budget: number): string[] {
  const shown = withDiff(results)
  if (shown.length === 0) return []
  const lines = ['### What Helm deployed', '']
  // Every release keeps its headline; details fill what is left, in the order given.
  let left = budget
  for (const r of shown) {
    const d = r.deployed
    if ('unavailable' in d) {
      lines.push(`- ${code(releaseKey(r))}: not known: ${cell(d.unavailable)}`)
      continue
    }
    const headline = d.headline.length === 0 ? 'no object changed' : d.headline.map(cell).join('; ')
    const hidden = d.valuesHidden ? ' (values not shown: the release reads a Secret)' : ''
    lines.push(`- ${code(releaseKey(r))} revision ${d.from} → ${d.to}: ${headline}${hidden}`)
    const details = diffDetails(d)
    const used = details.reduce((n, l) => n + l.length + 1, 0)
    if (used <= left) {
      lines.push(...details)
      left -= used
    } else if (details.length > 0) lines.push(`  - ${details.length} more lines: the job summary and the \`deployed\` output have them`)
  }
  return lines
}

/** The CLI's lines: `deployed ns/name 3 → 4: headline` and each path. */
export function deployedText(results: readonly ReleaseResult[]): string[] {
  return withDiff(results).flatMap((r) => {
    const d = r.deployed
    if ('unavailable' in d) return [`deployed ${releaseKey(r)}: not known: ${oneLine(d.unavailable)}`]
    const paths = diffText(d)
    return [`deployed ${releaseKey(r)} revision ${d.from} → ${d.to}: ${d.headline.map((h) => oneLine(h)).join('; ') || 'no object changed'}`, ...paths]
  })
}

/** The shared body of a deployed or predicted diff: objects, hooks, values, the folded label count. */
export interface DiffBody {
  readonly objects: readonly ObjectChange[]
  readonly hooks: readonly ObjectChange[]
  readonly values: readonly PathChange[]
  readonly valuesHidden: boolean
  readonly folded: number
}

/** Markdown lines of a diff's details, indented under its release's headline. */
export function diffDetails(d: DiffBody): string[] {
  return [
    ...d.objects.flatMap((o) => objectLines(o, '')),
    ...d.hooks.flatMap((o) => objectLines(o, 'hook ')),
    ...(d.values.length === 0
      ? []
      : [`  - values${d.valuesHidden ? ' (read from a Secret: paths only)' : ''}`, ...d.values.map((p) => `    - ${pathText(p)}`)]),
    ...(d.folded === 0 ? [] : [`  - ${d.folded} chart label ${d.folded === 1 ? 'change' : 'changes'} (helm.sh/chart, app.kubernetes.io/version) folded`]),
  ]
}

/** The CLI's lines of a diff's objects and hooks, each path under its object. */
export function diffText(d: Pick<DiffBody, 'objects' | 'hooks'>): string[] {
  return [...d.objects, ...d.hooks].flatMap((o) => [
    `  ${o.change} ${oneLine(o.object)}`,
    ...o.paths.map((p) => `    ${p.change} ${oneLine(p.path)}${valueText(p, oneLine)}`),
  ])
}

export function objectLines(o: ObjectChange, prefix: string): string[] {
  return [`  - ${prefix}${o.change} ${code(o.object)}`, ...o.paths.map((p) => `    - ${pathText(p)}`)]
}

function pathText(p: PathChange): string {
  return `${p.change} ${code(p.path)}${valueText(p, code)}`
}

function valueText(p: PathChange, format: (text: string) => string): string {
  if (p.lines !== undefined) return `: ${p.lines.map(format).join(' ')}`
  if (p.before === undefined && p.after === undefined) return ''
  return `: ${p.before === undefined ? '—' : format(p.before)} → ${p.after === undefined ? '—' : format(p.after)}`
}
