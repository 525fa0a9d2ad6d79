// What an upgrade did change, proven from Helm's storage: the revision live before the trigger
// against the revision helm-controller wrote, compared as Kubernetes objects (the manifest and
// the hooks) and as the values Helm was given. Values a Secret may have supplied are shown as
// paths only. Pure: the revisions are read by the trigger (src/modes/trigger/deployed.ts).

import type { StoredRelease } from './helm-storage.ts'
import { diffManifests, diffValues, headlineOf, type ObjectChange, type PathChange } from './manifest-diff.ts'

export type DeployedDiff =
  | {
      /** Helm revisions compared. */
      readonly from: number
      readonly to: number
      /** One line per kind of risk: deletions, immutable fields, images, replicas, rollouts, RBAC, additions. */
      readonly headline: readonly string[]
      readonly objects: readonly ObjectChange[]
      readonly hooks: readonly ObjectChange[]
      readonly values: readonly PathChange[]
      /** The release reads a Secret: every change (objects, hooks, values) is shown by path only. */
      readonly valuesHidden: boolean
      /** Chart-label changes folded into this count. */
      readonly folded: number
    }
  | { readonly unavailable: string }

/** `valuesHidden`: the release reads a Secret, so no value is shown anywhere: a chart may write a Secret's value into any object. */
export function deployedDiff(before: StoredRelease, after: StoredRelease, valuesHidden: boolean): DeployedDiff {
  const namespace = after.namespace || before.namespace
  const manifest = diffManifests(before.manifest, after.manifest, namespace, valuesHidden)
  const hooks = diffManifests(hookManifest(before), hookManifest(after), namespace, valuesHidden)
  return {
    from: before.version,
    to: after.version,
    headline: headlineOf(manifest),
    objects: manifest.objects,
    hooks: hooks.objects,
    values: diffValues(before.config, after.config, valuesHidden),
    valuesHidden,
    folded: manifest.folded + hooks.folded,
  }
}

function hookManifest(release: StoredRelease): string {
  return release.hooks.map((h) => `---\n${h.manifest}`).join('\n')
}
