// What an upgrade will change, predicted before merge: the release rendered at base and at head
// (Helm's engine and helm-controller's post-renderers, in the sandbox) and compared as the
// deployed diff compares two Helm revisions, so the prediction and the proof read alike. Head is
// rendered twice: a path that differs between those two renders (random values, `now`) is
// non-deterministic, listed apart, never shown as a change. Pure.

import { diffManifests, diffValues, headlineOf, type ObjectChange, type PathChange } from './manifest-diff.ts'

/** One side's render, as Helm would store it. */
export interface RenderedRelease {
  readonly manifest: string
  readonly hooks: readonly { readonly manifest: string }[]
  readonly crds: readonly { readonly manifest: string }[]
  readonly values: Readonly<Record<string, unknown>>
  readonly chart: string
}

export type PredictedDiff =
  | {
      /** `demo@0.1.0 → demo@0.2.0`; one chart when it stays. */
      readonly chart: string
      readonly headline: readonly string[]
      readonly objects: readonly ObjectChange[]
      readonly hooks: readonly ObjectChange[]
      /** The chart's crds/ directory: applied by helm-controller's CRD policy, never by the upgrade itself. */
      readonly crds: readonly ObjectChange[]
      readonly values: readonly PathChange[]
      /** The release reads a Secret: every change is shown by path only. */
      readonly valuesHidden: boolean
      readonly folded: number
      /** `Kind ns/name path` that differed between two renders of head: not shown as changes. */
      readonly nondeterministic: readonly string[]
      /** Worth saying: partial values, `lookup` empty, a Git chart whose version did not change. */
      readonly notes: readonly string[]
    }
  /** Not predicted: why (the chart could not be fetched, a render failed on one side). */
  | { readonly notPredicted: string }

export interface PredictionInput {
  /** Undefined: the release is new at head. */
  readonly base: RenderedRelease | undefined
  readonly head: RenderedRelease
  /** Head rendered a second time. */
  readonly again: RenderedRelease
  readonly namespace: string
  readonly hidden: boolean
  readonly notes: readonly string[]
}

const EMPTY: RenderedRelease = { manifest: '', hooks: [], crds: [], values: {}, chart: '' }

export function predictedDiff(input: PredictionInput): PredictedDiff {
  const base = input.base ?? EMPTY
  const { head, again, namespace, hidden } = input
  const unstable = new Set([
    ...changedPaths(diffManifests(head.manifest, again.manifest, namespace).objects),
    ...changedPaths(diffManifests(hooksOf(head), hooksOf(again), namespace).objects),
  ])
  const stable = (objects: readonly ObjectChange[]): ObjectChange[] =>
    objects.flatMap((o) => {
      if (unstable.has(o.object)) return []
      const paths = o.paths.filter((p) => !unstable.has(`${o.object} ${p.path}`))
      return o.change === 'changed' && paths.length === 0 ? [] : [{ ...o, paths }]
    })
  const manifest = diffManifests(base.manifest, head.manifest, namespace, hidden)
  const objects = stable(manifest.objects)
  const hooks = diffManifests(hooksOf(base), hooksOf(head), namespace, hidden)
  const crds = diffManifests(crdsOf(base), crdsOf(head), namespace, hidden)
  return {
    chart: base.chart === '' || base.chart === head.chart ? head.chart : `${base.chart} → ${head.chart}`,
    headline: headlineOf({ objects, folded: manifest.folded }),
    objects,
    hooks: stable(hooks.objects),
    crds: crds.objects,
    values: diffValues(base.values, head.values, hidden),
    valuesHidden: hidden,
    folded: manifest.folded + hooks.folded,
    nondeterministic: [...unstable].sort(),
    notes: input.notes,
  }
}

/** `Kind ns/name` of each added or removed object and `Kind ns/name path` of each changed path. */
function changedPaths(objects: readonly ObjectChange[]): string[] {
  return objects.flatMap((o) => (o.change === 'changed' ? o.paths.map((p) => `${o.object} ${p.path}`) : [o.object]))
}

function hooksOf(release: RenderedRelease): string {
  return release.hooks.map((h) => `---\n${h.manifest}`).join('\n')
}

function crdsOf(release: RenderedRelease): string {
  return release.crds.map((c) => `---\n${c.manifest}`).join('\n')
}
