// Bounds on what one file or one run can make us report: a pull request of one 1 MB file of
// duplicate keys gave 110,000 problems, annotations and a 6.6 MB summary. The first problems are
// kept (in order) and one more says how many were left out, with the worst severity among them,
// so fail-on decides the same.

import type { FileProblem, Severity } from './model.ts'

export const MAX_PROBLEMS_PER_FILE = 50
export const MAX_PROBLEMS_PER_RUN = 500

const RANK: Readonly<Record<Severity, number>> = { error: 0, warning: 1, notice: 2 }

/** The first `max` problems and, when there were more, one "…and N more" problem. */
export function capProblems(problems: readonly FileProblem[], max: number, scope: 'file' | 'run'): FileProblem[] {
  if (problems.length <= max) return [...problems]
  const kept = problems.slice(0, max)
  const dropped = problems.slice(max)
  const worst = dropped.reduce<Severity>((w, p) => (RANK[p.severity] < RANK[w] ? p.severity : w), 'notice')
  const files = new Set(dropped.map((p) => p.file)).size
  const where = scope === 'file' ? 'in this file' : `in ${files} file${files === 1 ? '' : 's'}`
  const first = dropped[0]
  const more: FileProblem = {
    severity: worst,
    file: first?.file ?? '',
    // At the first problem left out: where to start reading.
    ...(first?.line === undefined ? {} : { line: first.line }),
    message: `…and ${dropped.length} more problem${dropped.length === 1 ? '' : 's'} ${where} (the first ${max} are shown)`,
  }
  return [...kept, more]
}
