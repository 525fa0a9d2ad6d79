// The predicted diff within a comment's room: every release keeps its headline however many there
// are, details fill by risk (a deletion before a plain change), and the rest points to the job
// summary and the diff output.

import { describe, expect, it } from 'vitest'
import type { PredictedDiff } from '../../../../src/core/predicted-diff.ts'
import { Reason, Status, type ReleaseResult } from '../../../../src/engine/result.ts'
import { predictedMarkdown, predictedText } from '../../../../src/modes/trigger/predicted-report.ts'

function result(name: string, predicted: PredictedDiff): ReleaseResult {
  return {
    namespace: 'apps',
    name,
    sources: [],
    status: Status.Planned,
    reason: Reason.PlanOnly,
    message: 'plan only',
    durationMs: 0,
    severity: 'none',
    predicted,
  }
}

function changed(paths: number, headline: string[]): PredictedDiff {
  return {
    chart: 'web@1.0.0',
    headline,
    objects: [
      {
        object: 'ConfigMap apps/web',
        kind: 'ConfigMap',
        change: 'changed',
        paths: Array.from({ length: paths }, (_, i) => ({ path: `data.k${i}`, change: 'changed' as const, before: 'a', after: 'b' })),
      },
    ],
    hooks: [],
    crds: [],
    values: [],
    valuesHidden: false,
    folded: 0,
    nondeterministic: [],
    notes: [],
  }
}

describe('predictedMarkdown', () => {
  it('keeps every release’s headline and fills details riskiest first within the budget', () => {
    const results = [
      ...Array.from({ length: 30 }, (_, i) => result(`plain-${String(i).padStart(2, '0')}`, changed(20, ['changes ConfigMap apps/web']))),
      result('risky', changed(20, ['deletes Service apps/web'])),
      result('unknown', { notPredicted: 'its chart comes from the OCIRepository' }),
    ]
    const lines = predictedMarkdown(results, 2_000, 'the job summary has them')
    const text = lines.join('\n')
    for (const r of results) expect(text).toContain(`<code>apps/${r.name}</code>`)
    const risky = lines.findIndex((l) => l.includes('apps/risky'))
    expect(lines[risky + 1]).toBe('  - changed <code>ConfigMap apps/web</code>')
    expect(text).toContain('  - 21 more lines: the job summary has them')
    expect(text).toContain('not predicted: its chart comes from the OCIRepository')
    expect(text.length).toBeLessThan(2_000 + 32 * 200)
  })

  it('prints one CLI line per release and its paths', () => {
    expect(predictedText([result('web', changed(1, ['changes ConfigMap apps/web']))])).toEqual([
      'predicted apps/web web@1.0.0: changes ConfigMap apps/web',
      '  changed ConfigMap apps/web',
      '    changed data.k0: a → b',
    ])
  })
})
