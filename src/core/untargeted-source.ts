// A labelled ConfigMap or Secret that triggers no HelmRelease: no annotation names a release and
// no release reads it through spec.valuesFrom. The one rule behind the plan's warning and
// discover's finding, so two checks of one commit never disagree. Pure.

import type { Keys } from './keys.ts'
import type { FileProblem, Origin, SourceId } from './model.ts'

export interface UntargetedCandidate {
  readonly id: SourceId
  readonly labelled: boolean
  /** The releases its annotation names, allowed or not. */
  readonly annotatedTargets: readonly unknown[]
  /** Where the object is defined: where a label or annotation is added. */
  readonly origin: Origin
}

export interface UntargetedContext {
  readonly keys: Pick<Keys, 'targetNames'>
  /** Whether spec.valuesFrom is searched for readers. */
  readonly discover: boolean
}

/** The start of the warning, by which a warning of a source that has targets by now is recognised. */
export const untargetedPrefix = (id: SourceId): string => `${id} triggers no HelmRelease`

/**
 * The warning of a labelled source with nothing to trigger, or undefined. `readers`: the releases
 * of its namespace whose spec.valuesFrom names it. A source whose annotation names releases is
 * never one: a target refused by cross-namespace-targets has a warning of its own.
 */
export function untargetedProblem(source: UntargetedCandidate, readers: number, context: UntargetedContext): FileProblem | undefined {
  if (!source.labelled || source.annotatedTargets.length > 0) return undefined
  if (context.discover && readers > 0) return undefined
  const { targetNames } = context.keys
  const how = context.discover
    ? `name them in ${targetNames}, or reference it from a HelmRelease's spec.valuesFrom`
    : `name them in ${targetNames} (discover is off, so spec.valuesFrom is not searched)`
  return { severity: 'warning', file: source.origin.file, line: source.origin.line, message: `${untargetedPrefix(source.id)}: ${how}` }
}
