// Which namespaces a source may target. A labelled ConfigMap or Secret names its releases by
// annotation, in any namespace; whoever can edit objects in one namespace could then make our
// identity request reconciles (and reset failure counts) of another tenant's releases, flux-system's
// included. By default a source targets releases of its own namespace only; the operator of the
// tool lists the other pairs it allows. Releases found through their own valuesFrom are always in
// the source's namespace (Flux reads valuesFrom there). Pure.

/** `source=target` pairs, `*` on either side for any namespace; `*` alone for any pair. */
export type CrossNamespaceTargets = readonly string[]

/** Whether a source in `source` may target a release in `target`. */
export function mayTarget(allowed: CrossNamespaceTargets, source: string, target: string): boolean {
  if (source === target) return true
  return allowed.some((pair) => {
    if (pair === '*') return true
    const [from = '', to = ''] = pair.split('=')
    return (from === '*' || from === source) && (to === '*' || to === target)
  })
}

/** The sentence saying a target was refused, and how to allow it. */
export function refusedTargetMessage(subject: string, target: { readonly namespace: string; readonly name: string }, source: string): string {
  return `${subject} names the HelmRelease ${target.namespace}/${target.name}, outside its own namespace ${source}: not triggered; to allow it, add ${source}=${target.namespace} (or *=${target.namespace}) to cross-namespace-targets`
}
