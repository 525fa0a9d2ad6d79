// The result of a patch whose outcome is not awaited: one builder for trigger and recover.

import { describe, expect, it } from 'vitest'
import { toHelmRelease } from '../../../src/core/helmrelease.ts'
import { Reason, requestedResult, Status } from '../../../src/engine/result.ts'

const before = toHelmRelease({ metadata: { namespace: 'apps', name: 'web' }, status: { history: [{ version: 7, status: 'deployed' }] } })
const source = { id: 'ConfigMap/apps/web-values' as const, digest: 'sha256:1' as const }
const sent = { planned: { namespace: 'apps', name: 'web', sources: [source] }, before, token: 'tok-1', startedAt: 1_000 }

describe('requestedResult', () => {
  it('says what was requested, from which revision, and how long it took', () => {
    expect(requestedResult(sent, { reason: Reason.RecoveryRequested, what: 'reconcile and reset' }, false, 1_250)).toEqual({
      namespace: 'apps',
      name: 'web',
      sources: [source],
      status: Status.Triggered,
      reason: Reason.RecoveryRequested,
      message: 'reconcile and reset requested; outcome not awaited',
      token: 'tok-1',
      revisionBefore: 7,
      durationMs: 250,
      severity: 'none',
    })
  })

  it('a dry run says nothing was written, whatever was requested', () => {
    const result = requestedResult(sent, { reason: Reason.ReconcileRequested, what: 'reconcile' }, true, 1_000)
    expect(result).toMatchObject({ status: Status.DryRun, reason: Reason.DryRun, message: 'server-side dry run of the patch succeeded; nothing written' })
  })
})
