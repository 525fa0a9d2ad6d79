// Whether source-controller has fetched the chart a commit names, and whether helm-controller
// has attempted it: the pure rules over an OCIRepository or HelmChart as the API returns it.

import { describe, expect, it } from 'vitest'
import { chartSourceState, hasAttempted, revisionDigest, toChartSource } from '../../../src/core/chart-source.ts'
import { toHelmRelease } from '../../../src/core/helmrelease.ts'
import { chartChange } from '../../../test/support/reports.ts'

const DIGEST = `sha256:${'e'.repeat(64)}`
const change = chartChange('0.2.0')

interface Live {
  readonly tag?: string
  readonly generation?: number
  readonly observedGeneration?: number
  /** [status, message, the generation it judged] */
  readonly ready?: readonly [string, string, number]
  readonly revision?: string
}

function live(l: Live = {}) {
  return toChartSource({
    metadata: { name: 'demo', namespace: 'apps', generation: l.generation ?? 2 },
    spec: { url: 'oci://registry.example/charts/demo', ref: { tag: l.tag ?? '0.2.0' }, interval: '10m' },
    status: {
      observedGeneration: l.observedGeneration ?? 2,
      conditions: l.ready === undefined ? [] : [{ type: 'Ready', status: l.ready[0], reason: 'r', message: l.ready[1], observedGeneration: l.ready[2] }],
      ...(l.revision === undefined ? {} : { artifact: { revision: l.revision, digest: 'sha256:tarball' } }),
    },
  })
}

describe('chartSourceState', () => {
  it('is fetched once Ready=True judges the generation holding the commit, with what helm-controller will record of it', () => {
    // An OCIRepository's artifact: helm-controller records the digest of the revision.
    expect(chartSourceState(live({ ready: ['True', 'stored artifact', 2], revision: `0.2.0@${DIGEST}` }), change)).toEqual({
      kind: 'fetched',
      revision: `0.2.0@${DIGEST}`,
      attempt: { kind: 'OCIRepository', value: DIGEST },
    })
    // A HelmChart's: the chart version, which is its revision.
    const helmChart = chartChange('0.2.0', { kind: 'HelmChart', fields: ['spec.version'], expect: [{ path: ['version'], value: '0.2.0' }] })
    const chart = toChartSource({
      metadata: { generation: 3 },
      spec: { chart: 'demo', version: '0.2.0', sourceRef: { kind: 'HelmRepository', name: 'charts' } },
      status: {
        observedGeneration: 3,
        conditions: [{ type: 'Ready', status: 'True', message: 'pulled', observedGeneration: 3 }],
        artifact: { revision: '0.2.0' },
      },
    })
    expect(chartSourceState(chart, helmChart)).toEqual({ kind: 'fetched', revision: '0.2.0', attempt: { kind: 'HelmChart', value: '0.2.0' } })
  })

  it("reads the release's last attempt where helm-controller records it for the kind", () => {
    const release = toHelmRelease({ status: { lastAttemptedRevision: '0.2.0', lastAttemptedRevisionDigest: DIGEST } })
    expect(hasAttempted(release, { kind: 'OCIRepository', value: DIGEST })).toBe(true)
    expect(hasAttempted(release, { kind: 'HelmChart', value: '0.2.0' })).toBe(true)
    expect(hasAttempted(release, { kind: 'HelmChart', value: DIGEST })).toBe(false)
  })

  it('is pending while the commit is not applied, the generation not judged, or the fetch not finished', () => {
    const pending = (l: Live) => chartSourceState(live(l), change)
    expect(chartSourceState(undefined, change)).toEqual({ kind: 'pending', why: 'not in the cluster' })
    expect(pending({ tag: '0.1.0', ready: ['True', 'stored', 1], generation: 1, observedGeneration: 1 })).toMatchObject({
      kind: 'pending',
      why: 'new spec not applied yet (spec.ref.tag)',
    })
    // Ready=False written for the previous generation says nothing of this commit.
    expect(pending({ ready: ['False', 'old failure', 1], observedGeneration: 1 })).toMatchObject({ kind: 'pending' })
    expect(pending({ ready: ['Unknown', 'reconciliation in progress', 2], observedGeneration: 1 })).toMatchObject({ kind: 'pending' })
    expect(pending({ ready: ['True', 'stored', 2], observedGeneration: 1, revision: `0.1.0@${DIGEST}` })).toMatchObject({ kind: 'pending' })
  })

  it("fails with source-controller's message when Ready=False judges this generation, even before observedGeneration moves", () => {
    expect(chartSourceState(live({ ready: ['False', 'MANIFEST_UNKNOWN: manifest unknown', 2], observedGeneration: 1 }), change)).toEqual({
      kind: 'failed',
      message: 'MANIFEST_UNKNOWN: manifest unknown',
    })
  })

  it('reads the digest after the last @ of a revision', () => {
    expect(revisionDigest(`latest@${DIGEST}`)).toBe(DIGEST)
    expect(revisionDigest(DIGEST)).toBe(DIGEST)
  })
})
