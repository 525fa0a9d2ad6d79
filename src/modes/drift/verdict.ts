// Drift's vocabulary and verdict, pure: the states of an object and of a release, what a
// release's check found, what a correction did, and whether the run fails under its
// drift-action (driftFailure).

import { releaseKey, type ReleaseRef } from '../../core/model.ts'
import { FAILED, Status, type Reason } from '../../engine/result.ts'
import type { DriftAction } from '../../settings.ts'
import type { FieldChange } from './compare.ts'
import { failureSentence, plural } from '../../lib/text.ts'

export const ObjectState = { InSync: 'in-sync', Changed: 'changed', Missing: 'missing', Error: 'error' } as const
export type ObjectState = (typeof ObjectState)[keyof typeof ObjectState]

export const ReleaseState = { InSync: 'InSync', Drifted: 'Drifted', Skipped: 'Skipped', Error: 'Error' } as const
export type ReleaseState = (typeof ReleaseState)[keyof typeof ReleaseState]

/** One object of the manifest that is not in sync (objects in sync are only counted). */
export interface ObjectDrift {
  readonly apiVersion: string
  readonly kind: string
  /** undefined for cluster-scoped kinds. */
  readonly namespace: string | undefined
  readonly name: string
  readonly state: ObjectState
  readonly changes: readonly FieldChange[]
  /** Why it could not be compared (state error). */
  readonly message?: string
  /** The chart template it came from. */
  readonly source?: string
}

/** What `correct` did for a drifted release. */
export interface Correction {
  readonly status: Status
  readonly reason: Reason
  readonly message: string
  readonly token?: string
  readonly revisionAfter?: number
}

export interface ReleaseDrift extends ReleaseRef {
  /** The Helm release name and where its storage is. */
  readonly releaseName: string
  readonly storageNamespace: string
  readonly revision?: number
  readonly chart?: string
  readonly state: ReleaseState
  /** Short constant: InSync, Drifted, NotDeployed, NotInstalled, RemoteCluster, StorageUnreadable, NoStorage, Forbidden, ReadFailed. */
  readonly reason: string
  readonly message: string
  /** Objects in the manifest. */
  readonly objects: number
  readonly inSync: number
  /** Objects skipped by helm.toolkit.fluxcd.io/driftDetection: disabled. */
  readonly ignored: number
  readonly drifted: readonly ObjectDrift[]
  /** After `correct`: what helm-controller did; `state` is then the re-check's. */
  readonly correction?: Correction
  readonly durationMs: number
}

export interface DriftReport {
  readonly action: DriftAction
  readonly scope: string
  readonly dryRun: boolean
  readonly releases: readonly ReleaseDrift[]
  readonly notes: readonly string[]
}

export function objectKey(o: Pick<ObjectDrift, 'kind' | 'namespace' | 'name'>): string {
  if (o.kind === '') return o.name
  return o.namespace === undefined ? `${o.kind}/${o.name}` : `${o.kind}/${o.namespace}/${o.name}`
}

/** Why the run fails under its drift-action, or undefined when it passes. */
export function driftFailure(report: DriftReport): string | undefined {
  if (report.action === 'report') return undefined
  const problems = report.releases.flatMap((r): string[] => {
    const key = releaseKey(r)
    if (r.correction !== undefined && FAILED.has(r.correction.status)) return [`${key}: correction ${r.correction.status} (${r.correction.reason})`]
    if (r.correction?.status === Status.Skipped) return [`${key}: drifted, not corrected (${r.correction.reason})`]
    if (r.state === ReleaseState.Drifted)
      return [
        `${key}: ${r.drifted
          .filter((o) => o.state !== ObjectState.Error)
          .map(firstChange)
          .join(', ')}${r.correction === undefined ? '' : ' still drifted after correction'}`,
      ]
    if (r.state === ReleaseState.Error) return [`${key}: ${r.message}`]
    return []
  })
  return failureSentence(problems, (n) => `${plural(n, 'release')} not in sync (drift-action: ${report.action})`)
}

function firstChange(o: ObjectDrift): string {
  if (o.state === ObjectState.Missing) return `${objectKey(o)} missing`
  const [first] = o.changes
  return `${objectKey(o)} ${first?.path ?? ''}${o.changes.length > 1 ? ` (+${o.changes.length - 1})` : ''}`
}
