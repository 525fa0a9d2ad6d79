// Recover's release action, pure: decideRecovery mapped onto the write engine (ignored and
// skipped releases are not written, a recovery and a budget reset are), the two patches, when
// each landed, and the Event.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { keysFor } from '../../../../src/core/keys.ts'
import { recoverAction, type RecoveryPolicy } from '../../../../src/modes/recover/action.ts'

const keys = keysFor('nebius.ai')
const policy: RecoveryPolicy = { patterns: [/context deadline exceeded/], maxAttempts: 3, backoffMs: 60_000, keys }
const NOW = Date.UTC(2026, 10, 22, 10, 0, 0)
const release = (ready: 'True' | 'False' | 'Unknown', message: string, annotations: Record<string, string> = {}) =>
  toHelmRelease({
    metadata: { namespace: 'apps', name: 'app', resourceVersion: '5', annotations },
    spec: {},
    status: { conditions: [{ type: 'Ready', status: ready, reason: 'UpgradeFailed', message }] },
  })

describe('recoverAction', () => {
  const action = recoverAction(policy, 'https://ci/run/2')

  it.each([
    ['gone', undefined, { kind: 'skip', skip: { action: 'ignore' } }],
    ['healthy', release('True', ''), { kind: 'skip', skip: { action: 'ignore' } }],
    ['still working', release('Unknown', 'reconciling'), { kind: 'skip', skip: { action: 'ignore' } }],
    ['healthy again after attempts', release('True', '', { [keys.recoverAttempts]: '2' }), { kind: 'write', write: { action: 'reset-budget' } }],
    ['failed on a transient error', release('False', 'context deadline exceeded'), { kind: 'write', write: { action: 'recover', attempt: 1 } }],
    ['failed for good', release('False', 'invalid value'), { kind: 'skip', skip: { action: 'skip', reason: 'NotTransient' } }],
  ] as const)('decides for a release %s', (_name, live, expected) => {
    expect(action.decide(live, NOW)).toMatchObject(expected)
  })

  it('writes requestedAt and resetAt with one token and the attempt; a budget reset removes the annotations', () => {
    const live = release('False', 'context deadline exceeded')
    expect(action.patch({ action: 'recover', attempt: 2, why: 'x' }, live, 'T').annotations).toEqual({
      [keys.requestedAt]: 'T',
      [keys.resetAt]: 'T',
      [keys.recoverAttempts]: '2',
      [keys.recoverAt]: 'T',
    })
    expect(action.patch({ action: 'reset-budget' }, live, 'T')).toEqual({
      annotations: { [keys.recoverAttempts]: null, [keys.recoverAt]: null },
      labels: {},
      resourceVersion: '5',
    })
  })

  it('knows when each landed: the token for a recovery, the annotations gone for a budget reset', () => {
    const recovered = release('False', 'x', { [keys.requestedAt]: 'T' })
    expect(action.landed?.({ action: 'recover', attempt: 1, why: '' }, recovered, 'T')).toBe(true)
    expect(action.landed?.({ action: 'recover', attempt: 1, why: '' }, recovered, 'U')).toBe(false)
    expect(action.landed?.({ action: 'reset-budget' }, release('True', ''), 'T')).toBe(true)
    expect(action.landed?.({ action: 'reset-budget' }, release('True', '', { [keys.recoverAt]: 'x' }), 'T')).toBe(false)
  })

  it('records an Event for a recovery only', () => {
    const live = release('False', 'x')
    expect(action.event?.({ action: 'recover', attempt: 1, why: 'failed with a transient error' }, live, 'T')).toEqual({
      reason: 'RecoveryRequested',
      message: 'Recovery attempt 1 of 3: failed with a transient error; reconcile and reset requested. Run: https://ci/run/2',
    })
    expect(action.event?.({ action: 'reset-budget' }, live, 'T')).toBeUndefined()
  })
})
