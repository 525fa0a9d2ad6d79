// The verdict GitHub shows for a trigger run: conclusion, title, the job summary's own table,
// annotations on the changed lines, the plan on pull requests, and the superseded case.

import { describe, expect, it } from 'vitest'
import { SkipReason } from '../../../../src/modes/trigger/action.ts'
import { resultTable, summaryMarkdown } from '../../../../src/modes/trigger/report.ts'
import { errorVerdict, triggerVerdict, verdictTitle } from '../../../../src/modes/trigger/verdict.ts'
import { Status } from '../../../../src/engine/result.ts'
import { render, tableUnder } from '../../../../test/support/markdown.ts'
import { awkwardReport, chartChange, plannedSource, releaseResult, triggerReport } from '../../../../test/support/reports.ts'

const RUN = 'https://github.example/acme/fleet/actions/runs/4242'
const CM = 'ConfigMap/apps/web-values' as const

describe('triggerVerdict', () => {
  it('titles the counts, fails on a failed upgrade, and shows the job summary table', () => {
    const report = awkwardReport()
    const v = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
    expect(v.title).toBe('3 upgraded, 1 failed')
    expect(v.conclusion).toBe('failure')
    const table = resultTable(report).join('\n')
    expect(v.summary).toContain(table)
    expect(summaryMarkdown(report)).toContain(table)
    expect(v.comment).toContain(table)
    expect(v.comment).toContain(`[Workflow run](${RUN})`)
    expect(v.summary).toContain(`[Workflow run](${RUN})`)
  })

  it('shows which keys changed: values for ConfigMaps, names only for Secrets', () => {
    const report = awkwardReport()
    const v = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
    // As a GFM renderer shows them.
    const rows = [
      ['ConfigMap/apps/web-values', 'values.yaml → image.tag', 'modified', '"1.0"', '"1.1"'],
      ['Secret/apps/db', 'password', 'modified', '(hidden)', '(hidden)'],
    ]
    for (const row of rows) {
      expect(tableUnder(v.summary, 'Values changed')).toContainEqual(row)
      expect(tableUnder(v.comment, 'Values changed')).toContainEqual(row)
      expect(tableUnder(summaryMarkdown(report), 'Values changed')).toContainEqual(row)
    }
  })

  it('annotates the file and line of each changed source, the same on every run', () => {
    const v = triggerVerdict(awkwardReport(), { failOn: 'error', runUrl: RUN })
    expect(v.annotations).toEqual([
      {
        path: 'clusters/prod/apps/web|values.yaml',
        startLine: 3,
        level: 'notice',
        title: `${CM} modified`,
        message: 'triggers apps/web, apps/api, apps/worker\nchanged: values.yaml → image.tag, values.yaml → ingress.host',
      },
      { path: 'clusters/prod/apps/`odd`<name>.yaml', startLine: 12, level: 'notice', title: 'ConfigMap/apps/a|b`c<d> modified', message: 'triggers apps/cron' },
      {
        path: 'clusters/prod/apps/db.yaml',
        startLine: 1,
        level: 'notice',
        title: 'Secret/apps/db modified',
        message: 'triggers no HelmRelease\nchanged: password',
      },
    ])
    expect(triggerVerdict(awkwardReport(), { failOn: 'error', runUrl: undefined }).annotations).toEqual(v.annotations)
  })

  it('annotates a HelmRelease whose spec changed at its document, beside the sources', () => {
    const base = triggerReport([plannedSource(CM, 'apps/web/values.yaml', 2, ['web'])], [])
    const spec = { change: 'modified' as const, origin: { file: 'apps/db/release.yaml', line: 1 }, fields: ['spec.chart.spec.version'], expect: [] }
    const report = { ...base, plan: { ...base.plan, releases: [...base.plan.releases, { namespace: 'apps', name: 'db', sources: [], spec }] } }
    expect(triggerVerdict(report, { failOn: 'error', runUrl: RUN }).annotations).toEqual([
      expect.objectContaining({ path: 'apps/web/values.yaml', startLine: 2, title: `${CM} modified` }),
      {
        path: 'apps/db/release.yaml',
        startLine: 1,
        level: 'notice',
        title: 'HelmRelease apps/db spec modified',
        message: 'spec.chart.spec.version changed: helm-controller upgrades it on the new generation; the run waits for it',
      },
    ])
  })

  it('says so when a newer commit superseded the run', () => {
    const report = triggerReport(
      [plannedSource(CM, 'apps/values.yaml', 1, ['web'])],
      [releaseResult('apps', 'web', CM, Status.Skipped, { reason: SkipReason.Superseded, message: 'a newer commit is live' })],
    )
    const v = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
    expect(v.title).toBe('1 superseded by a newer commit')
    expect(v.conclusion).toBe('neutral')
    expect(v.summary).toContain('A newer commit is already live for one release')
  })

  it('shows the plan on a pull request: which release each source would trigger, and why', () => {
    const report = triggerReport([plannedSource(CM, 'apps/values.yaml', 4, ['web', 'api'])], [], {
      planOnly: 'pull_request event: plan only (set allow-pull-requests: true to trigger from pull requests)',
      sources: [],
    })
    const v = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
    expect(v.title).toBe('plan: 2 releases would be triggered')
    expect(v.conclusion).toBe('neutral')
    expect(v.comment).toContain('### Plan')
    expect(tableUnder(v.comment, 'Plan')).toContainEqual(['apps/web', 'ConfigMap/apps/web-values', 'modified', 'reads it (valuesFrom)', 'apps/values.yaml:4'])
    expect(v.text).toContain('### Plan')
  })

  it('shows on a pull request the releases whose own spec or chart source changed, and notes the chart line once per source', () => {
    const chart = chartChange('2.0.0', { name: 'charts', origin: { file: 'apps/charts.yaml', line: 9 } })
    const spec = { change: 'modified' as const, origin: { file: 'apps/db.yaml', line: 12 }, fields: ['spec.values.replicas'], expect: [] }
    const base = triggerReport([], [], { planOnly: 'pull_request event: plan only', sources: [] })
    const report = {
      ...base,
      plan: {
        ...base.plan,
        releases: [
          { namespace: 'apps', name: 'api', sources: [], chart },
          { namespace: 'apps', name: 'db', sources: [], spec },
          { namespace: 'apps', name: 'web', sources: [], chart },
        ],
      },
    }
    const v = triggerVerdict(report, { failOn: 'error', runUrl: RUN })
    expect(tableUnder(v.comment, 'Plan')).toEqual([
      ['apps/api', 'OCIRepository/apps/charts', 'modified', 'its chart (chartRef): spec.ref.tag', 'apps/charts.yaml:9'],
      ['apps/db', 'HelmRelease/apps/db', 'modified', 'its spec: spec.values.replicas', 'apps/db.yaml:12'],
      ['apps/web', 'OCIRepository/apps/charts', 'modified', 'its chart (chartRef): spec.ref.tag', 'apps/charts.yaml:9'],
    ])
    expect(v.annotations.filter((a) => a.path === 'apps/charts.yaml')).toEqual([
      {
        path: 'apps/charts.yaml',
        startLine: 9,
        level: 'notice',
        title: 'OCIRepository/apps/charts modified',
        message: 'spec.ref.tag changed: the chart of apps/api, apps/web; helm-controller upgrades on the new artifact; the run waits for it',
      },
    ])
  })

  it('is a success with nothing to trigger, and a failure when the run could not start', () => {
    const nothing = triggerReport([], [], { planOnly: 'no ConfigMap or Secret that triggers a release changed', sources: [] })
    expect(verdictTitle(nothing)).toBe('nothing to trigger')
    expect(triggerVerdict(nothing, { failOn: 'error', runUrl: RUN }).conclusion).toBe('success')
    const e = errorVerdict('no cluster: set kubeconfig', RUN)
    expect(e).toMatchObject({ conclusion: 'failure', title: 'failed before any release was triggered' })
    expect(render(e.comment).lines).toContain('no cluster: set kubeconfig')
  })

  it('keeps a table of thousands of releases within what GitHub accepts', () => {
    const results = Array.from({ length: 3000 }, (_, i) => releaseResult('apps', `release-${i}`, CM, Status.Upgraded, { message: 'x'.repeat(100) }))
    const v = triggerVerdict(triggerReport([plannedSource(CM, 'apps/values.yaml', 1, ['web'])], results), { failOn: 'error', runUrl: RUN })
    expect(v.summary.length).toBeLessThan(65_535)
    expect(v.comment.length).toBeLessThan(65_536)
    expect(v.summary).toMatch(/…and \d+ more rows: the job summary has them all\./)
  })
})
