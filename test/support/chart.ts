// Helm charts made by our own code and a chart repository served on loopback, so
// the tests need neither the helm CLI nor a network. A chart is a gzipped ustar
// archive of `<name>/Chart.yaml`, `<name>/values.yaml` and `<name>/templates/*`.

import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { stringify } from 'yaml'

export interface ChartSpec {
  readonly name: string
  /** Semver, e.g. `0.2.0`. A repository refuses a name and version it already has. */
  readonly version: string
  readonly appVersion?: string
  /** The chart's values.yaml; default `{}`. */
  readonly values?: Readonly<Record<string, unknown>>
  /** File name under templates/ → content; default the demo ConfigMap template. */
  readonly templates?: Readonly<Record<string, string>>
}

export interface ChartFile {
  readonly path: string
  readonly content: string | Uint8Array
}

// Renders the values back into a ConfigMap named after the release, so a test can
// read what Helm deployed; a `fail` value makes rendering fail on purpose.
export const DEMO_CONFIGMAP_TEMPLATE = `{{- if .Values.fail }}{{ fail .Values.fail }}{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  annotations:
    demo.helmrelease-trigger.test/chart-version: {{ .Chart.Version | quote }}
    demo.helmrelease-trigger.test/revision: {{ .Release.Revision | quote }}
data:
  values.yaml: {{ toYaml .Values | quote }}
{{- range $key, $value := .Values }}
{{- if not (or (kindIs "map" $value) (kindIs "slice" $value) (kindIs "invalid" $value)) }}
  {{ $key | quote }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}
`

export function demoChart(version = '0.1.0', values: Record<string, unknown> = {}): ChartSpec {
  return { name: 'demo', version, values }
}

export function chartFiles(spec: ChartSpec): ChartFile[] {
  const chartYaml = {
    apiVersion: 'v2',
    name: spec.name,
    version: spec.version,
    appVersion: spec.appVersion ?? spec.version,
    description: `${spec.name} test chart made by test/support/chart.ts`,
    type: 'application',
  }
  const templates = spec.templates ?? { 'configmap.yaml': DEMO_CONFIGMAP_TEMPLATE }
  return [
    { path: `${spec.name}/Chart.yaml`, content: stringify(chartYaml) },
    { path: `${spec.name}/values.yaml`, content: stringify(spec.values ?? {}) },
    ...Object.entries(templates).map(([file, content]) => ({ path: `${spec.name}/templates/${file}`, content })),
  ]
}

/** The chart as a `.tgz`, byte for byte the same for the same spec. */
export function packageChart(spec: ChartSpec): Buffer {
  return gzipSync(tar(chartFiles(spec)), { level: 9 })
}

// --- ustar -------------------------------------------------------------------

const BLOCK = 512
// A fixed timestamp keeps archives (and so chart digests) reproducible.
const MTIME = Date.UTC(2024, 0, 1) / 1000

/** A POSIX ustar archive of regular files (mode 0644, owner root). */
export function tar(files: readonly ChartFile[]): Buffer {
  const parts: Buffer[] = []
  for (const file of files) {
    const data = typeof file.content === 'string' ? Buffer.from(file.content, 'utf8') : Buffer.from(file.content)
    parts.push(tarHeader(file.path, data.length), data, Buffer.alloc(padding(data.length)))
  }
  parts.push(Buffer.alloc(2 * BLOCK)) // end-of-archive marker
  return Buffer.concat(parts)
}

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK
}

function tarHeader(path: string, size: number): Buffer {
  const { prefix, name } = splitPath(path)
  const header = Buffer.alloc(BLOCK)
  header.write(name, 0, 100, 'utf8')
  header.write(octal(0o644, 8), 100, 'ascii')
  header.write(octal(0, 8), 108, 'ascii') // uid
  header.write(octal(0, 8), 116, 'ascii') // gid
  header.write(octal(size, 12), 124, 'ascii')
  header.write(octal(MTIME, 12), 136, 'ascii')
  header.write(' '.repeat(8), 148, 'ascii') // checksum is computed over spaces here
  header.write('0', 156, 'ascii') // regular file
  header.write('ustar\0', 257, 'ascii')
  header.write('00', 263, 'ascii')
  header.write('root', 265, 'ascii')
  header.write('root', 297, 'ascii')
  header.write(prefix, 345, 155, 'utf8')
  let sum = 0
  for (const byte of header) sum += byte
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii')
  return header
}

// Zero-padded octal digits followed by a NUL, filling the field.
function octal(value: number, field: number): string {
  const digits = value.toString(8)
  if (digits.length > field - 1) throw new Error(`tar: ${value} does not fit a ${field}-byte field`)
  return `${digits.padStart(field - 1, '0')}\0`
}

// ustar keeps names up to 100 bytes, longer ones split at a `/` into prefix (155) + name.
function splitPath(path: string): { prefix: string; name: string } {
  if (Buffer.byteLength(path) <= 100) return { prefix: '', name: path }
  for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i)
    const name = path.slice(i + 1)
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return { prefix, name }
  }
  throw new Error(`tar: path too long for ustar: ${path}`)
}

// --- repository --------------------------------------------------------------

export interface PublishedChart {
  readonly name: string
  readonly version: string
  /** Absolute URL of the `.tgz`. */
  readonly url: string
  /** sha256 hex of the `.tgz`, as in index.yaml. */
  readonly digest: string
}

export interface ChartServer {
  /** Base URL of the repository (ends without a slash), e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  publish(spec: ChartSpec): PublishedChart
  close(): Promise<void>
}

interface StoredChart extends PublishedChart {
  readonly appVersion: string
  readonly created: string
  readonly archive: Buffer
}

/** Path other processes POST a ChartSpec (JSON) to; see publishChartOverHttp. */
export const PUBLISH_PATH = '/-/publish'

/**
 * Serves `index.yaml` and `<name>-<version>.tgz` on 127.0.0.1. Charts are published
 * in process with `publish`, or from another process (a test worker) over HTTP.
 */
export async function startChartServer(options: { port?: number; charts?: readonly ChartSpec[] } = {}): Promise<ChartServer> {
  const charts = new Map<string, StoredChart>()
  let url = ''

  function publish(spec: ChartSpec): PublishedChart {
    validateSpec(spec)
    const file = `${spec.name}-${spec.version}.tgz`
    if (charts.has(file)) throw new ChartConflictError(`chart ${spec.name} ${spec.version} is already published`)
    const archive = packageChart(spec)
    const stored: StoredChart = {
      name: spec.name,
      version: spec.version,
      appVersion: spec.appVersion ?? spec.version,
      url: `${url}/${file}`,
      digest: createHash('sha256').update(archive).digest('hex'),
      created: new Date().toISOString(),
      archive,
    }
    charts.set(file, stored)
    return { name: stored.name, version: stored.version, url: stored.url, digest: stored.digest }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, String(error)))
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    if (req.method === 'POST' && path === PUBLISH_PATH) return publishRequest(req, res)
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed')
    if (path === '/index.yaml') return send(res, 200, indexYaml([...charts.values()]), 'application/x-yaml')
    const chart = charts.get(path.slice(1))
    if (chart) return send(res, 200, chart.archive, 'application/gzip')
    return send(res, 404, 'not found')
  }

  async function publishRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let spec: ChartSpec
    try {
      spec = JSON.parse(await readBody(req)) as ChartSpec
      return send(res, 201, JSON.stringify(publish(spec)), 'application/json')
    } catch (error) {
      const status = error instanceof ChartConflictError ? 409 : 400
      return send(res, status, error instanceof Error ? error.message : String(error))
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  for (const spec of options.charts ?? []) publish(spec)

  return {
    url,
    publish,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** Publishes a chart to a repository served by startChartServer in another process. */
export async function publishChartOverHttp(repoUrl: string, spec: ChartSpec): Promise<PublishedChart> {
  const response = await fetch(`${repoUrl}${PUBLISH_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(spec),
  })
  const body = await response.text()
  if (response.status !== 201) throw new Error(`publishing chart ${spec.name} ${spec.version}: HTTP ${response.status}: ${body}`)
  return JSON.parse(body) as PublishedChart
}

export class ChartConflictError extends Error {
  override name = 'ChartConflictError'
}

export function indexYaml(charts: readonly StoredChart[]): string {
  const entries: Record<string, unknown[]> = {}
  for (const chart of charts) {
    const list = (entries[chart.name] ??= [])
    list.push({
      apiVersion: 'v2',
      name: chart.name,
      version: chart.version,
      appVersion: chart.appVersion,
      type: 'application',
      created: chart.created,
      digest: chart.digest,
      urls: [chart.url],
    })
  }
  return stringify({ apiVersion: 'v1', entries, generated: new Date().toISOString() })
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/

function validateSpec(spec: ChartSpec): void {
  if (typeof spec?.name !== 'string' || !NAME.test(spec.name)) throw new Error(`invalid chart name ${JSON.stringify(spec?.name)}`)
  if (typeof spec.version !== 'string' || !SEMVER.test(spec.version)) {
    throw new Error(`invalid chart version ${JSON.stringify(spec.version)} (expected semver, e.g. 0.2.0)`)
  }
}

function send(res: ServerResponse, status: number, body: string | Buffer, type = 'text/plain'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
