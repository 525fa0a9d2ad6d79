// A chart source (an OCIRepository) as read from the API, and the pure rule that says whether
// source-controller has fetched the artifact a commit asked for: the first half of a chart
// upgrade, before helm-controller's. Built by checking each field: the API may hand us any shape.

import type { ChartChange } from './model.ts'
import { specHolds } from './plan-rendered.ts'

export const OCIREPOSITORY = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'ocirepositories', kind: 'OCIRepository' } as const

export interface ChartSource {
  readonly generation: number
  readonly spec: Readonly<Record<string, unknown>>
  readonly observedGeneration: number
  /** Ready's status, message and the generation it was written for (Flux sets it on every condition). */
  readonly ready: { readonly status: string; readonly message: string; readonly observedGeneration: number } | undefined
  /** `status.artifact.revision`: `<tag>@sha256:<hex>` for an OCIRepository. */
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

/** Where the chart source stands for the commit. */
export type ChartSourceState =
  /** The commit's spec is not applied yet, or source-controller has not finished with it. */
  | { readonly kind: 'pending'; readonly why: string }
  /** The new artifact: helm-controller upgrades each release naming it until its lastAttemptedRevisionDigest is this digest. */
  | { readonly kind: 'fetched'; readonly revision: string; readonly digest: string }
  /** source-controller could not fetch it (a tag that does not exist, a registry refusing): its message. */
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
  return { kind: 'fetched', revision: live.revision, digest: revisionDigest(live.revision) }
}

/** The digest helm-controller records for an OCI chart: the revision's part after its last `@`. */
export function revisionDigest(revision: string): string {
  const at = revision.lastIndexOf('@')
  return at < 0 ? revision : revision.slice(at + 1)
}
