// Reporting consumes a TriggerReport: outputs, the fail-on verdict, the job summary, the CLI text.

import { describe, expect, it } from 'vitest'
import type { PlainDigest, FileProblem, PlannedSource, SourceId } from '../../../../src/core/model.ts'
import { failureOf, outputsOf, summaryMarkdown, textReport } from '../../../../src/modes/trigger/report.ts'
import { render, tableUnder } from '../../../../test/support/markdown.ts'
import { code } from '../../../../src/lib/text.ts'
import { Status, type ReleaseResult, type SourceResult, type TriggerReport, controllerReason } from '../../../../src/engine/result.ts'
import { chartChange } from '../../../../test/support/reports.ts'

const BASE_SHA = '1111111111111111111111111111111111111111'
const HEAD_SHA = '2222222222222222222222222222222222222222'
const digest = (c: string): PlainDigest => `sha256:${c.repeat(64)}`

const CM: SourceId = 'ConfigMap/apps/app-values'
const SECRET: SourceId = 'Secret/apps/app-secrets'

const SOURCES: readonly PlannedSource[] = [
  {
    kind: 'ConfigMap',
    namespace: 'apps',
    name: 'app-values',
    id: CM,
    change: 'modified',
    digest: digest('a'),
    previousDigest: digest('0'),
    encrypted: false,
    origin: { file: 'apps/app/values.yaml', line: 1 },
    targets: [{ namespace: 'apps', name: 'app', reasons: ['annotation'] }],
  },
  {
    kind: 'Secret',
    namespace: 'apps',
    name: 'app-secrets',
    id: SECRET,
    change: 'added',
    digest: digest('b'),
    encrypted: true,
    origin: { file: 'apps/app/secrets.yaml', line: 4 },
    targets: [
      { namespace: 'apps', name: 'app', reasons: ['annotation', 'valuesFrom'] },
      { namespace: 'apps', name: 'worker', reasons: ['valuesFrom'] },
    ],
  },
]

function result(name: string, status: Status, extra: Partial<ReleaseResult> = {}): ReleaseResult {
  return {
    namespace: 'apps',
    name,
    sources: [{ id: CM, digest: digest('a') }],
    status,
    reason: controllerReason(status),
    message: `${name} is ${status}`,
    durationMs: 1_500,
    severity: 'none',
    ...extra,
  }
}

function report(extra: Partial<TriggerReport> = {}): TriggerReport {
  return {
    range: { base: BASE_SHA, head: HEAD_SHA, fullSync: false, notes: [] },
    plan: {
      sources: SOURCES,
      releases: [
        {
          namespace: 'apps',
          name: 'app',
          sources: [
            { id: CM, digest: digest('a'), encrypted: false },
            { id: SECRET, digest: digest('b'), encrypted: true },
          ],
        },
        { namespace: 'apps', name: 'worker', sources: [{ id: SECRET, digest: digest('b'), encrypted: true }] },
      ],
      problems: [],
    },
    planOnly: undefined,
    dryRun: false,
    sources: [],
    results: [],
    notes: [],
    problems: [],
    ...extra,
  }
}

const problem = (severity: FileProblem['severity'], file: string, line: number | undefined, message: string): FileProblem => ({
  severity,
  file,
  ...(line === undefined ? {} : { line }),
  message,
})
const unapplied = (id: SourceId): SourceResult => ({
  id,
  applied: false,
  message: `${id} never reached the planned content within the timeout`,
  durationMs: 300_000,
})

describe('outputsOf', () => {
  it.each([
    [Status.Triggered, 'triggered'],
    [Status.Upgraded, 'triggered'],
    [Status.Unchanged, 'triggered'],
    [Status.DryRun, 'triggered'],
    [Status.Skipped, 'skipped'],
    [Status.Planned, 'skipped'],
    [Status.Failed, 'failed'],
    [Status.TimedOut, 'failed'],
  ] as const)('puts a %s release under %s only', (status, bucket) => {
    const o = outputsOf(report({ results: [result('app', status)] }))
    const names = { triggered: o.triggered.map((e) => e.name), skipped: o.skipped.map((e) => e.name), failed: o.failed.map((e) => e.name) }
    expect(names).toEqual({ triggered: [], skipped: [], failed: [], [bucket]: ['app'] })
  })

  it('writes each entry with its sources, token, reason, message and revisions, leaving absent fields out', () => {
    const o = outputsOf(
      report({
        results: [
          result('app', Status.Upgraded, {
            token: '2026-11-22T10:00:00.123000000Z',
            sources: [
              { id: CM, digest: digest('a') },
              { id: SECRET, digest: digest('b') },
            ],
            reason: 'UpgradeSucceeded',
            message: 'Helm upgrade succeeded',
            revisionBefore: 1,
            revisionAfter: 2,
          }),
          result('gone', Status.Skipped, { reason: 'NotFound', message: 'HelmRelease apps/gone does not exist in the cluster', severity: 'warning' }),
        ],
      }),
    )
    expect(o.triggered).toEqual([
      {
        namespace: 'apps',
        name: 'app',
        status: 'Upgraded',
        token: '2026-11-22T10:00:00.123000000Z',
        sources: [CM, SECRET],
        reason: 'UpgradeSucceeded',
        message: 'Helm upgrade succeeded',
        revisionBefore: 1,
        revisionAfter: 2,
      },
    ])
    expect(o.skipped).toEqual([
      { namespace: 'apps', name: 'gone', status: 'Skipped', sources: [CM], reason: 'NotFound', message: 'HelmRelease apps/gone does not exist in the cluster' },
    ])
    expect(Object.keys(o.skipped[0] ?? {})).not.toContain('token')
    expect(Object.keys(o.skipped[0] ?? {})).not.toContain('revisionBefore')
    expect(o.failed).toEqual([])
  })

  it('describes the plan as JSON: range, every source with its targets, every release, the problems', () => {
    const problems = [problem('error', 'apps/broken.yaml', 7, 'data.port must be a string')]
    const o = outputsOf(report({ problems }))
    expect(JSON.parse(JSON.stringify(o.plan))).toEqual({
      base: BASE_SHA,
      head: HEAD_SHA,
      fullSync: false,
      sources: [
        {
          id: CM,
          change: 'modified',
          digest: digest('a'),
          previousDigest: digest('0'),
          encrypted: false,
          file: 'apps/app/values.yaml',
          line: 1,
          targets: [{ namespace: 'apps', name: 'app', reasons: ['annotation'] }],
        },
        {
          id: SECRET,
          change: 'added',
          // A Secret's digest is never published, even one the report was handed.
          digest: null,
          previousDigest: null,
          encrypted: true,
          file: 'apps/app/secrets.yaml',
          line: 4,
          targets: [
            { namespace: 'apps', name: 'app', reasons: ['annotation', 'valuesFrom'] },
            { namespace: 'apps', name: 'worker', reasons: ['valuesFrom'] },
          ],
        },
      ],
      releases: [
        {
          namespace: 'apps',
          name: 'app',
          sources: [
            { id: CM, digest: digest('a') },
            { id: SECRET, digest: null },
          ],
        },
        { namespace: 'apps', name: 'worker', sources: [{ id: SECRET, digest: null }] },
      ],
      problems: [{ severity: 'error', file: 'apps/broken.yaml', line: 7, message: 'data.port must be a string' }],
    })
  })

  it('writes base and digest as null for a full sync and a deleted source', () => {
    const deleted: PlannedSource = {
      kind: 'ConfigMap',
      namespace: 'apps',
      name: 'old',
      id: 'ConfigMap/apps/old',
      change: 'deleted',
      previousDigest: digest('c'),
      encrypted: false,
      origin: { file: 'old.yaml', line: 1 },
      targets: [],
    }
    const plan = outputsOf(report({ range: { head: HEAD_SHA, fullSync: true, notes: [] }, plan: { sources: [deleted], releases: [], problems: [] } })).plan
    expect(plan).toMatchObject({
      base: null,
      head: HEAD_SHA,
      fullSync: true,
      sources: [{ id: 'ConfigMap/apps/old', change: 'deleted', digest: null, previousDigest: digest('c'), targets: [] }],
      releases: [],
    })
  })
})

describe('failureOf', () => {
  const failedResult = result('app', Status.Failed, { reason: controllerReason('UpgradeFailed'), severity: 'error' })
  const timedOut = result('slow', Status.TimedOut, { reason: 'TimedOut', severity: 'error' })
  const notFound = result('gone', Status.Skipped, { reason: 'NotFound', severity: 'warning' })
  const upgraded = result('ok', Status.Upgraded, { reason: 'UpgradeSucceeded' })

  const cases: readonly (readonly [string, Partial<TriggerReport>, { error?: string; warning?: string }])[] = [
    ['a clean run', { results: [upgraded] }, {}],
    [
      'a failed release',
      { results: [upgraded, failedResult] },
      { error: '1 problem (fail-on: error): apps/app: Failed (UpgradeFailed)', warning: '1 problem (fail-on: warning): apps/app: Failed (UpgradeFailed)' },
    ],
    [
      'a timed-out release',
      { results: [timedOut] },
      { error: '1 problem (fail-on: error): apps/slow: TimedOut (TimedOut)', warning: '1 problem (fail-on: warning): apps/slow: TimedOut (TimedOut)' },
    ],
    [
      'a source that never arrived',
      { sources: [unapplied(CM), { id: SECRET, applied: true, message: 'arrived', durationMs: 1 }] },
      { error: `1 problem (fail-on: error): ${CM} never reached the cluster`, warning: `1 problem (fail-on: warning): ${CM} never reached the cluster` },
    ],
    [
      'an error in a manifest',
      { problems: [problem('error', 'apps/bad.yaml', 3, 'not valid YAML')] },
      { error: '1 problem (fail-on: error): apps/bad.yaml:3: not valid YAML', warning: '1 problem (fail-on: warning): apps/bad.yaml:3: not valid YAML' },
    ],
    ['a missing release (warning)', { results: [notFound] }, { warning: '1 problem (fail-on: warning): apps/gone: NotFound' }],
    [
      'a manifest warning without a line',
      { problems: [problem('warning', 'apps/x.yaml', undefined, 'names no release')] },
      { warning: '1 problem (fail-on: warning): apps/x.yaml: names no release' },
    ],
    ['a notice only', { problems: [problem('notice', 'apps/x.yaml', 1, 'deleted source')] }, {}],
    [
      'errors and warnings together, errors first',
      { results: [notFound, failedResult], problems: [problem('warning', 'w.yaml', 2, 'odd'), problem('error', 'e.yaml', 9, 'bad')] },
      {
        error: '2 problems (fail-on: error): apps/app: Failed (UpgradeFailed); e.yaml:9: bad',
        warning: '4 problems (fail-on: warning): apps/app: Failed (UpgradeFailed); e.yaml:9: bad; apps/gone: NotFound; w.yaml:2: odd',
      },
    ],
  ]

  it.each(cases)('%s', (_, extra, expected) => {
    const r = report(extra)
    expect(failureOf(r, 'error')).toBe(expected.error)
    expect(failureOf(r, 'warning')).toBe(expected.warning)
    expect(failureOf(r, 'never')).toBeUndefined()
  })

  it('names the first five problems and counts the rest', () => {
    const results = Array.from({ length: 7 }, (_, i) => result(`r${i}`, Status.Failed, { reason: controllerReason('UpgradeFailed'), severity: 'error' }))
    expect(failureOf(report({ results }), 'error')).toBe(
      '7 problems (fail-on: error): apps/r0: Failed (UpgradeFailed); apps/r1: Failed (UpgradeFailed); apps/r2: Failed (UpgradeFailed); apps/r3: Failed (UpgradeFailed); apps/r4: Failed (UpgradeFailed) and 2 more',
    )
  })
})

/** The rows of the table under `### <title>` (header and separator excluded). */
function tableRows(markdown: string, title: string): string[] {
  const lines = markdown.split('\n')
  const start = lines.indexOf(`### ${title}`)
  if (start < 0) return []
  const table: string[] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    table.push(line)
  }
  return table.slice(2)
}

/** Cells of a GFM table row, split on unescaped pipes only. */
const cellsOf = (row: string): string[] =>
  row
    .split(/(?<!\\)\|/)
    .slice(1, -1)
    .map((c) => c.trim())

describe('summaryMarkdown', () => {
  const results = [
    result('app', Status.Upgraded, {
      sources: [
        { id: CM, digest: digest('a') },
        { id: SECRET, digest: digest('b') },
      ],
      reason: 'UpgradeSucceeded',
      message: 'Helm upgrade succeeded',
      revisionBefore: 1,
      revisionAfter: 2,
      durationMs: 42_000,
      token: 't',
    }),
    result('worker', Status.Failed, {
      sources: [{ id: SECRET, digest: digest('b') }],
      reason: controllerReason('UpgradeFailed'),
      message: 'Helm upgrade failed | exit 1\nline two <b>bold</b>',
      revisionBefore: 3,
      revisionAfter: 4,
      durationMs: 90_000,
      severity: 'error',
    }),
    result('same', Status.Unchanged, { reason: 'Unchanged', message: 'values unchanged', revisionBefore: 5, revisionAfter: 5, durationMs: 800 }),
    result('gone', Status.Skipped, { reason: 'NotFound', message: 'does not exist', durationMs: 0, severity: 'warning' }),
  ]
  const markdown = summaryMarkdown(
    report({
      results,
      notes: ['before was not in the clone; compared with the parent'],
      problems: [
        problem('error', 'apps/bad|name.yaml', 12, 'data.port must be a string | not 5432'),
        problem('warning', 'apps/x.yaml', undefined, 'names no release'),
      ],
      sources: [unapplied('ConfigMap/apps/late')],
    }),
  )

  it('opens with the counts of each bucket and the range', () => {
    const lines = markdown.split('\n')
    expect(lines[0]).toBe('## helmrelease-trigger: 2 triggered, 1 skipped, 1 failed')
    expect(lines).toContain('Range: `111111111111..222222222222`')
  })

  it('has one result row per source × release with the revision, result, duration and details', () => {
    // As rendered by a GFM renderer: the text a reader sees in each cell.
    expect(tableUnder(markdown, 'Releases')).toEqual([
      [CM, 'apps/app', 'a'.repeat(12), '✅ Upgraded (UpgradeSucceeded)', '1 → 2', '42s', 'Helm upgrade succeeded'],
      [SECRET, 'apps/app', '(changed)', '✅ Upgraded (UpgradeSucceeded)', '1 → 2', '42s', 'Helm upgrade succeeded'],
      [SECRET, 'apps/worker', '(changed)', '❌ Failed (UpgradeFailed)', '3 → 4', '1m30s', 'Helm upgrade failed | exit 1 line two <b>bold</b>'],
      [CM, 'apps/same', 'a'.repeat(12), '➖ Unchanged', '5', '800ms', 'values unchanged'],
      [CM, 'apps/gone', 'a'.repeat(12), '⏭️ Skipped (NotFound)', '—', '0ms', 'does not exist'],
    ])
    expect(render(markdown).markup.get('b')).toBeUndefined()
  })

  it('keeps every table row at its column count whatever the messages hold', () => {
    for (const row of tableRows(markdown, 'Releases')) expect(cellsOf(row)).toHaveLength(7)
    for (const row of tableRows(markdown, 'Plan')) expect(cellsOf(row)).toHaveLength(5)
    expect(markdown).not.toContain('failed | exit')
    expect(markdown).not.toMatch(/exit 1\n/)
  })

  it('lists the plan: one row per changed source with its change, digest, file and targets', () => {
    expect(tableUnder(markdown, 'Plan')).toEqual([
      [CM, 'modified', 'a'.repeat(12), 'apps/app/values.yaml:1', 'apps/app'],
      [SECRET, 'added (encrypted)', '(changed)', 'apps/app/secrets.yaml:4', 'apps/app, apps/worker'],
    ])
  })

  it('shows the notes, the sources that never arrived and the manifest problems with file:line', () => {
    const { lines } = render(markdown)
    expect(lines).toContain('before was not in the clone; compared with the parent')
    expect(lines).toContain('❌ ConfigMap/apps/late never reached the planned content within the timeout')
    expect(lines).toContain('❌ apps/bad|name.yaml:12 data.port must be a string | not 5432')
    expect(lines).toContain('⚠️ apps/x.yaml names no release')
    expect(markdown.endsWith('\n')).toBe(true)
  })

  it.each([
    ['a dry run', { dryRun: true, results: [result('app', Status.DryRun)] }, '## helmrelease-trigger: 1 triggered, 0 skipped, 0 failed (dry run)'],
    [
      'nothing changed',
      { planOnly: 'no ConfigMap or Secret that triggers a release changed', plan: { sources: [], releases: [], problems: [] } },
      '## helmrelease-trigger: nothing to trigger: no ConfigMap or Secret that triggers a release changed',
    ],
    [
      'a pull request plan',
      { planOnly: 'pull_request event: plan only', results: [result('app', Status.Planned, { reason: 'PlanOnly' })] },
      '## helmrelease-trigger: plan: 2 releases would be triggered',
    ],
  ] as const)('headline for %s', (_, extra, expected) => {
    expect(summaryMarkdown(report(extra)).split('\n')[0]).toBe(expected)
  })

  it('says why nothing was written and that no source changed', () => {
    const md = summaryMarkdown(
      report({ planOnly: 'no ConfigMap or Secret that triggers a release changed', plan: { sources: [], releases: [], problems: [] } }),
    )
    expect(md.split('\n')).toContain('_no ConfigMap or Secret that triggers a release changed_')
    expect(md.split('\n')).toContain('No ConfigMap or Secret that triggers a release changed.')
    expect(md).not.toContain('### Releases')
  })

  it.each([
    ['a full sync', { head: HEAD_SHA, fullSync: true, notes: [] }, 'Range: full sync at `222222222222`'],
    ['no base (empty tree)', { head: HEAD_SHA, fullSync: false, notes: [] }, 'Range: `(empty tree)..222222222222`'],
  ])('range line for %s', (_, range, expected) => {
    expect(summaryMarkdown(report({ range })).split('\n')).toContain(expected)
  })
})

describe('textReport', () => {
  it('prints the headline, range, notes, plan table, result table, unapplied sources and problems', () => {
    const text = textReport(
      report({
        notes: ['compared with the parent'],
        results: [
          result('app', Status.Upgraded, {
            reason: 'UpgradeSucceeded',
            message: 'Helm upgrade succeeded',
            revisionBefore: 1,
            revisionAfter: 2,
            durationMs: 42_000,
          }),
          result('worker', Status.TimedOut, {
            reason: 'TimedOut',
            message: 'helm-controller did not finish',
            revisionBefore: 3,
            durationMs: 300_000,
            severity: 'error',
          }),
        ],
        sources: [unapplied('ConfigMap/apps/late')],
        problems: [problem('error', 'apps/bad.yaml', 3, 'not valid YAML')],
      }),
    )
    expect(text.split('\n')).toEqual([
      'helmrelease-trigger: 1 triggered, 0 skipped, 1 failed',
      'range: 111111111111..222222222222',
      'note: compared with the parent',
      '',
      'SOURCE                     CHANGE    DIGEST        FILE                     TARGETS',
      `${CM}  modified  ${'a'.repeat(12)}  apps/app/values.yaml:1   apps/app`,
      `${SECRET}    added     (changed)     apps/app/secrets.yaml:4  apps/app,apps/worker`,
      '',
      'RELEASE      RESULT    REASON            REVISION  DURATION  DETAILS',
      'apps/app     Upgraded  UpgradeSucceeded  1 → 2     42s       Helm upgrade succeeded',
      'apps/worker  TimedOut  TimedOut          3         5m        helm-controller did not finish',
      'error: ConfigMap/apps/late never reached the planned content within the timeout',
      'error: apps/bad.yaml:3: not valid YAML',
      '',
    ])
  })

  it('prints the values each source changed, a Secret’s hidden, a value from the repository on one line', () => {
    const [cm, secret] = SOURCES
    if (cm === undefined || secret === undefined) throw new Error('SOURCES holds a ConfigMap and a Secret')
    const sources: PlannedSource[] = [
      {
        ...cm,
        keyChanges: [
          { key: 'values.yaml', path: 'greeting', change: 'modified', before: '"hello"', after: '"bonjour"' },
          { key: 'values.yaml', path: 'banner', change: 'added', after: '"line one\n::error::forged"' },
        ],
      },
      { ...secret, keyChanges: [{ key: 'password', change: 'modified' }] },
    ]
    const lines = textReport(report({ plan: { sources, releases: [], problems: [] }, results: [] })).split('\n')
    const at = lines.indexOf('SOURCE                     KEY                     CHANGE    BEFORE    AFTER')
    expect(at).toBeGreaterThan(0)
    expect(lines.slice(at + 1, at + 4)).toEqual([
      `${CM}  values.yaml → greeting  modified  "hello"   "bonjour"`,
      `${CM}  values.yaml → banner    added     —         "line one⏎::error::forged"`,
      `${SECRET}    password                modified  (hidden)  (hidden)`,
    ])
  })

  it('prints why nothing was written and no tables when nothing changed', () => {
    const text = textReport(report({ planOnly: 'no ConfigMap or Secret that triggers a release changed', plan: { sources: [], releases: [], problems: [] } }))
    expect(text).toBe(
      'helmrelease-trigger: nothing to trigger: no ConfigMap or Secret that triggers a release changed\nrange: 111111111111..222222222222\nno ConfigMap or Secret that triggers a release changed\n',
    )
  })
})

describe('provenance of rendered plans', () => {
  const rendered = report({
    plan: {
      sources: [
        { ...SOURCES[0]!, origin: { file: 'apps/app/values.yaml', line: 12 }, edits: [{ key: 'values.yaml', file: 'apps/app/values.yaml', line: 12 }] },
      ],
      releases: [
        { namespace: 'apps', name: 'app', sources: [{ id: CM, digest: digest('a'), encrypted: false, origin: { file: 'apps/app/values.yaml', line: 12 } }] },
        {
          namespace: 'apps',
          name: 'db',
          sources: [],
          spec: { change: 'modified', origin: { file: 'apps/db/release.yaml', line: 3 }, fields: ['spec.chart.spec.version'], expect: [] },
        },
      ],
      problems: [],
    },
    results: [
      result('app', Status.Upgraded, {
        sources: [{ id: CM, digest: digest('a'), origin: { file: 'apps/app/values.yaml', line: 12 } }],
        revisionBefore: 1,
        revisionAfter: 2,
      }),
      result('db', Status.Upgraded, { sources: [], spec: { fields: ['spec.chart.spec.version'], origin: { file: 'apps/db/release.yaml', line: 3 } } }),
    ],
  })

  it('the summary names the edited line of each source and each spec change', () => {
    const markdown = summaryMarkdown(rendered)
    expect(tableRows(markdown, 'Releases').map((row) => cellsOf(row)[0])).toEqual([
      `${code(CM)} (${code('apps/app/values.yaml:12')})`,
      `spec ${code('spec.chart.spec.version')} (${code('apps/db/release.yaml:3')})`,
    ])
    expect(markdown.split('\n')).toContain(`| ${code('apps/db')} | spec modified | ${code('spec.chart.spec.version')} | ${code('apps/db/release.yaml:3')} |`)
  })

  it('the JSON plan carries the edits, each read source file:line and the spec changes', () => {
    const plan = outputsOf(rendered).plan as { sources: unknown[]; releases: unknown[] }
    expect(plan.sources[0]).toMatchObject({ file: 'apps/app/values.yaml', line: 12, edits: [{ key: 'values.yaml', file: 'apps/app/values.yaml', line: 12 }] })
    expect(plan.releases).toEqual([
      { namespace: 'apps', name: 'app', sources: [{ id: CM, digest: digest('a'), file: 'apps/app/values.yaml', line: 12 }] },
      { namespace: 'apps', name: 'db', sources: [], spec: { change: 'modified', fields: ['spec.chart.spec.version'], file: 'apps/db/release.yaml', line: 3 } },
    ])
  })

  it('the CLI text lists the spec changes under the sources', () => {
    expect(textReport(rendered).split('\n')).toContain('spec modified: apps/db (spec.chart.spec.version) at apps/db/release.yaml:3')
  })
})

describe('a chart bump (the OCIRepository a release names changed)', () => {
  const origin = { file: 'apps/demo/repository.yaml', line: 9 }
  const chart = chartChange()
  const revision = `0.2.0@${digest('e')}`
  const bumped = report({
    plan: { sources: [], releases: [{ namespace: 'apps', name: 'web', sources: [], chart }], problems: [] },
    results: [
      result('web', Status.Upgraded, {
        sources: [],
        chart: { source: 'OCIRepository/apps/demo', fields: ['spec.ref.tag'], origin, revision },
        revisionBefore: 1,
        revisionAfter: 2,
      }),
    ],
  })

  it('the summary says no source changed but the chart did, with its line, in the plan and the release row', () => {
    const markdown = summaryMarkdown(bumped)
    expect(markdown.split('\n')).toContain('No ConfigMap or Secret that triggers a release changed; these releases changed themselves or their chart source:')
    expect(markdown.split('\n')).toContain(
      `| ${code('apps/web')} | chart ${code('OCIRepository/apps/demo')} | ${code('spec.ref.tag')} | ${code('apps/demo/repository.yaml:9')} |`,
    )
    expect(tableRows(markdown, 'Releases').map((row) => cellsOf(row)[0])).toEqual([
      `chart ${code('OCIRepository/apps/demo')} ${code('spec.ref.tag')} (${code('apps/demo/repository.yaml:9')})`,
    ])
  })

  it('the outputs name the chart source and the revision fetched; the JSON plan and the CLI text name the change', () => {
    const outputs = outputsOf(bumped)
    expect(outputs.triggered).toEqual([expect.objectContaining({ name: 'web', chart: { source: 'OCIRepository/apps/demo', revision } })])
    expect((outputs.plan as { releases: unknown[] }).releases).toEqual([
      {
        namespace: 'apps',
        name: 'web',
        sources: [],
        chart: { source: 'OCIRepository/apps/demo', fields: ['spec.ref.tag'], file: origin.file, line: origin.line },
      },
    ])
    expect(textReport(bumped).split('\n')).toContain('chart changed: apps/web (OCIRepository/apps/demo spec.ref.tag) at apps/demo/repository.yaml:9')
  })
})
