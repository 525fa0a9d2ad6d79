// A typed view of a HelmRelease (helm.toolkit.fluxcd.io/v2) read from the API, built by
// checking each field rather than casting: the API may hand us any shape.

import { storageTarget, type StorageTarget } from './helm-storage.ts'
import type { ReleaseManifest, SourceKind, ValuesReference } from './model.ts'

export const HELMRELEASE = { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases', kind: 'HelmRelease' } as const

export interface Condition {
  readonly type: string
  readonly status: string
  readonly reason: string
  readonly message: string
}

export interface Snapshot {
  readonly version: number
  readonly status: string
  readonly configDigest: string
  readonly chartVersion: string
}

export interface HelmRelease {
  readonly namespace: string
  readonly name: string
  readonly uid: string
  readonly resourceVersion: string
  readonly generation: number
  readonly annotations: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  readonly suspend: boolean
  readonly valuesFrom: readonly ValuesReference[]
  /** The spec as read: checked against a planned spec change (the new generation has arrived). */
  readonly spec: Readonly<Record<string, unknown>>
  readonly status: HelmReleaseStatus
  /** Where helm-controller keeps its Helm release (the storage Secrets). */
  readonly storage: StorageTarget
}

export interface HelmReleaseStatus {
  readonly observedGeneration: number
  readonly lastHandledReconcileAt: string
  readonly lastHandledForceAt: string
  readonly lastHandledResetAt: string
  /** The chart version last attempted. */
  readonly lastAttemptedRevision: string
  /** The OCI digest of the chart last attempted (chartRef to an OCIRepository); empty otherwise. */
  readonly lastAttemptedRevisionDigest: string
  readonly conditions: readonly Condition[]
  /** Newest first, as helm-controller keeps it. */
  readonly history: readonly Snapshot[]
  readonly failures: number
  readonly installFailures: number
  readonly upgradeFailures: number
}

type Json = Readonly<Record<string, unknown>>

function record(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
}
function text(v: unknown): string {
  return typeof v === 'string' ? v : ''
}
function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}
function list(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : []
}
function strings(v: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(record(v)).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

export function toHelmRelease(object: unknown): HelmRelease {
  const o = record(object)
  const metadata = record(o['metadata'])
  const spec = record(o['spec'])
  return {
    namespace: text(metadata['namespace']),
    name: text(metadata['name']),
    uid: text(metadata['uid']),
    resourceVersion: text(metadata['resourceVersion']),
    generation: num(metadata['generation']),
    annotations: strings(metadata['annotations']),
    labels: strings(metadata['labels']),
    suspend: spec['suspend'] === true,
    valuesFrom: list(spec['valuesFrom']).flatMap(valuesReference),
    spec,
    status: toStatus(o['status']),
    storage: storageTarget(object),
  }
}

function valuesReference(entry: unknown): ValuesReference[] {
  const e = record(entry)
  const kind = e['kind']
  const name = text(e['name'])
  if ((kind !== 'ConfigMap' && kind !== 'Secret') || name === '') return []
  return [{ kind: kind satisfies SourceKind, name, optional: e['optional'] === true }]
}

function toStatus(value: unknown): HelmReleaseStatus {
  const s = record(value)
  return {
    observedGeneration: num(s['observedGeneration']),
    lastHandledReconcileAt: text(s['lastHandledReconcileAt']),
    lastHandledForceAt: text(s['lastHandledForceAt']),
    lastHandledResetAt: text(s['lastHandledResetAt']),
    lastAttemptedRevision: text(s['lastAttemptedRevision']),
    lastAttemptedRevisionDigest: text(s['lastAttemptedRevisionDigest']),
    conditions: list(s['conditions']).map((c) => {
      const r = record(c)
      return { type: text(r['type']), status: text(r['status']), reason: text(r['reason']), message: text(r['message']) }
    }),
    history: list(s['history']).map((h) => {
      const r = record(h)
      return { version: num(r['version']), status: text(r['status']), configDigest: text(r['configDigest']), chartVersion: text(r['chartVersion']) }
    }),
    failures: num(s['failures']),
    installFailures: num(s['installFailures']),
    upgradeFailures: num(s['upgradeFailures']),
  }
}

export function condition(release: HelmRelease, type: string): Condition | undefined {
  return release.status.conditions.find((c) => c.type === type)
}

/** The discovery view of a live release (same shape as one read from git). */
export function toReleaseManifest(release: HelmRelease): ReleaseManifest {
  return { namespace: release.namespace, name: release.name, valuesFrom: release.valuesFrom }
}

/** Retries exhausted: helm-controller will not act on a plain requestedAt until reset. */
export function isStalled(release: HelmRelease): boolean {
  const stalled = condition(release, 'Stalled')
  if (stalled?.status === 'True') return true
  const ready = condition(release, 'Ready')
  return ready?.status === 'False' && ready.reason === 'RetriesExceeded'
}

/** `<prefix>/config-digest` parsed; an absent or corrupt annotation reads as empty (everything stale). */
export function recordedDigests(annotation: string | undefined): Map<string, string> {
  if (annotation === undefined || annotation === '') return new Map()
  try {
    const value: unknown = JSON.parse(annotation)
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return new Map()
    return new Map(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'))
  } catch {
    return new Map()
  }
}
