// What helm-controller gives Helm for a HelmRelease, read from a rendered commit: the release name
// by helm-controller's rule (targetNamespace prefix, shortening by hash), valuesFrom in the
// release's namespace, encrypted Secrets left out, CRD API versions, and where the chart comes
// from — or one sentence on why the diff cannot render it.

import { describe, expect, it } from 'vitest'
import { isRenderable, releaseInput, type ReleaseInput } from '../../../src/core/release-input.ts'
import type { RenderedObject, RenderedRepository } from '../../../src/core/rendered.ts'

function object(kind: string, namespace: string | undefined, name: string, body: Record<string, unknown> = {}): RenderedObject {
  return {
    apiVersion: 'v1',
    kind,
    namespace,
    name,
    object: { kind, metadata: { name, ...(namespace === undefined ? {} : { namespace }) }, ...body },
    origin: undefined,
    keyOrigins: {},
    kustomization: 'flux-system/apps',
  }
}

function side(...objects: RenderedObject[]): RenderedRepository {
  return { objects, problems: [], notRendered: [], kustomizations: ['flux-system/apps'] }
}

const REPOSITORY = object('HelmRepository', 'apps', 'charts', { spec: { url: 'https://charts.example/' } })
const OURS = new Set(['flux-system/flux-system'])

function hr(spec: Record<string, unknown>): RenderedObject {
  return object('HelmRelease', 'apps', 'web', {
    spec: { chart: { spec: { chart: 'web', version: '1.x', sourceRef: { kind: 'HelmRepository', name: 'charts' } } }, ...spec },
  })
}

function input(...objects: RenderedObject[]): ReleaseInput {
  const found = releaseInput(side(...objects), { namespace: 'apps', name: 'web' }, OURS)
  if (!isRenderable(found)) throw new Error(`not renderable: ${JSON.stringify(found)}`)
  return found
}

function refusal(...objects: RenderedObject[]): string {
  const found = releaseInput(side(...objects), { namespace: 'apps', name: 'web' }, OURS)
  if (found === undefined || !('notRendered' in found)) throw new Error(`expected a refusal: ${JSON.stringify(found)}`)
  return found.notRendered
}

describe('releaseInput', () => {
  it('names the release as helm-controller does: releaseName, else <targetNamespace>-<name>, shortened past 53 characters by hash', () => {
    expect(input(hr({}), REPOSITORY)).toMatchObject({ release: 'web', releaseNamespace: 'apps' })
    expect(input(hr({ targetNamespace: 'prod' }), REPOSITORY)).toMatchObject({ release: 'prod-web', releaseNamespace: 'prod' })
    expect(input(hr({ releaseName: 'site', targetNamespace: 'prod' }), REPOSITORY)).toMatchObject({ release: 'site', releaseNamespace: 'prod' })
    const long = input(hr({ targetNamespace: 'a-very-long-target-namespace-for-the-production-fleet' }), REPOSITORY)
    expect(long.release).toMatch(/^a-very-long-target-namespace-for-the-pro-[0-9a-f]{12}$/)
    expect(long.release).toHaveLength(53)
  })

  it('reads valuesFrom in the release’s own namespace, typed as helm-controller’s API, each object once', () => {
    const values = object('ConfigMap', 'apps', 'web-values', { data: { 'values.yaml': 'a: 1' } })
    const elsewhere = object('ConfigMap', 'prod', 'web-values', { data: { 'values.yaml': 'a: 2' } })
    const valuesFrom = [
      { kind: 'ConfigMap', name: 'web-values' },
      { kind: 'ConfigMap', name: 'web-values', valuesKey: 'n', targetPath: 'replicas', literal: true, optional: true, extra: 'x' },
    ]
    const found = input(hr({ valuesFrom, targetNamespace: 'prod' }), REPOSITORY, values, elsewhere)
    expect(found.valuesFrom).toEqual([
      { kind: 'ConfigMap', name: 'web-values' },
      { kind: 'ConfigMap', name: 'web-values', valuesKey: 'n', targetPath: 'replicas', optional: true, literal: true },
    ])
    expect(found.objects).toEqual([values.object])
    expect(found.readsSecret).toBe(false)
  })

  it('leaves a SOPS-encrypted Secret out, reads its reference as optional, and says the render is partial', () => {
    const secret = object('Secret', 'apps', 'web-secret', { data: { 'values.yaml': 'ENC[AES256_GCM,data:x]' }, sops: { version: '3' } })
    const found = input(hr({ valuesFrom: [{ kind: 'Secret', name: 'web-secret' }] }), REPOSITORY, secret)
    expect(found.objects).toEqual([])
    expect(found.valuesFrom).toEqual([{ kind: 'Secret', name: 'web-secret', optional: true }])
    expect(found.readsSecret).toBe(true)
    expect(found.partial).toMatch(/encrypted Secret 'web-secret'/)
  })

  it('gives the templates the API versions of the repository’s CRDs (served ones only)', () => {
    const crd = object('CustomResourceDefinition', undefined, 'servicemonitors.monitoring.coreos.com', {
      spec: {
        group: 'monitoring.coreos.com',
        names: { kind: 'ServiceMonitor' },
        versions: [
          { name: 'v1', served: true },
          { name: 'v1alpha1', served: false },
        ],
      },
    })
    expect(input(hr({}), REPOSITORY, crd).apiVersions).toEqual(['monitoring.coreos.com/v1', 'monitoring.coreos.com/v1/ServiceMonitor'])
  })

  it('finds the chart: an HTTP Helm repository, a HelmChart through chartRef, this repository’s checkout', () => {
    expect(input(hr({}), REPOSITORY).chart).toEqual({ kind: 'helm', url: 'https://charts.example/', chart: 'web', version: '1.x', source: 'apps/charts' })
    const helmChart = object('HelmChart', 'apps', 'web', { spec: { chart: 'web', version: '2.0.0', sourceRef: { kind: 'HelmRepository', name: 'charts' } } })
    expect(input(hr({ chart: undefined, chartRef: { kind: 'HelmChart', name: 'web' } }), REPOSITORY, helmChart).chart).toMatchObject({
      kind: 'helm',
      version: '2.0.0',
    })
    const git = { chart: { spec: { chart: './charts/web/', sourceRef: { kind: 'GitRepository', name: 'flux-system', namespace: 'flux-system' } } } }
    expect(input(hr(git)).chart).toEqual({ kind: 'git', path: 'charts/web', reconcileStrategy: 'ChartVersion' })
  })

  it('finds an OCI chart: an OCI HelmRepository’s <url>/<chart> at the version range, an OCIRepository by chartRef with its digest tracked', () => {
    const oci = object('HelmRepository', 'apps', 'charts', { spec: { url: 'oci://ghcr.io/acme/charts/', type: 'oci' } })
    expect(input(hr({}), oci).chart).toEqual({
      kind: 'oci',
      url: 'oci://ghcr.io/acme/charts/web',
      sourceUrl: 'oci://ghcr.io/acme/charts/',
      ref: { semver: '1.x' },
      insecure: false,
      trackDigest: false,
      source: 'apps/charts',
    })
    const repository = object('OCIRepository', 'apps', 'web', { spec: { url: 'oci://127.0.0.1:5000/web', ref: { tag: '1.0.0' }, insecure: true } })
    expect(input(hr({ chart: undefined, chartRef: { kind: 'OCIRepository', name: 'web' } }), repository).chart).toEqual({
      kind: 'oci',
      url: 'oci://127.0.0.1:5000/web',
      sourceUrl: 'oci://127.0.0.1:5000/web',
      ref: { tag: '1.0.0' },
      insecure: true,
      trackDigest: true,
      source: 'apps/web',
    })
    const aws = object('OCIRepository', 'apps', 'web', { spec: { url: 'oci://x.dkr.ecr.aws/web', provider: 'aws' } })
    expect(refusal(hr({ chart: undefined, chartRef: { kind: 'OCIRepository', name: 'web' } }), aws)).toContain('needs credentials from the cluster')
  })

  it('says in one sentence why a chart is not rendered: another Git repository, a path out of it, OCI, credentials, valuesFiles, a missing source', () => {
    const gitChart = (chart: string, name = 'flux-system') =>
      hr({ chart: { spec: { chart, sourceRef: { kind: 'GitRepository', name, namespace: 'flux-system' } } } })
    expect(refusal(gitChart('./charts/web', 'other'))).toBe("its chart is in the GitRepository 'flux-system/other', another repository than this one")
    expect(refusal(gitChart('../../etc'))).toBe("its chart path '../../etc' leaves the GitRepository's root")
    expect(refusal(hr({}), object('HelmRepository', 'apps', 'charts', { spec: { url: 'https://x', secretRef: { name: 'creds' } } }))).toContain(
      'credentials from a cluster Secret, which are never read',
    )
    expect(
      refusal(hr({ chart: { spec: { chart: 'web', valuesFiles: ['a.yaml'], sourceRef: { kind: 'HelmRepository', name: 'charts' } } } }), REPOSITORY),
    ).toContain('valuesFiles')
    expect(refusal(hr({}))).toBe("its HelmRepository 'apps/charts' is not in the repository")
    expect(refusal(hr({ chart: undefined, chartRef: { kind: 'OCIRepository', name: 'web' } }))).toContain('OCIRepository')
    expect(releaseInput(side(REPOSITORY), { namespace: 'apps', name: 'web' }, OURS)).toBeUndefined()
  })
})
