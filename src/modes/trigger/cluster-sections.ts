// A report of a repository holding several cluster trees is shown one section per cluster: the
// same tables, each holding only that cluster's entries, so two clusters' releases of the same
// name are never confused. Pure.

import type { TriggerReport } from '../../engine/result.ts'

export interface ClusterSection {
  /** undefined: the report names no cluster (one tree), shown as before. */
  readonly cluster: string | undefined
  readonly report: TriggerReport
}

/** The report's sections: itself when it names no cluster, else one per cluster with work (plan, results or problems), in the report's order. */
export function clusterSections(report: TriggerReport): ClusterSection[] {
  if (report.clusters === undefined) return [{ cluster: undefined, report }]
  return report.clusters.flatMap((cluster) => {
    const mine = <T extends { readonly cluster?: string }>(entries: readonly T[]): T[] => entries.filter((e) => e.cluster === cluster)
    const part: TriggerReport = {
      ...report,
      plan: { ...report.plan, sources: mine(report.plan.sources), releases: mine(report.plan.releases), problems: mine(report.plan.problems) },
      results: mine(report.results),
      problems: mine(report.problems),
      // Sources applied by a run belong to its one cluster.
      sources: report.clusters?.length === 1 ? report.sources : [],
    }
    const work = part.plan.sources.length + part.plan.releases.length + part.results.length + part.problems.length + part.sources.length
    return work === 0 ? [] : [{ cluster, report: part }]
  })
}

/** The clusters of a report without work: said in one line so a reader knows they were planned. */
export function quietClusters(report: TriggerReport): string[] {
  const shown = new Set(clusterSections(report).map((s) => s.cluster))
  return (report.clusters ?? []).filter((c) => !shown.has(c))
}

/** A section's headings one level down, under its cluster's heading. */
export function underCluster(lines: readonly string[], cluster: string | undefined): string[] {
  return cluster === undefined ? [...lines] : lines.map((l) => (l.startsWith('### ') ? `#${l}` : l))
}
