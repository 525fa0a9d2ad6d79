// Which reflectors watch mode runs: per namespace in scope (or one over all namespaces), the
// ConfigMaps and the Secrets under each of the two labels (ours and Flux's watch label), and
// the HelmReleases. The list is pure (unit-tested); creating them binds it to the view.

import { FLUX_KEYS, type Keys } from '../../core/keys.ts'
import type { SourceKind } from '../../core/model.ts'
import type { ListScope, ListWatchClient } from '../../kube/list-watch.ts'
import { createReflector, type Change, type Reflector, type ReflectorHooks } from './reflector.ts'
import { AnnotationMemo, parseRelease, parseSource, type Selector, type ViewOptions, type WatchedRelease, type WatchedSource } from './view.ts'

export type ReflectorSpec =
  | { readonly name: string; readonly scope: ListScope; readonly watches: 'source'; readonly kind: SourceKind; readonly selector: Selector }
  | { readonly name: string; readonly scope: ListScope; readonly watches: 'release' }

/** The label selectors of watched sources, each with the view's name for it. */
export function sourceSelectors(keys: Keys): readonly { readonly selector: Selector; readonly label: string }[] {
  return [
    { selector: 'trigger', label: `${keys.triggerLabel}=${keys.triggerLabelValue}` },
    { selector: 'watch', label: `${FLUX_KEYS.watchLabel}=${FLUX_KEYS.watchLabelValue}` },
  ]
}

const KINDS = [
  { kind: 'ConfigMap', resource: 'configmaps' },
  { kind: 'Secret', resource: 'secrets' },
] as const

export function reflectorSpecs(namespaces: readonly string[], keys: Keys): ReflectorSpec[] {
  const specs: ReflectorSpec[] = []
  for (const ns of namespaces.length > 0 ? namespaces : [undefined]) {
    const where = ns ?? 'all'
    for (const { kind, resource } of KINDS) {
      for (const { selector, label } of sourceSelectors(keys)) {
        specs.push({ name: `${resource}/${selector}@${where}`, scope: { resource, namespace: ns, labelSelector: label }, watches: 'source', kind, selector })
      }
    }
    specs.push({ name: `helmreleases@${where}`, scope: { resource: 'helmreleases', namespace: ns, labelSelector: undefined }, watches: 'release' })
  }
  return specs
}

export interface ReflectorBinding {
  readonly client: ListWatchClient
  readonly now: () => number
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>
  readonly backoff?: { readonly minMs: number; readonly maxMs: number }
  readonly view: ViewOptions
  /** Sync, restart and freshness hooks of the named reflector. */
  readonly hooks: (name: string) => Omit<ReflectorHooks<unknown>, 'onChange'>
  readonly onSource: (selector: Selector, change: Change<WatchedSource>, at: number) => void
  readonly onRelease: (change: Change<WatchedRelease>) => void
}

export interface RunningReflector {
  readonly name: string
  readonly reflector: Reflector<unknown>
}

export function createReflectors(specs: readonly ReflectorSpec[], b: ReflectorBinding): RunningReflector[] {
  const common = { client: b.client, now: b.now, sleep: b.sleep, ...(b.backoff === undefined ? {} : { backoff: b.backoff }) }
  // A source's annotations are read again only when they changed (most changes are data).
  const memo = new AnnotationMemo()
  return specs.map((spec) => {
    const { name, scope } = spec
    const reflector =
      spec.watches === 'source'
        ? createReflector<WatchedSource>({
            ...common,
            name,
            scope,
            parse: (o) => parseSource(spec.kind, o, b.view, memo),
            hooks: { ...b.hooks(name), onChange: (c, at) => b.onSource(spec.selector, c, at) },
          })
        : createReflector<WatchedRelease>({ ...common, name, scope, parse: parseRelease, hooks: { ...b.hooks(name), onChange: (c) => b.onRelease(c) } })
    return { name, reflector }
  })
}
