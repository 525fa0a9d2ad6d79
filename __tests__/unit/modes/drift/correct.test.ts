// Drift's correction action, pure: what it decides for a gone, a suspended and a drifted
// release, the forced-upgrade patch, and the Event's text.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { correctionAction, correctionEventMessage } from '../../../../src/modes/drift/correct.ts'
import { ObjectState, ReleaseState, type ObjectDrift, type ReleaseDrift } from '../../../../src/modes/drift/verdict.ts'

const keys = keysFor('nebius.ai')
const object = (name: string, state: ObjectDrift['state'] = ObjectState.Changed): ObjectDrift => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: 'apps',
  name,
  state,
  changes: [],
})
const drift = (drifted: readonly ObjectDrift[]): ReleaseDrift => ({
  namespace: 'apps',
  name: 'app',
  releaseName: 'app',
  storageNamespace: 'apps',
  revision: 4,
  state: ReleaseState.Drifted,
  reason: 'Drifted',
  message: '',
  objects: drifted.length,
  inSync: 0,
  ignored: 0,
  drifted,
  durationMs: 0,
})
const live = (suspend: boolean) => toHelmRelease({ metadata: { namespace: 'apps', name: 'app', resourceVersion: '9' }, spec: { suspend } })

describe('correctionAction', () => {
  const action = correctionAction(drift([object('a')]), keys, undefined)

  it.each([
    ['gone', undefined, { kind: 'skip', skip: { status: 'Failed', reason: 'NotFound', message: 'the HelmRelease disappeared before it could be corrected' } }],
    ['suspended', live(true), { kind: 'skip', skip: { status: 'Skipped', reason: 'Suspended', message: 'spec.suspend is true; not corrected' } }],
    ['drifted', live(false), { kind: 'write', write: { action: 'force' } }],
  ] as const)('decides for a %s release', (_name, release, expected) => {
    expect(action.decide(release, 0)).toEqual(expected)
  })

  it('asks for a forced upgrade: forceAt equal to requestedAt, on the resourceVersion read', () => {
    expect(action.patch({ action: 'force' }, live(false), 'T')).toEqual({
      annotations: { [keys.requestedAt]: 'T', [keys.forceAt]: 'T' },
      labels: {},
      resourceVersion: '9',
    })
  })

  it('names at most five drifted objects in the Event, never the ones it could not compare', () => {
    const objects = ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => object(n)).concat(object('broken', ObjectState.Error))
    expect(correctionEventMessage(drift(objects), 'https://ci/run/1')).toBe(
      'Drift from Helm revision 4 in 6 objects (ConfigMap/apps/a, ConfigMap/apps/b, ConfigMap/apps/c, ConfigMap/apps/d, ConfigMap/apps/e, …); forced upgrade requested. Run: https://ci/run/1',
    )
    expect(action.event?.({ action: 'force' }, live(false), 'T')).toEqual({
      reason: 'DriftCorrectionRequested',
      message: 'Drift from Helm revision 4 in 1 object (ConfigMap/apps/a); forced upgrade requested.',
    })
  })
})
