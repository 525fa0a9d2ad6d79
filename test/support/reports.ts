// TriggerReports for tests of what people read: the job summary, the check run and the
// pull-request comment. `awkwardReport` carries what users' names and helm-controller's
// messages really contain: pipes, backticks, `<`, CRLF and 300-character messages.

import type { ChartChange, PlainDigest, PlannedSource, SourceId } from '../../src/core/model.ts'
import { controllerReason, Reason, Status, type ReleaseResult, type TriggerReport } from '../../src/engine/result.ts'

export const BASE_SHA = '1111111111111111111111111111111111111111'
export const HEAD_SHA = '2222222222222222222222222222222222222222'
export const digest = (c: string): PlainDigest => `sha256:${c.repeat(64)}`

export function plannedSource(id: SourceId, file: string, line: number, targets: readonly string[], extra: Partial<PlannedSource> = {}): PlannedSource {
  const [kind = 'ConfigMap', namespace = '', name = ''] = id.split('/')
  return {
    kind: kind === 'Secret' ? 'Secret' : 'ConfigMap',
    namespace,
    name,
    id,
    change: 'modified',
    digest: digest('a'),
    previousDigest: digest('0'),
    encrypted: false,
    origin: { file, line },
    targets: targets.map((t) => ({ namespace, name: t, reasons: ['valuesFrom'] })),
    ...extra,
  }
}

/** A commit's bump of the OCIRepository `apps/demo` to `tag`, at apps/demo/repository.yaml:9. */
export function chartChange(tag = '0.2.0', extra: Partial<ChartChange> = {}): ChartChange {
  return {
    kind: 'OCIRepository',
    namespace: 'apps',
    name: 'demo',
    origin: { file: 'apps/demo/repository.yaml', line: 9 },
    fields: ['spec.ref.tag'],
    expect: [{ path: ['ref', 'tag'], value: tag }],
    ...extra,
  }
}

export function releaseResult(namespace: string, name: string, source: SourceId, status: Status, extra: Partial<ReleaseResult> = {}): ReleaseResult {
  return {
    namespace,
    name,
    sources: [{ id: source, digest: digest('a') }],
    status,
    reason: status === Status.Upgraded ? Reason.UpgradeSucceeded : controllerReason(status),
    message: `${name}: ${status}`,
    durationMs: 12_300,
    severity: status === Status.Failed || status === Status.TimedOut ? 'error' : 'none',
    ...extra,
  }
}

export function triggerReport(sources: readonly PlannedSource[], results: readonly ReleaseResult[], extra: Partial<TriggerReport> = {}): TriggerReport {
  return {
    range: { base: BASE_SHA, head: HEAD_SHA, fullSync: false, notes: [] },
    plan: {
      sources,
      releases: sources.flatMap((s) =>
        s.targets.map((t) => ({ namespace: t.namespace, name: t.name, sources: [{ id: s.id, digest: digest('a'), encrypted: false }] })),
      ),
      problems: [],
    },
    planOnly: undefined,
    dryRun: false,
    sources: sources.map((s) => ({ id: s.id, applied: true, message: 'arrived', durationMs: 100 })),
    results,
    notes: [],
    problems: [],
    ...extra,
  }
}

const LONG =
  `Helm upgrade failed for release apps/web with chart demo@1.2.3: ${"values don't meet the specifications of the schema(s) in the following chart(s): ".repeat(4)}`.slice(
    0,
    300,
  )

/** Three upgraded, one failed, with names and messages that break naive markdown. */
/** A report whose names and messages are hard to show; `hostile` puts text of one's choosing in a release's cron message and a plan source's file. */
export function awkwardReport(hostile: { readonly name?: string; readonly message?: string } = {}): TriggerReport {
  const cm: SourceId = 'ConfigMap/apps/web-values'
  const odd: SourceId = `ConfigMap/apps/a|b\`c<d>${hostile.name === undefined ? '' : ` ${hostile.name}`}`
  const secret: SourceId = 'Secret/apps/db'
  const sources = [
    plannedSource(cm, 'clusters/prod/apps/web|values.yaml', 3, ['web', 'api', 'worker'], {
      keyChanges: [
        { key: 'values.yaml', path: 'image.tag', change: 'modified', before: '"1.0"', after: '"1.1"' },
        { key: 'values.yaml', path: 'ingress.host', change: 'added', after: '"<web>|`prod`.example"' },
      ],
    }),
    plannedSource(odd, 'clusters/prod/apps/`odd`<name>.yaml', 12, ['cron']),
    plannedSource(secret, 'clusters/prod/apps/db.yaml', 1, [], { kind: 'Secret', keyChanges: [{ key: 'password', change: 'modified' }] }),
  ]
  return triggerReport(sources, [
    releaseResult('apps', 'api', cm, Status.Upgraded, {
      revisionBefore: 4,
      revisionAfter: 5,
      message: 'Helm upgrade succeeded for release apps/api.v5 with chart demo@1.2.3',
    }),
    releaseResult('apps', 'cron', odd, Status.Upgraded, {
      revisionBefore: 1,
      revisionAfter: 2,
      message: hostile.message ?? 'line one\r\nline two with a | pipe and `code` and <b>html</b>',
    }),
    releaseResult('apps', 'web', cm, Status.Failed, { reason: controllerReason('UpgradeFailed'), revisionBefore: 7, revisionAfter: 8, message: LONG }),
    releaseResult('apps', 'worker', cm, Status.Upgraded, {
      revisionBefore: 2,
      revisionAfter: 3,
      message: 'Helm upgrade succeeded for release apps/worker.v3 with chart demo@1.2.3',
    }),
  ])
}
