// A chart source (an OCIRepository or a HelmChart a release's chartRef names) as read from the
// API, and the pure rules that say whether source-controller has fetched the artifact a commit
// asked for (the first half of a chart upgrade) and whether helm-controller has attempted it
// (the second). Built by checking each field: the API may hand us any shape.

import type { HelmRelease } from './helmrelease.ts'
import type { ChartChange, ChartSourceKind } from './model.ts'
import { specHolds } from './plan-rendered.ts'

export const CHART_SOURCE_APIS: Readonly<Record<ChartSourceKind, { readonly group: string; readonly version: string; readonly plural: string }>> = {
  OCIRepository: { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'ocirepositories' },
  HelmChart: { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'helmcharts' },
}

export interface ChartSource {
  readonly generation: number
  readonly spec: Readonly<Record<string, unknown>>
  readonly observedGeneration: number
  /** Ready's status, message and the generation it was written for (Flux sets it on every condition). */
  readonly ready: { readonly status: string; readonly message: string; readonly observedGeneration: number } | undefined
  /** `status.artifact.revision`: `<tag>@sha256:<hex>` for an OCIRepository, the chart version for a HelmChart. */
  readonly revision: string | undefined
}

type Json = Readonly<Record<string, unknown>>

function record(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
}
function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}
function text(v: unknown): string {
  return typeof v === 'string' ? v : ''
}

export function toChartSource(object: unknown): ChartSource {
  const o = record(object)
  const status = record(o['status'])
  const conditions = Array.isArray(status['conditions']) ? status['conditions'].map(record) : []
  const ready = conditions.find((c) => c['type'] === 'Ready')
  const revision = text(record(status['artifact'])['revision'])
  return {
    generation: num(record(o['metadata'])['generation']),
    spec: record(o['spec']),
    observedGeneration: num(status['observedGeneration']),
    ready:
      ready === undefined
        ? undefined
        : { status: text(ready['status']), message: text(ready['message']), observedGeneration: num(ready['observedGeneration']) },
    revision: revision === '' ? undefined : revision,
  }
}

/**
 * The chart a release last attempted, as helm-controller records it for this kind of source:
 * an OCIRepository artifact's digest (`lastAttemptedRevisionDigest`), a HelmChart's chart
 * version (`lastAttemptedRevision`).
 */
export interface ChartAttempt {
  readonly kind: ChartSourceKind
  readonly value: string
}

/** Where the chart source stands for the commit. */
export type ChartSourceState =
  /** The commit's spec is not applied yet, or source-controller has not finished with it. */
  | { readonly kind: 'pending'; readonly why: string }
  /** The new artifact, and what helm-controller records once it has attempted it. */
  | { readonly kind: 'fetched'; readonly revision: string; readonly attempt: ChartAttempt }
  /** source-controller could not fetch it (a tag or version that does not exist, a registry refusing): its message. */
  | { readonly kind: 'failed'; readonly message: string }

export function chartSourceState(live: ChartSource | undefined, change: ChartChange): ChartSourceState {
  if (live === undefined) return { kind: 'pending', why: 'not in the cluster' }
  if (!specHolds(live.spec, change.expect)) return { kind: 'pending', why: `new spec not applied yet (${change.fields.join(', ')})` }
  const ready = live.ready
  // Flux writes each condition with the generation it judged: an older Ready says nothing of this commit.
  if (ready === undefined || ready.observedGeneration !== live.generation) return { kind: 'pending', why: `generation ${live.generation} not judged yet` }
  if (ready.status === 'False') return { kind: 'failed', message: ready.message || 'Ready=False' }
  if (ready.status !== 'True' || live.observedGeneration !== live.generation || live.revision === undefined)
    return { kind: 'pending', why: `fetching (Ready=${ready.status})` }
  const value = change.kind === 'OCIRepository' ? revisionDigest(live.revision) : live.revision
  return { kind: 'fetched', revision: live.revision, attempt: { kind: change.kind, value } }
}

/** helm-controller has attempted this chart on the release (upgraded, failed, or found nothing to do). */
export function hasAttempted(release: HelmRelease, attempt: ChartAttempt): boolean {
  return lastAttempted(release, attempt.kind) === attempt.value
}

/** What helm-controller records of the last chart attempted from a source of this kind; empty when none. */
export function lastAttempted(release: HelmRelease, kind: ChartSourceKind): string {
  return kind === 'OCIRepository' ? release.status.lastAttemptedRevisionDigest : release.status.lastAttemptedRevision
}

/** The digest helm-controller records for an OCI chart: the revision's part after its last `@`. */
export function revisionDigest(revision: string): string {
  const at = revision.lastIndexOf('@')
  return at < 0 ? revision : revision.slice(at + 1)
}
