// Discover's release action, pure: our label on a release is present exactly when the release
// uses spec.valuesFrom (labelAction), added or removed by a merge patch through the write
// engine; never anyone else's label.

import type { HelmRelease } from '../../core/helmrelease.ts'
import type { Keys } from '../../core/keys.ts'
import type { ReleaseAction, WriteOutcome } from '../../engine/write-release.ts'
import type { ReleaseRef } from '../../core/model.ts'

/** One label added or removed (or tried). */
export interface LabelChange extends ReleaseRef {
  readonly action: 'add' | 'remove'
  readonly status: 'done' | 'dry-run' | 'failed'
  readonly message: string
}

/** What our label on a release should become: present exactly when it uses valuesFrom. */
export function labelAction(release: HelmRelease, keys: Keys): LabelChange['action'] | undefined {
  const labelled = release.labels[keys.triggerLabel] === keys.triggerLabelValue
  if (release.valuesFrom.length > 0) return labelled ? undefined : 'add'
  // Only ever our own key: every other label is someone else's.
  return release.labels[keys.triggerLabel] === undefined ? undefined : 'remove'
}

export interface LabelWrite {
  readonly action: LabelChange['action']
}

/** Nothing to change: the label is as it should be, or the release is gone. */
export type LabelSkip = 'unchanged'

export function relabelAction(keys: Keys): ReleaseAction<LabelWrite, LabelSkip> {
  return {
    decide: (live) => {
      const action = live === undefined ? undefined : labelAction(live, keys)
      return action === undefined ? { kind: 'skip', skip: 'unchanged' } : { kind: 'write', write: { action } }
    },
    patch: (write, live) => ({
      annotations: {},
      labels: { [keys.triggerLabel]: write.action === 'add' ? keys.triggerLabelValue : null },
      resourceVersion: live.resourceVersion,
    }),
    // No token in a label patch: it landed when the label is as it asked.
    landed: (write, live) =>
      write.action === 'add' ? live.labels[keys.triggerLabel] === keys.triggerLabelValue : live.labels[keys.triggerLabel] === undefined,
  }
}

/** The report's line for one release; none when nothing was to change. */
export function labelChangeOf(release: HelmRelease, outcome: WriteOutcome<LabelWrite, LabelSkip>, dryRun: boolean): LabelChange | undefined {
  const ref = { namespace: release.namespace, name: release.name }
  switch (outcome.kind) {
    case 'skipped':
      return undefined
    case 'failed': {
      // The action that failed: the one the listed copy asked for.
      const action = outcome.attempted?.action
      return action === undefined ? undefined : { ...ref, action, status: 'failed', message: outcome.message }
    }
    case 'written': {
      const { action } = outcome.write
      return {
        ...ref,
        action,
        status: dryRun ? 'dry-run' : 'done',
        message: action === 'add' ? 'uses spec.valuesFrom: labelled' : 'no longer uses spec.valuesFrom: label removed',
      }
    }
  }
}
