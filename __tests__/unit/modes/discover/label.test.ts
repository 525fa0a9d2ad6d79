// Discover's relabel action, pure: our label is present exactly when the release uses
// spec.valuesFrom; only our own key is ever removed; a label patch landed when the label is as
// it asked (there is no token to compare).

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { relabelAction } from '../../../../src/modes/discover/label.ts'

const keys = keysFor('nebius.ai')
const LABEL = keys.triggerLabel
const release = (valuesFrom: boolean, labels: Record<string, string>) =>
  toHelmRelease({
    metadata: { namespace: 'apps', name: 'app', resourceVersion: '3', labels },
    spec: { valuesFrom: valuesFrom ? [{ kind: 'ConfigMap', name: 'values' }] : [] },
  })

describe('relabelAction', () => {
  const action = relabelAction(keys)

  it.each([
    ['uses valuesFrom, unlabelled', true, {}, { kind: 'write', write: { action: 'add' } }],
    ['uses valuesFrom, labelled', true, { [LABEL]: 'true' }, { kind: 'skip', skip: 'unchanged' }],
    ['uses valuesFrom, our key with another value', true, { [LABEL]: 'false' }, { kind: 'write', write: { action: 'add' } }],
    ['no valuesFrom, labelled', false, { [LABEL]: 'true' }, { kind: 'write', write: { action: 'remove' } }],
    ['no valuesFrom, our key with another value', false, { [LABEL]: 'no' }, { kind: 'write', write: { action: 'remove' } }],
    ['no valuesFrom, only other labels', false, { team: 'a' }, { kind: 'skip', skip: 'unchanged' }],
  ] as const)('%s', (_name, valuesFrom, labels, expected) => {
    expect(action.decide(release(valuesFrom, labels), 0)).toEqual(expected)
  })

  it('skips a release that is gone', () => {
    expect(action.decide(undefined, 0)).toEqual({ kind: 'skip', skip: 'unchanged' })
  })

  it('patches our label only, on the resourceVersion read', () => {
    expect(action.patch({ action: 'add' }, release(true, {}), 'T')).toEqual({ annotations: {}, labels: { [LABEL]: 'true' }, resourceVersion: '3' })
    expect(action.patch({ action: 'remove' }, release(false, { [LABEL]: 'true' }), 'T')).toEqual({
      annotations: {},
      labels: { [LABEL]: null },
      resourceVersion: '3',
    })
  })

  it.each([
    ['add', { [LABEL]: 'true' }, true],
    ['add', {}, false],
    ['remove', {}, true],
    ['remove', { [LABEL]: 'true' }, false],
  ] as const)('a %s landed when the live labels are %j: %s', (action, labels, landed) => {
    expect(relabelAction(keys).landed?.({ action }, release(true, labels), 'T')).toBe(landed)
  })
})
