// What helm-controller gives Helm for one HelmRelease at one commit, read from the repository as
// Flux applies it: the release name and namespace by helm-controller's rule, the values and the
// ConfigMaps/Secrets valuesFrom reads (in the release's own namespace), the post-renderers, and
// where the chart comes from. Pure: the chart is fetched and the release rendered elsewhere
// (src/render/release-render.ts). A SOPS-encrypted Secret is never given: the release is
// rendered without it and said to be partial.

import { storageTarget } from './helm-storage.ts'
import { isEncrypted } from './manifest.ts'
import type { ReleaseRef } from './model.ts'
import type { RenderedObject, RenderedRepository } from './rendered.ts'
import { quoted } from '../lib/untrusted.ts'

type Json = Readonly<Record<string, unknown>>

/** Where a release's chart comes from, once its source objects are read. */
export type ChartLocation =
  /** A chart directory in this repository's checkout (a GitRepository that fetches it). */
  | { readonly kind: 'git'; readonly path: string; readonly reconcileStrategy: string }
  /** A chart from a Helm repository's HTTP index. */
  | { readonly kind: 'helm'; readonly url: string; readonly chart: string; readonly version: string; readonly source: string }
  /**
   * A chart in an OCI registry: an OCIRepository (chartRef; its digest tracked in the chart
   * version, as helm-controller does) or an OCI HelmRepository's `<url>/<chart>` at a version.
   */
  | {
      readonly kind: 'oci'
      /** `oci://host[:port]/path`: the repository holding the chart. */
      readonly url: string
      /** The chart source object's URL (the fork rule compares it with the base commit's). */
      readonly sourceUrl: string
      readonly ref: { readonly tag?: string; readonly semver?: string; readonly digest?: string }
      /** Plain HTTP (`spec.insecure`). */
      readonly insecure: boolean
      /** The artifact revision's digest goes into the chart version (OCIRepository). */
      readonly trackDigest: boolean
      readonly source: string
    }

/** One spec.valuesFrom entry, as helm-controller's API spells it. */
export interface ValuesFromEntry {
  readonly kind: string
  readonly name: string
  readonly valuesKey?: string
  readonly targetPath?: string
  readonly optional?: boolean
  readonly literal?: boolean
}

export interface ReleaseInput extends ReleaseRef {
  readonly release: string
  readonly releaseNamespace: string
  readonly values: Json
  readonly valuesFrom: readonly ValuesFromEntry[]
  /** The ConfigMaps and Secrets valuesFrom names that the repository holds (encrypted Secrets left out). */
  readonly objects: readonly Json[]
  readonly postRenderers: readonly unknown[]
  readonly commonMetadata: unknown
  readonly postRenderStrategy: string | undefined
  readonly skipSchemaValidation: boolean
  readonly chart: ChartLocation
  /** The release reads a Secret: nothing of its diff shows a value. */
  readonly readsSecret: boolean
  /** Rendered without some of its values, and why (an encrypted Secret). */
  readonly partial: string | undefined
  /** API versions the repository's CustomResourceDefinitions serve (`group/version`, `group/version/Kind`). */
  readonly apiVersions: readonly string[]
}

/** Why a release cannot be rendered at one commit: one sentence. */
export interface NotRenderable {
  readonly notRendered: string
}

export function isRenderable(input: ReleaseInput | NotRenderable | undefined): input is ReleaseInput {
  return input !== undefined && !('notRendered' in input)
}

/** The release's input at one commit; undefined when the commit has no such HelmRelease. `thisRepository`: the GitRepositories (`ns/name`) that fetch this repository. */
export function releaseInput(side: RenderedRepository, ref: ReleaseRef, thisRepository: ReadonlySet<string>): ReleaseInput | NotRenderable | undefined {
  const object = side.objects.find((o) => o.kind === 'HelmRelease' && o.namespace === ref.namespace && o.name === ref.name)
  if (object === undefined) return undefined
  const spec = record(object.object['spec'])
  const chart = chartLocation(side, ref, spec, thisRepository)
  if ('notRendered' in chart) return chart
  const target = storageTarget(object.object)
  const valuesFrom = list(spec['valuesFrom']).map(record).map(valuesFromEntry)
  const objects: Json[] = []
  const encrypted: string[] = []
  let readsSecret = false
  for (const entry of valuesFrom) {
    const { kind, name } = entry
    if (kind === 'Secret') readsSecret = true
    const found = side.objects.find((o) => o.kind === kind && o.namespace === ref.namespace && o.name === name)
    if (found === undefined || objects.includes(found.object)) continue
    if (kind === 'Secret' && isEncrypted(found.object)) encrypted.push(name)
    else objects.push(found.object)
  }
  const upgrade = record(spec['upgrade'])
  return {
    ...ref,
    release: target.releaseName,
    releaseNamespace: target.releaseNamespace,
    values: record(spec['values']),
    // An encrypted Secret is read as if optional and absent: the rest still renders.
    valuesFrom: valuesFrom.map((entry) => (entry.kind === 'Secret' && encrypted.includes(entry.name) ? { ...entry, optional: true } : entry)),
    objects,
    postRenderers: list(spec['postRenderers']),
    commonMetadata: spec['commonMetadata'],
    postRenderStrategy: typeof spec['postRenderStrategy'] === 'string' ? spec['postRenderStrategy'] : undefined,
    skipSchemaValidation: upgrade['disableSchemaValidation'] === true,
    chart,
    readsSecret,
    partial:
      encrypted.length === 0
        ? undefined
        : `rendered without the values of the encrypted Secret ${encrypted.map((n) => quoted(n)).join(', ')} (SOPS: decrypted only in the cluster)`,
    apiVersions: crdVersions(side.objects),
  }
}

function valuesFromEntry(entry: Json): ValuesFromEntry {
  const out: { -readonly [K in keyof ValuesFromEntry]: ValuesFromEntry[K] } = { kind: text(entry['kind']), name: text(entry['name']) }
  if (typeof entry['valuesKey'] === 'string') out.valuesKey = entry['valuesKey']
  if (typeof entry['targetPath'] === 'string') out.targetPath = entry['targetPath']
  if (entry['optional'] === true) out.optional = true
  if (entry['literal'] === true) out.literal = true
  return out
}

function chartLocation(side: RenderedRepository, ref: ReleaseRef, spec: Json, thisRepository: ReadonlySet<string>): ChartLocation | NotRenderable {
  const chartRef = record(spec['chartRef'])
  if (Object.keys(chartRef).length > 0) {
    const kind = text(chartRef['kind'])
    const namespace = text(chartRef['namespace']) || ref.namespace
    const name = text(chartRef['name'])
    if (kind === 'OCIRepository') return ociRepositoryLocation(side, namespace, name)
    if (kind !== 'HelmChart')
      return { notRendered: `its chart comes from the ${quoted(kind)} ${quoted(`${namespace}/${name}`)} (chartRef), which is not fetched for a diff yet` }
    const helmChart = find(side, 'HelmChart', namespace, name)
    if (helmChart === undefined)
      return { notRendered: `its chartRef names the HelmChart ${quoted(`${namespace}/${name}`)}, which the repository does not define` }
    return templateLocation(side, namespace, record(helmChart.object['spec']), thisRepository)
  }
  const template = record(record(spec['chart'])['spec'])
  if (Object.keys(template).length === 0) return { notRendered: 'it names no chart (spec.chart.spec or spec.chartRef)' }
  return templateLocation(side, ref.namespace, template, thisRepository)
}

/** A HelmChart's spec (or a HelmRelease's chart template): chart, version, sourceRef, valuesFiles. */
function templateLocation(side: RenderedRepository, namespace: string, spec: Json, thisRepository: ReadonlySet<string>): ChartLocation | NotRenderable {
  const sourceRef = record(spec['sourceRef'])
  const kind = text(sourceRef['kind'])
  const sourceNamespace = text(sourceRef['namespace']) || namespace
  const name = text(sourceRef['name'])
  const id = `${sourceNamespace}/${name}`
  const chart = text(spec['chart'])
  const valuesFiles = list(spec['valuesFiles']).filter((f): f is string => typeof f === 'string')
  if (valuesFiles.length > 0) return { notRendered: `its chart's values come from valuesFiles, which the diff does not merge yet` }
  if (kind === 'GitRepository') {
    const path = normalPath(chart)
    if (path === undefined) return { notRendered: `its chart path ${quoted(chart)} leaves the GitRepository's root` }
    if (!thisRepository.has(id)) return { notRendered: `its chart is in the GitRepository ${quoted(id)}, another repository than this one` }
    return { kind: 'git', path, reconcileStrategy: text(spec['reconcileStrategy']) || 'ChartVersion' }
  }
  if (kind !== 'HelmRepository') return { notRendered: `its chart comes from the ${quoted(kind)} ${quoted(id)}, which is not fetched for a diff yet` }
  const repository = find(side, 'HelmRepository', sourceNamespace, name)
  if (repository === undefined) return { notRendered: `its HelmRepository ${quoted(id)} is not in the repository` }
  const repositorySpec = record(repository.object['spec'])
  const url = text(repositorySpec['url'])
  if (repositorySpec['secretRef'] !== undefined || repositorySpec['certSecretRef'] !== undefined)
    return { notRendered: `its HelmRepository ${quoted(id)} needs credentials from a cluster Secret, which are never read` }
  if (text(repositorySpec['type']) === 'oci' || url.startsWith('oci://')) {
    if (!url.startsWith('oci://')) return { notRendered: `its OCI HelmRepository ${quoted(id)} has no oci:// URL` }
    const version = text(spec['version']) || '*'
    return {
      kind: 'oci',
      url: `${url.replace(/\/+$/, '')}/${chart}`,
      sourceUrl: url,
      ref: { semver: version },
      insecure: repositorySpec['insecure'] === true,
      trackDigest: false,
      source: id,
    }
  }
  if (!/^https?:\/\//.test(url)) return { notRendered: `its HelmRepository ${quoted(id)} has no http(s) URL` }
  return { kind: 'helm', url, chart, version: text(spec['version']) || '*', source: id }
}

function ociRepositoryLocation(side: RenderedRepository, namespace: string, name: string): ChartLocation | NotRenderable {
  const id = `${namespace}/${name}`
  const repository = find(side, 'OCIRepository', namespace, name)
  if (repository === undefined) return { notRendered: `its chartRef names the OCIRepository ${quoted(id)}, which the repository does not define` }
  const spec = record(repository.object['spec'])
  const url = text(spec['url'])
  if (!url.startsWith('oci://')) return { notRendered: `its OCIRepository ${quoted(id)} has no oci:// URL` }
  if (spec['secretRef'] !== undefined || spec['certSecretRef'] !== undefined || (text(spec['provider']) !== '' && text(spec['provider']) !== 'generic'))
    return { notRendered: `its OCIRepository ${quoted(id)} needs credentials from the cluster, which are never read` }
  if (spec['verify'] !== undefined) return { notRendered: `its OCIRepository ${quoted(id)} verifies signatures, which the diff does not yet` }
  const ref = record(spec['ref'])
  const pick = (key: string): Record<string, string> => (typeof ref[key] === 'string' && ref[key] !== '' ? { [key]: ref[key] } : {})
  return {
    kind: 'oci',
    url,
    sourceUrl: url,
    ref: { ...pick('tag'), ...pick('semver'), ...pick('digest') },
    insecure: spec['insecure'] === true,
    trackDigest: true,
    source: id,
  }
}

/** Every served version of the repository's CustomResourceDefinitions, as Helm's Capabilities.APIVersions lists them. */
function crdVersions(objects: readonly RenderedObject[]): string[] {
  const out = new Set<string>()
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition') continue
    const spec = record(o.object['spec'])
    const group = text(spec['group'])
    const kind = text(record(spec['names'])['kind'])
    for (const v of list(spec['versions']).map(record)) {
      if (v['served'] === false || text(v['name']) === '') continue
      out.add(`${group}/${text(v['name'])}`)
      if (kind !== '') out.add(`${group}/${text(v['name'])}/${kind}`)
    }
  }
  return [...out].sort()
}

function find(side: RenderedRepository, kind: string, namespace: string, name: string): RenderedObject | undefined {
  return side.objects.find((o) => o.kind === kind && o.namespace === namespace && o.name === name)
}

/** `./charts/app/` → `charts/app`; undefined when it climbs out with `..`. */
function normalPath(path: string): string | undefined {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.')
  return parts.includes('..') ? undefined : parts.join('/')
}

function record(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
}
function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : []
}
function text(v: unknown): string {
  return typeof v === 'string' ? v : ''
}
