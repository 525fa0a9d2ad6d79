// Pushes a Helm chart to the local cluster's OCI registry as `helm push` lays it out: a
// manifest whose config is the chart's metadata and whose one layer is the chart's .tgz, under
// the tag of its version. Speaks the OCI distribution API itself (a monolithic blob upload,
// then the manifest), so the tests need no helm CLI.

import { createHash } from 'node:crypto'
import { packageChart, type ChartSpec } from './chart.ts'

export const HELM_CONFIG_MEDIA_TYPE = 'application/vnd.cncf.helm.config.v1+json'
export const HELM_CHART_MEDIA_TYPE = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip'
const MANIFEST_MEDIA_TYPE = 'application/vnd.oci.image.manifest.v1+json'

export interface PushedChart {
  /** What an OCIRepository's `url` names: `oci://<host:port>/<name>`. */
  readonly url: string
  /** The chart's version, pushed as the tag. */
  readonly tag: string
  /** sha256:… of the manifest. */
  readonly digest: string
}

/** Pushes `spec` to `registryUrl` (e.g. http://127.0.0.1:41237) as `<spec.name>:<spec.version>`. */
export async function pushChart(registryUrl: string, spec: ChartSpec): Promise<PushedChart> {
  const base = registryUrl.replace(/\/$/, '')
  const config = Buffer.from(
    JSON.stringify({ apiVersion: 'v2', name: spec.name, version: spec.version, appVersion: spec.appVersion ?? spec.version, type: 'application' }),
  )
  const chart = packageChart(spec)
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST_MEDIA_TYPE,
      config: { mediaType: HELM_CONFIG_MEDIA_TYPE, digest: await uploadBlob(base, spec.name, config), size: config.length },
      layers: [{ mediaType: HELM_CHART_MEDIA_TYPE, digest: await uploadBlob(base, spec.name, chart), size: chart.length }],
      annotations: { 'org.opencontainers.image.title': spec.name, 'org.opencontainers.image.version': spec.version },
    }),
  )
  const put = await fetch(`${base}/v2/${spec.name}/manifests/${spec.version}`, {
    method: 'PUT',
    headers: { 'content-type': MANIFEST_MEDIA_TYPE },
    body: manifest,
  })
  await expectStatus(put, 201, `pushing the manifest of ${spec.name}:${spec.version}`)
  return { url: `oci://${new URL(base).host}/${spec.name}`, tag: spec.version, digest: digestOf(manifest) }
}

async function uploadBlob(base: string, repository: string, content: Buffer): Promise<string> {
  const digest = digestOf(content)
  const start = await fetch(`${base}/v2/${repository}/blobs/uploads/`, { method: 'POST' })
  await expectStatus(start, 202, `starting a blob upload to ${repository}`)
  const location = new URL(start.headers.get('location') ?? '', base)
  location.searchParams.set('digest', digest)
  const put = await fetch(location, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: content })
  await expectStatus(put, 201, `uploading blob ${digest} to ${repository}`)
  return digest
}

function digestOf(content: Buffer): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}`
}

async function expectStatus(response: Response, status: number, what: string): Promise<void> {
  const body = await response.text()
  if (response.status !== status) throw new Error(`${what}: the registry answered ${response.status} (expected ${status}): ${body.slice(0, 300)}`)
}
