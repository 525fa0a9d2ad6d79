// The write engine with every mode's release action against the FakeCluster: a patch whose
// answer is lost (the client's retry conflicts, or every retry fails) is written and reported
// once; a conflict with someone else's write is decided again on a fresh read; a refusal fails
// with its reason; a skip writes nothing; a dry run records no Event.

import { describe, expect, it } from 'vitest'
import { keysFor } from '../../../src/core/keys.ts'
import type { Digest, PlannedRelease, SourceId } from '../../../src/core/model.ts'
import type { EventSink } from '../../../src/engine/ports.ts'
import { tokenSequence } from '../../../src/engine/tokens.ts'
import { writeRelease, type ReleaseAction, type WriteContext } from '../../../src/engine/write-release.ts'
import type { ReleaseEvent } from '../../../src/kube/cluster.ts'
import { ForbiddenError } from '../../../src/kube/api-error.ts'
import { relabelAction } from '../../../src/modes/discover/label.ts'
import { correctionAction } from '../../../src/modes/drift/correct.ts'
import { ReleaseState, type ReleaseDrift } from '../../../src/modes/drift/verdict.ts'
import { recoverAction } from '../../../src/modes/recover/action.ts'
import { triggerAction } from '../../../src/modes/trigger/action.ts'
import { FakeClock, FakeCluster } from '../../../test/support/fakes.ts'

const keys = keysFor('nebius.ai')
const NS = 'apps'
const CM: SourceId = 'ConfigMap/apps/values'
const DIGEST: Digest = `sha256:${'a'.repeat(64)}`

const planned: PlannedRelease = { namespace: NS, name: 'app', sources: [{ id: CM, digest: DIGEST, encrypted: false }] }
const drift: ReleaseDrift = {
  namespace: NS,
  name: 'app',
  releaseName: 'app',
  storageNamespace: NS,
  revision: 3,
  state: ReleaseState.Drifted,
  reason: 'Drifted',
  message: '1 object drifted',
  objects: 1,
  inSync: 0,
  ignored: 0,
  drifted: [],
  durationMs: 1,
}
const failing = {
  conditions: [{ type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed: context deadline exceeded' }],
}

interface ModeCase {
  readonly mode: string
  /** A release this mode writes. */
  readonly seed: (cluster: FakeCluster) => void
  // Each mode's own write and skip types; the engine only carries them.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly action: ReleaseAction<any, any>
  /** The live release carries this mode's write. */
  readonly written: (cluster: FakeCluster, token: string) => boolean
  readonly event: string | undefined
}

const modes: readonly ModeCase[] = [
  {
    mode: 'trigger',
    seed: (c) => c.addRelease(NS, 'app', { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] }),
    action: triggerAction(
      planned,
      { keys, force: false, reset: false, checkSuperseded: false, requestedBy: 'for commit abc', runUrl: undefined },
      async () => new Map(),
    ),
    written: (c, token) =>
      c.release(NS, 'app').annotations[keys.requestedAt] === token && c.release(NS, 'app').annotations[keys.configDigest]?.includes(DIGEST) === true,
    event: 'ConfigChanged',
  },
  {
    mode: 'recover',
    seed: (c) => c.addRelease(NS, 'app', {}, { status: failing }),
    action: recoverAction({ patterns: [/context deadline exceeded/], maxAttempts: 3, backoffMs: 60_000, keys }, undefined),
    written: (c, token) => c.release(NS, 'app').annotations[keys.resetAt] === token && c.release(NS, 'app').annotations[keys.recoverAttempts] === '1',
    event: 'RecoveryRequested',
  },
  {
    mode: 'drift-correct',
    seed: (c) => c.addRelease(NS, 'app'),
    action: correctionAction(drift, keys, undefined),
    written: (c, token) => c.release(NS, 'app').annotations[keys.forceAt] === token,
    event: 'DriftCorrectionRequested',
  },
  {
    mode: 'discover-relabel',
    seed: (c) => c.addRelease(NS, 'app', { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] }),
    action: relabelAction(keys),
    written: (c) => c.release(NS, 'app').labels[keys.triggerLabel] === keys.triggerLabelValue,
    event: undefined,
  },
]

function setUp(mode: ModeCase, dryRun = false): { cluster: FakeCluster; events: ReleaseEvent[]; ctx: WriteContext } {
  const cluster = new FakeCluster()
  mode.seed(cluster)
  const events: ReleaseEvent[] = []
  const sink: EventSink = { record: async (e) => void events.push(e) }
  const log = { info: () => undefined, warning: () => undefined }
  const ctx: WriteContext = { cluster, requestedAtKey: keys.requestedAt, dryRun, clock: new FakeClock(), log, tokens: tokenSequence(0), events: sink }
  return { cluster, events, ctx }
}

describe.each(modes)('writeRelease with the $mode action', (mode) => {
  it.each(['conflict', 'transient'] as const)('reports a patch whose answer was lost (then %s) as written, once', async (then) => {
    const { cluster, events, ctx } = setUp(mode)
    cluster.loseAnswerOnce.set(`${NS}/app`, then)
    const outcome = await writeRelease({ namespace: NS, name: 'app' }, mode.action, ctx)
    expect(outcome.kind).toBe('written')
    if (outcome.kind !== 'written') return
    expect(cluster.patches).toHaveLength(1)
    expect(mode.written(cluster, outcome.token)).toBe(true)
    expect(events.map((e) => e.reason)).toEqual(mode.event === undefined ? [] : [mode.event])
  })

  it("decides again on a fresh read when someone else's write conflicts, and writes once", async () => {
    const { cluster, events, ctx } = setUp(mode)
    cluster.conflictOnce.add(`${NS}/app`)
    const outcome = await writeRelease({ namespace: NS, name: 'app' }, mode.action, ctx)
    expect(outcome.kind).toBe('written')
    if (outcome.kind !== 'written') return
    expect(cluster.patches).toHaveLength(2)
    // The second patch carries the resourceVersion of the fresh read, not the first one's.
    expect(cluster.patches[1]?.patch.resourceVersion).not.toBe(cluster.patches[0]?.patch.resourceVersion)
    expect(mode.written(cluster, outcome.token)).toBe(true)
    expect(events).toHaveLength(mode.event === undefined ? 0 : 1)
  })

  it('fails with the reason when the patch is refused, and records nothing', async () => {
    const { cluster, events, ctx } = setUp(mode)
    cluster.patchRelease = async () => {
      throw new ForbiddenError('helmreleases.helm.toolkit.fluxcd.io "app" is forbidden')
    }
    const outcome = await writeRelease({ namespace: NS, name: 'app' }, mode.action, ctx)
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'Forbidden' })
    expect(events).toEqual([])
  })

  it('skips a release that does not exist without patching', async () => {
    const { cluster, ctx } = setUp(mode)
    const outcome = await writeRelease({ namespace: NS, name: 'absent' }, mode.action, ctx)
    expect(outcome.kind).toBe('skipped')
    expect(cluster.patches).toEqual([])
  })

  it('sends a dry run as such and records no Event', async () => {
    const { cluster, events, ctx } = setUp(mode, true)
    const outcome = await writeRelease({ namespace: NS, name: 'app' }, mode.action, ctx)
    expect(outcome.kind).toBe('written')
    expect(cluster.patches.map((p) => p.dryRun)).toEqual([true])
    expect(events).toEqual([])
  })
})

describe('writeRelease', () => {
  it('decides the first attempt on the observed copy without a GET, and reads again after a conflict', async () => {
    const mode = modes[0]
    if (mode === undefined) throw new Error('no mode')
    const { cluster, ctx } = setUp(mode)
    const listed = cluster.release(NS, 'app')
    let gets = 0
    const get = cluster.getRelease.bind(cluster)
    cluster.getRelease = async (ref) => {
      gets++
      return get(ref)
    }
    expect((await writeRelease({ namespace: NS, name: 'app' }, mode.action, { ...ctx, observed: { live: listed } })).kind).toBe('written')
    expect(gets).toBe(0)
    cluster.addRelease(NS, 'other', { valuesFrom: [{ kind: 'ConfigMap', name: 'values' }] })
    cluster.conflictOnce.add(`${NS}/other`)
    const other = { namespace: NS, name: 'other' }
    const otherAction = triggerAction(
      { ...planned, name: 'other' },
      { keys, force: false, reset: false, checkSuperseded: false, requestedBy: 'x', runUrl: undefined },
      async () => new Map(),
    )
    expect((await writeRelease(other, otherAction, { ...ctx, observed: { live: cluster.release(NS, 'other') } })).kind).toBe('written')
    expect(gets).toBe(1)
  })

  it('says so when a transient failure after the patch leaves it unknown whether it landed', async () => {
    const mode = modes[0]
    if (mode === undefined) throw new Error('no mode')
    const { cluster, ctx } = setUp(mode)
    cluster.loseAnswerOnce.set(`${NS}/app`, 'transient')
    const get = cluster.getRelease.bind(cluster)
    let reads = 0
    cluster.getRelease = async (ref) => {
      if (++reads > 1) throw new Error('connection refused')
      return get(ref)
    }
    const outcome = await writeRelease({ namespace: NS, name: 'app' }, mode.action, ctx)
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'PatchFailed' })
    if (outcome.kind === 'failed') expect(outcome.message).toMatch(/Whether the patch \(requestedAt .+\) landed could not be read back\./)
  })

  it('gives up after five conflicts in a row', async () => {
    const mode = modes[2]
    if (mode === undefined) throw new Error('no mode')
    const { cluster, ctx } = setUp(mode)
    const patch = cluster.patchRelease.bind(cluster)
    cluster.patchRelease = async (ref, p, o) => {
      cluster.conflictOnce.add(`${ref.namespace}/${ref.name}`)
      return patch(ref, p, o)
    }
    const outcome = await writeRelease({ namespace: NS, name: 'app' }, mode.action, ctx)
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'PatchFailed' })
    expect(cluster.patches).toHaveLength(5)
  })
})
