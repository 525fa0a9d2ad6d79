// Plans of a repository that holds several clusters' trees: each tree planned apart (two
// clusters use the same Flux names and often the same release names), every entry naming its
// cluster, and a plan-only run's plans side by side. Pure.

import type { Plan } from './model.ts'

/** Every entry of `plan` names `cluster`; its notes say which cluster they are about. */
export function inCluster(plan: Plan, cluster: string): Plan {
  return {
    sources: plan.sources.map((s) => ({ ...s, cluster })),
    releases: plan.releases.map((r) => ({ ...r, cluster })),
    problems: plan.problems.map((p) => ({ ...p, cluster })),
    ...(plan.notes === undefined ? {} : { notes: plan.notes }),
  }
}

/** The plans of several cluster trees as one, in the order given: entries named by cluster, notes prefixed with it. */
export function clusteredPlan(parts: readonly { readonly name: string; readonly plan: Plan }[]): Plan {
  const named = parts.map((p) => ({ name: p.name, plan: inCluster(p.plan, p.name) }))
  return {
    sources: named.flatMap((p) => p.plan.sources),
    releases: named.flatMap((p) => p.plan.releases),
    problems: named.flatMap((p) => p.plan.problems),
    notes: named.flatMap((p) => (p.plan.notes ?? []).map((n) => `Cluster ${p.name}: ${n}`)),
  }
}

/** A release's or problem's key among several clusters' (`namespace/name` alone collides). */
export function clusterKey(entry: { readonly cluster?: string }, key: string): string {
  return entry.cluster === undefined ? key : `${entry.cluster}\u0000${key}`
}
