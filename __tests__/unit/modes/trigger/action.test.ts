// The per-release decision (pure), the merge patch it leads to, and the requestedAt token.

import { describe, expect, it } from 'vitest'
import { buildPatch, compactDigestJson, decide, SkipReason, supersededBy, triggerAction, type Decision } from '../../../../src/modes/trigger/action.ts'
import { isStalled, recordedDigests } from '../../../../src/core/helmrelease.ts'
import { newToken } from '../../../../src/engine/tokens.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { toHelmRelease, type HelmRelease } from '../../../../src/core/helmrelease.ts'
import type { Digest, PlannedRelease, SourceId } from '../../../../src/core/model.ts'

const keys = keysFor('nebius.ai')
const DIGEST_KEY = 'nebius.ai/config-digest'

const digest = (c: string): Digest => `sha256:${c.repeat(64)}`

const A: SourceId = 'ConfigMap/apps/app-values'
const B: SourceId = 'Secret/apps/app-secrets'
const OTHER: SourceId = 'ConfigMap/apps/shared'

interface ReleaseOptions {
  readonly namespace?: string
  readonly name?: string
  readonly resourceVersion?: string
  readonly annotations?: Readonly<Record<string, string>>
  readonly labels?: Readonly<Record<string, string>>
  readonly suspend?: boolean
  readonly valuesFrom?: readonly { kind: string; name: string }[]
  readonly conditions?: readonly { type: string; status: string; reason?: string; message?: string }[]
}

/** A HelmRelease as the API would return it, read through toHelmRelease like the engine does. */
function release(o: ReleaseOptions = {}): HelmRelease {
  return toHelmRelease({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: {
      namespace: o.namespace ?? 'apps',
      name: o.name ?? 'app',
      uid: 'uid-1',
      resourceVersion: o.resourceVersion ?? '4711',
      generation: 3,
      annotations: o.annotations ?? {},
      labels: o.labels ?? {},
    },
    spec: { interval: '10m', suspend: o.suspend ?? false, valuesFrom: o.valuesFrom ?? [] },
    status: {
      observedGeneration: 3,
      conditions: (o.conditions ?? [{ type: 'Ready', status: 'True', reason: 'UpgradeSucceeded' }]).map((c) => ({ reason: '', message: '', ...c })),
      history: [{ version: 1, status: 'deployed', configDigest: 'sha256:cfg', chartVersion: '1.0.0' }],
    },
  })
}

const recorded = (entries: Readonly<Record<string, string>>): Record<string, string> => ({ [DIGEST_KEY]: JSON.stringify(entries) })

const planned: PlannedRelease = {
  namespace: 'apps',
  name: 'app',
  sources: [
    { id: A, digest: digest('a'), encrypted: false },
    { id: B, digest: digest('b'), encrypted: true },
  ],
}

const STALLED_SUFFIX = '; release is stalled, resetting its retries'

describe('decide', () => {
  const cases: readonly (readonly [string, HelmRelease | undefined, { force?: boolean; reset?: boolean }, Decision])[] = [
    [
      'missing release → NotFound',
      undefined,
      {},
      { action: 'skip', reason: SkipReason.NotFound, message: 'HelmRelease apps/app does not exist in the cluster' },
    ],
    [
      'suspended → Suspended',
      release({ suspend: true }),
      {},
      { action: 'skip', reason: SkipReason.Suspended, message: 'spec.suspend is true; helm-controller would ignore the request' },
    ],
    [
      'suspended wins over force',
      release({ suspend: true }),
      { force: true, reset: true },
      { action: 'skip', reason: SkipReason.Suspended, message: 'spec.suspend is true; helm-controller would ignore the request' },
    ],
    [
      'every digest recorded → UpToDate',
      release({ annotations: recorded({ [A]: digest('a'), [B]: digest('b') }) }),
      {},
      { action: 'skip', reason: SkipReason.UpToDate, message: 'already triggered for these digests' },
    ],
    [
      'every digest recorded among others → UpToDate',
      release({ annotations: recorded({ [OTHER]: digest('c'), [A]: digest('a'), [B]: digest('b') }) }),
      {},
      { action: 'skip', reason: SkipReason.UpToDate, message: 'already triggered for these digests' },
    ],
    [
      'up to date and stalled → still UpToDate (nothing new to reset for)',
      release({ annotations: recorded({ [A]: digest('a'), [B]: digest('b') }), conditions: [{ type: 'Stalled', status: 'True' }] }),
      {},
      { action: 'skip', reason: SkipReason.UpToDate, message: 'already triggered for these digests' },
    ],
    ['no annotation → every source stale', release(), {}, { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` }],
    [
      'partially stale → the stale source named',
      release({ annotations: recorded({ [A]: digest('a'), [B]: digest('0') }) }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${B} changed` },
    ],
    [
      'one source not recorded yet',
      release({ annotations: recorded({ [B]: digest('b') }) }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A} changed` },
    ],
    [
      'force on up-to-date → trigger with force',
      release({ annotations: recorded({ [A]: digest('a'), [B]: digest('b') }) }),
      { force: true },
      { action: 'trigger', force: true, reset: false, why: 'force' },
    ],
    [
      'force on stale → names the change',
      release({ annotations: recorded({ [A]: digest('0'), [B]: digest('b') }) }),
      { force: true },
      { action: 'trigger', force: true, reset: false, why: `${A} changed` },
    ],
    [
      'Stalled=True → reset',
      release({
        conditions: [
          { type: 'Stalled', status: 'True', reason: 'RetriesExceeded' },
          { type: 'Ready', status: 'False', reason: 'UpgradeFailed' },
        ],
      }),
      {},
      { action: 'trigger', force: false, reset: true, why: `${A}, ${B} changed${STALLED_SUFFIX}` },
    ],
    [
      'Ready=False RetriesExceeded → reset',
      release({ conditions: [{ type: 'Ready', status: 'False', reason: 'RetriesExceeded', message: 'Failed to upgrade after 3 attempts' }] }),
      {},
      { action: 'trigger', force: false, reset: true, why: `${A}, ${B} changed${STALLED_SUFFIX}` },
    ],
    [
      'Ready=False for another reason → no reset',
      release({ conditions: [{ type: 'Ready', status: 'False', reason: 'UpgradeFailed' }] }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
    [
      'Stalled=False → no reset',
      release({
        conditions: [
          { type: 'Stalled', status: 'False' },
          { type: 'Ready', status: 'True' },
        ],
      }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
    ['reset input → reset', release(), { reset: true }, { action: 'trigger', force: false, reset: true, why: `${A}, ${B} changed` }],
    [
      'force, reset and stalled together',
      release({ annotations: recorded({ [A]: digest('a'), [B]: digest('b') }), conditions: [{ type: 'Stalled', status: 'True' }] }),
      { force: true, reset: true },
      { action: 'trigger', force: true, reset: true, why: `force${STALLED_SUFFIX}` },
    ],
    [
      'corrupt annotation → everything stale',
      release({ annotations: { [DIGEST_KEY]: '{"ConfigMap/apps/app-values": "sha256:' } }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
    [
      'array annotation → everything stale',
      release({ annotations: { [DIGEST_KEY]: JSON.stringify([A, digest('a')]) } }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
    [
      'string annotation → everything stale',
      release({ annotations: { [DIGEST_KEY]: JSON.stringify(digest('a')) } }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
    [
      'null annotation → everything stale',
      release({ annotations: { [DIGEST_KEY]: 'null' } }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
    [
      'non-string digests ignored',
      release({ annotations: { [DIGEST_KEY]: JSON.stringify({ [A]: 1, [B]: digest('b') }) } }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A} changed` },
    ],
    [
      'digests under another prefix are not ours',
      release({ annotations: { 'example.com/config-digest': JSON.stringify({ [A]: digest('a'), [B]: digest('b') }) } }),
      {},
      { action: 'trigger', force: false, reset: false, why: `${A}, ${B} changed` },
    ],
  ]

  it.each(cases)('%s', (_, live, options, expected) => {
    expect(decide({ planned, live, digestKey: DIGEST_KEY, force: options.force ?? false, reset: options.reset ?? false })).toEqual(expected)
  })

  it('reads the digests under the prefix it is given', () => {
    const custom = keysFor('example.com')
    const live = release({ annotations: { [custom.configDigest]: JSON.stringify({ [A]: digest('a'), [B]: digest('b') }) } })
    expect(decide({ planned, live, digestKey: custom.configDigest, force: false, reset: false })).toEqual({
      action: 'skip',
      reason: SkipReason.UpToDate,
      message: 'already triggered for these digests',
    })
  })
})

describe('isStalled', () => {
  it.each([
    ['no conditions', [], false],
    ['Ready=True', [{ type: 'Ready', status: 'True' }], false],
    ['Ready=Unknown RetriesExceeded', [{ type: 'Ready', status: 'Unknown', reason: 'RetriesExceeded' }], false],
    ['Ready=False InstallFailed', [{ type: 'Ready', status: 'False', reason: 'InstallFailed' }], false],
    ['Ready=False RetriesExceeded', [{ type: 'Ready', status: 'False', reason: 'RetriesExceeded' }], true],
    ['Stalled=True', [{ type: 'Stalled', status: 'True' }], true],
    ['Stalled=Unknown', [{ type: 'Stalled', status: 'Unknown' }], false],
  ] as const)('%s → %s', (_, conditions, expected) => {
    expect(isStalled(release({ conditions }))).toBe(expected)
  })
})

describe('recordedDigests', () => {
  it.each([
    ['absent', undefined, []],
    ['empty', '', []],
    ['not JSON', 'sha256:abc', []],
    ['truncated JSON', '{"ConfigMap/a/b":', []],
    ['an array', '["ConfigMap/a/b"]', []],
    ['a number', '42', []],
    ['null', 'null', []],
    [
      'an object',
      '{"ConfigMap/a/b":"sha256:1","Secret/a/c":"sha256:2"}',
      [
        ['ConfigMap/a/b', 'sha256:1'],
        ['Secret/a/c', 'sha256:2'],
      ],
    ],
    ['an object with non-string values', '{"ConfigMap/a/b":"sha256:1","Secret/a/c":{"x":1},"Secret/a/d":null}', [['ConfigMap/a/b', 'sha256:1']]],
  ] as const)('%s', (_, annotation, entries) => {
    expect([...recordedDigests(annotation)]).toEqual(entries)
  })
})

describe('compactDigestJson', () => {
  it('writes compact JSON with keys sorted by code unit, whatever the insertion order', () => {
    const forwards = new Map([
      ['Secret/b/x', digest('1')],
      ['ConfigMap/b/y', digest('2')],
      ['ConfigMap/a/z', digest('3')],
    ])
    const backwards = new Map([...forwards].reverse())
    const expected = `{"ConfigMap/a/z":"${digest('3')}","ConfigMap/b/y":"${digest('2')}","Secret/b/x":"${digest('1')}"}`
    expect(compactDigestJson(forwards)).toBe(expected)
    expect(compactDigestJson(backwards)).toBe(expected)
    expect(compactDigestJson(new Map())).toBe('{}')
  })
})

describe('buildPatch', () => {
  const TOKEN = '2026-11-22T10:00:00.123000001Z'
  const digestsOf = (patch: { annotations: Readonly<Record<string, string | null>> }): unknown => JSON.parse(patch.annotations[DIGEST_KEY] ?? 'null')

  it('sends the token as requestedAt, the digests and the resourceVersion read, and nothing else', () => {
    const live = release({ resourceVersion: '98765', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
    expect(buildPatch(live, planned, { force: false, reset: false }, TOKEN, keys)).toEqual({
      annotations: {
        'reconcile.fluxcd.io/requestedAt': TOKEN,
        'nebius.ai/config-digest': `{"${A}":"${digest('a')}","${B}":"${digest('b')}"}`,
      },
      labels: { 'nebius.ai/helmrelease-trigger-operator': 'true' },
      resourceVersion: '98765',
    })
  })

  it('stamps the commit and the pull request for Flux, and clears a pull request the commit has not', () => {
    const sha = 'c'.repeat(40)
    const stamped = buildPatch(release(), planned, { force: false, reset: false }, TOKEN, keys, { commit: sha, changeRequest: 12 })
    expect(stamped.annotations).toMatchObject({ 'event.toolkit.fluxcd.io/commit': sha, 'event.toolkit.fluxcd.io/change_request': '12' })
    const earlier = release({ annotations: { 'event.toolkit.fluxcd.io/change_request': '11' } })
    const plain = buildPatch(earlier, planned, { force: false, reset: false }, TOKEN, keys, { commit: sha })
    expect(plain.annotations['event.toolkit.fluxcd.io/commit']).toBe(sha)
    expect(plain.annotations['event.toolkit.fluxcd.io/change_request']).toBeNull()
    expect(buildPatch(release(), planned, { force: false, reset: false }, TOKEN, keys, { commit: sha }).annotations).not.toHaveProperty(
      'event.toolkit.fluxcd.io/change_request',
    )
  })

  it.each([
    [false, false, {}],
    [true, false, { 'reconcile.fluxcd.io/forceAt': TOKEN }],
    [false, true, { 'reconcile.fluxcd.io/resetAt': TOKEN }],
    [true, true, { 'reconcile.fluxcd.io/forceAt': TOKEN, 'reconcile.fluxcd.io/resetAt': TOKEN }],
  ])('force=%s reset=%s → Flux tokens %j, equal to requestedAt', (force, reset, tokens) => {
    const patch = buildPatch(release(), planned, { force, reset }, TOKEN, keys)
    const { [DIGEST_KEY]: _digests, ...flux } = patch.annotations
    expect(flux).toEqual({ 'reconcile.fluxcd.io/requestedAt': TOKEN, ...tokens })
  })

  it('merges the planned digests into those recorded for other sources, keys sorted, compact', () => {
    const live = release({ annotations: recorded({ [OTHER]: digest('c'), [A]: digest('0'), 'Secret/apps/zz': digest('d') }) })
    const patch = buildPatch(live, planned, { force: false, reset: false }, TOKEN, keys)
    const json = patch.annotations[DIGEST_KEY]
    expect(json).toBe(`{"${A}":"${digest('a')}","${OTHER}":"${digest('c')}","${B}":"${digest('b')}","Secret/apps/zz":"${digest('d')}"}`)
    expect(json).not.toMatch(/\s/)
    expect(Object.keys(digestsOf(patch) as object)).toEqual([A, OTHER, B, 'Secret/apps/zz'])
  })

  it('replaces a corrupt recorded annotation with the planned digests', () => {
    const live = release({ annotations: { [DIGEST_KEY]: 'not json at all' } })
    expect(digestsOf(buildPatch(live, planned, { force: false, reset: false }, TOKEN, keys))).toEqual({ [A]: digest('a'), [B]: digest('b') })
  })

  it('writes under the configured prefix', () => {
    const custom = keysFor('example.com')
    const patch = buildPatch(release({ valuesFrom: [{ kind: 'Secret', name: 'app-secrets' }] }), planned, { force: false, reset: false }, TOKEN, custom)
    expect(Object.keys(patch.annotations).sort()).toEqual(['example.com/config-digest', 'reconcile.fluxcd.io/requestedAt'])
    expect(patch.labels).toEqual({ 'example.com/helmrelease-trigger-operator': 'true' })
  })

  it.each([
    ['uses valuesFrom', [{ kind: 'ConfigMap', name: 'app-values' }], { 'nebius.ai/helmrelease-trigger-operator': 'true' }],
    ['has only unusable valuesFrom entries', [{ kind: 'Deployment', name: 'x' }], {}],
    ['has no valuesFrom', [], {}],
  ])('labels the release for discovery only when it %s', (_, valuesFrom, labels) => {
    expect(buildPatch(release({ valuesFrom }), planned, { force: false, reset: false }, TOKEN, keys).labels).toEqual(labels)
  })
})

describe('newToken', () => {
  const RFC3339_NANO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/

  it.each([
    [Date.UTC(2026, 10, 22, 10, 0, 0, 123), 0, '2026-11-22T10:00:00.123000000Z'],
    [Date.UTC(2026, 10, 22, 10, 0, 0, 123), 7, '2026-11-22T10:00:00.123000007Z'],
    [Date.UTC(2026, 0, 2, 3, 4, 5, 6), 123_456, '2026-01-02T03:04:05.006123456Z'],
    [Date.UTC(1999, 11, 31, 23, 59, 59, 999), 999_999, '1999-12-31T23:59:59.999999999Z'],
  ])('%i + sequence %i → %s', (ms, sequence, token) => {
    expect(newToken(new Date(ms), sequence)).toBe(token)
    expect(token).toMatch(RFC3339_NANO_UTC)
  })

  it('is RFC 3339 UTC with 9 fractional digits and keeps the millisecond of the clock', () => {
    const now = new Date('2026-03-04T05:06:07.890Z')
    const token = newToken(now, 42)
    expect(token).toMatch(RFC3339_NANO_UTC)
    expect(token.startsWith('2026-03-04T05:06:07.890')).toBe(true)
    expect(new Date(token.slice(0, 23) + 'Z').getTime()).toBe(now.getTime())
  })

  it('gives a distinct, increasing token for each call in a sequence within one millisecond', () => {
    const now = new Date('2026-11-22T10:00:00.000Z')
    const tokens = Array.from({ length: 2_000 }, (_, n) => newToken(now, n))
    expect(new Set(tokens).size).toBe(tokens.length)
    expect([...tokens].sort()).toEqual(tokens)
    for (const t of tokens) expect(t).toMatch(RFC3339_NANO_UTC)
  })
})

describe('supersededBy (re-checked right before the patch)', () => {
  const planned: PlannedRelease = {
    namespace: 'apps',
    name: 'app',
    sources: [
      { id: A, digest: digest('a'), encrypted: false },
      { id: B, digest: digest('b'), encrypted: false },
    ],
  }
  const live = (entries: [SourceId, Digest | undefined][]) => new Map(entries)

  it.each<[string, Map<SourceId, Digest | undefined>]>([
    [
      "every source still holds this run's digest",
      live([
        [A, digest('a')],
        [B, digest('b')],
      ]),
    ],
    ['nothing was checked (wait-for-apply off, encrypted)', live([])],
    [
      'only unrelated sources moved',
      live([
        [A, digest('a')],
        [OTHER, digest('f')],
      ]),
    ],
  ])('lets the patch go when %s', (_, digests) => {
    expect(supersededBy(planned, digests)).toBeUndefined()
  })

  it("skips as Superseded when a newer commit's content is live, naming the source (a Secret's digests never shown)", () => {
    const decision = supersededBy(
      planned,
      live([
        [A, digest('a')],
        [B, digest('c')],
      ]),
    )
    expect(decision).toMatchObject({ action: 'skip', reason: SkipReason.Superseded })
    const message = decision?.action === 'skip' ? decision.message : ''
    expect(message).toContain(`${B} changed since`)
    expect(message).not.toContain('c'.repeat(12))
    expect(message).not.toContain('b'.repeat(12))
    expect(message).not.toContain(A)
  })

  it('skips as Superseded when a source was deleted since', () => {
    const decision = supersededBy(
      planned,
      live([
        [A, undefined],
        [B, digest('b')],
      ]),
    )
    expect(decision).toMatchObject({ action: 'skip', reason: SkipReason.Superseded })
    expect(decision?.action === 'skip' ? decision.message : '').toContain(`${A} no longer exists`)
  })
})

describe('triggerAction', () => {
  const options = { keys, force: false, reset: false, requestedBy: 'for commit 0123456789ab', runUrl: 'https://ci/run/3' }
  const moved = async () => new Map([[A, digest('z')]])

  it('decides with decide() and writes buildPatch() with the token', () => {
    const action = triggerAction(planned, { ...options, checkSuperseded: false }, moved)
    const live = release()
    const decided = action.decide(live, 0)
    expect(decided).toMatchObject({ kind: 'write', write: { action: 'trigger', force: false, reset: false } })
    if (decided.kind !== 'write') return
    expect(action.patch(decided.write, live, 'T')).toEqual(buildPatch(live, planned, decided.write, 'T', keys))
    expect(action.decide(undefined, 0)).toMatchObject({ kind: 'skip', skip: { reason: SkipReason.NotFound } })
  })

  it.each([
    [true, SkipReason.Superseded],
    [false, undefined],
  ] as const)('rechecks for a newer commit only when checkSuperseded is %s', async (checkSuperseded, reason) => {
    const action = triggerAction(planned, { ...options, checkSuperseded }, moved)
    const skip = action.recheck === undefined ? undefined : await action.recheck(release(), false)
    expect(skip?.reason).toBe(reason)
  })

  it("says who asked, why and each source digest in the Event (a Secret's: only that it changed)", () => {
    const action = triggerAction(planned, { ...options, checkSuperseded: false }, moved)
    const event = action.event?.({ action: 'trigger', force: false, reset: false, why: `${A} changed` }, release(), 'T')
    expect(event).toEqual({
      reason: 'ConfigChanged',
      message: `Reconcile requested for commit 0123456789ab: ${A} changed (${A} ${digest('a').slice(7, 19)}, ${B} (changed)). Run: https://ci/run/3`,
    })
  })
})
