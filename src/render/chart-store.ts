// Charts from Helm repositories (HTTP index) and OCI registries (oci-registry.ts), fetched once per run and kept in a directory a
// workflow can keep between runs (actions/cache): an archive is stored under the hash of its
// repository URL, chart name, version and index digest, and checked against that digest when the
// index gives one. The index is fetched only when the version is a range; the version is picked
// by source-controller's rule in the sandbox (Helm's IndexFile.Get, Masterminds semver). No
// credentials: a repository that needs them is not fetched (release-input.ts says so).

import { createHash } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parse } from 'yaml'
import type { ChartLocation } from '../core/release-input.ts'
import { boundedBody } from '../lib/bounded-body.ts'
import { messageOf } from '../lib/errors.ts'
import { quoted } from '../lib/untrusted.ts'
import type { Sandbox } from '../sandbox/sandbox.ts'
import { ociRegistry, type OciLocation } from './oci-registry.ts'

/** An index past this is refused: Helm indexes of that size are a bomb, not a repository. */
const MAX_INDEX_BYTES = 64 * 1024 * 1024
const MAX_CHART_BYTES = 32 * 1024 * 1024
const FETCH_TIMEOUT_MS = 60_000

export interface FetchedChart {
  /** The chart archive (.tgz). */
  readonly archive: Uint8Array
  readonly version: string
  /** An OCIRepository's artifact revision (`<tag>@sha256:<hex>`), which helm-controller tracks in the chart version. */
  readonly sourceRevision?: string
}

export interface ChartStore {
  /** The chart a Helm repository location names, or why it cannot be had. */
  fetch(location: Extract<ChartLocation, { kind: 'helm' | 'oci' }>): Promise<FetchedChart | { readonly unavailable: string }>
}

export interface ChartStoreOptions {
  /** Where archives are kept between runs. */
  readonly cacheDir: string
  readonly sandbox: Pick<Sandbox, 'chartVersion'>
  /** Replaced in tests of hostile servers; Node's fetch otherwise. */
  readonly fetch?: typeof fetch
  /** Where a registry login's Docker config is found (DOCKER_CONFIG, HOME): the process's environment by default. */
  readonly env?: Readonly<Record<string, string | undefined>>
}

interface IndexEntry {
  readonly version: string
  readonly urls: readonly string[]
  readonly digest: string | undefined
}

export function chartStore(options: ChartStoreOptions): ChartStore {
  const get = options.fetch ?? fetch
  const indexes = new Map<string, Promise<Map<string, IndexEntry[]>>>()
  const charts = new Map<string, Promise<FetchedChart | { unavailable: string }>>()

  const indexOf = (url: string): Promise<Map<string, IndexEntry[]>> => {
    let found = indexes.get(url)
    if (found === undefined) {
      found = download(get, `${url.replace(/\/+$/, '')}/index.yaml`, MAX_INDEX_BYTES).then((bytes) => parseIndex(new TextDecoder().decode(bytes)))
      indexes.set(url, found)
    }
    return found
  }

  const resolve = async (location: Extract<ChartLocation, { kind: 'helm' }>): Promise<FetchedChart | { unavailable: string }> => {
    const exact = /^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(location.version)
    // A pinned version cached by an earlier run needs no index.
    if (exact) {
      const cached = await readCached(options.cacheDir, cacheKey(location.url, location.chart, location.version, undefined))
      if (cached !== undefined) return { archive: cached, version: location.version }
    }
    let index: Map<string, IndexEntry[]>
    try {
      index = await indexOf(location.url)
    } catch (error) {
      return { unavailable: `the index of ${quoted(location.url)} could not be read: ${messageOf(error)}` }
    }
    const entries = index.get(location.chart) ?? []
    if (entries.length === 0) return { unavailable: `the Helm repository ${quoted(location.url)} has no chart ${quoted(location.chart)}` }
    const picked = await options.sandbox.chartVersion({ versions: entries.map((e) => e.version), constraint: location.version })
    const entry = entries.find((e) => e.version === picked.version)
    if (entry === undefined) return { unavailable: `chart ${quoted(location.chart)}: ${picked.error ?? 'no version picked'}` }
    const key = cacheKey(location.url, location.chart, entry.version, entry.digest)
    const cached = await readCached(options.cacheDir, key)
    if (cached !== undefined && (entry.digest === undefined || sha256(cached) === entry.digest)) return { archive: cached, version: entry.version }
    const first = entry.urls[0]
    if (first === undefined) return { unavailable: `chart ${quoted(`${location.chart}@${entry.version}`)} has no URL in the index` }
    let archive: Uint8Array
    try {
      archive = await download(get, new URL(first, `${location.url.replace(/\/+$/, '')}/`).toString(), MAX_CHART_BYTES)
    } catch (error) {
      return { unavailable: `chart ${quoted(`${location.chart}@${entry.version}`)} could not be downloaded: ${messageOf(error)}` }
    }
    if (entry.digest !== undefined && sha256(archive) !== entry.digest)
      return { unavailable: `chart ${quoted(`${location.chart}@${entry.version}`)}: its archive does not match the index's digest` }
    await writeCached(options.cacheDir, key, archive)
    // Later runs pinning this version find it without the index.
    await writeCached(options.cacheDir, cacheKey(location.url, location.chart, entry.version, undefined), archive)
    return { archive, version: entry.version }
  }

  const registry = ociRegistry(get, options.env)
  const resolveOci = async (location: OciLocation): Promise<FetchedChart | { unavailable: string }> => {
    try {
      const artifact = await registry.resolve(
        location,
        async (tags, constraint) => (await options.sandbox.chartVersion({ versions: tags, constraint })).version,
      )
      const revision = artifact.tag === undefined ? artifact.digest : `${artifact.tag}@${artifact.digest}`
      const key = cacheKey(location.url, '', '', artifact.layer.digest)
      const cached = await readCached(options.cacheDir, key)
      const archive =
        cached !== undefined && `sha256:${sha256(cached)}` === artifact.layer.digest
          ? cached
          : await registry.blob(location, artifact.layer.digest, MAX_CHART_BYTES)
      if (cached === undefined) await writeCached(options.cacheDir, key, archive)
      return { archive, version: artifact.tag ?? artifact.digest, ...(location.trackDigest ? { sourceRevision: revision } : {}) }
    } catch (error) {
      return { unavailable: `the chart at ${quoted(location.url)} could not be fetched: ${messageOf(error)}` }
    }
  }

  return {
    fetch: (location) => {
      const id = location.kind === 'helm' ? `${location.url}\0${location.chart}\0${location.version}` : `${location.url}\0${JSON.stringify(location.ref)}`
      let found = charts.get(id)
      if (found === undefined) {
        found = location.kind === 'helm' ? resolve(location) : resolveOci(location)
        charts.set(id, found)
      }
      return found
    },
  }
}

function parseIndex(text: string): Map<string, IndexEntry[]> {
  const doc: unknown = parse(text, { maxAliasCount: 100, uniqueKeys: false })
  const entries = isRecord(doc) && isRecord(doc['entries']) ? doc['entries'] : {}
  const out = new Map<string, IndexEntry[]>()
  for (const [name, versions] of Object.entries(entries)) {
    if (!Array.isArray(versions)) continue
    out.set(
      name,
      versions.filter(isRecord).flatMap((v) => {
        const version = v['version']
        if (typeof version !== 'string') return []
        const urls = Array.isArray(v['urls']) ? v['urls'].filter((u): u is string => typeof u === 'string') : []
        const digest = typeof v['digest'] === 'string' && /^[0-9a-f]{64}$/.test(v['digest']) ? v['digest'] : undefined
        return [{ version, urls, digest }]
      }),
    )
  }
  return out
}

/** GET with a deadline and a size bound; only http(s). */
async function download(get: typeof fetch, url: string, limit: number): Promise<Uint8Array> {
  if (!/^https?:\/\//.test(url)) throw new Error(`${quoted(url)} is not an http(s) URL`)
  const response = await get(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'follow' })
  if (!response.ok) throw new Error(`HTTP ${response.status}`)
  return boundedBody(response, limit)
}

function cacheKey(url: string, chart: string, version: string, digest: string | undefined): string {
  return sha256(new TextEncoder().encode([url, chart, version, digest ?? ''].join('\0')))
}

async function readCached(dir: string, key: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(join(dir, `${key}.tgz`))
  } catch {
    return undefined
  }
}

async function writeCached(dir: string, key: string, archive: Uint8Array): Promise<void> {
  try {
    await mkdir(dir, { recursive: true })
    const tmp = join(dir, `${key}.${process.pid}.tmp`)
    await writeFile(tmp, archive)
    await rename(tmp, join(dir, `${key}.tgz`))
  } catch {
    // A cache that cannot be written costs a download next run, nothing else.
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
