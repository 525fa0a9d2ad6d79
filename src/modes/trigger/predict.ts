// The pre-merge diff of each planned release: its input read at base and head from the rendered
// repository, its chart fetched once for both, rendered in the sandbox at base, at head and at
// head again, and compared (core/predicted-diff.ts). On a pull request, a chart is fetched only
// from a Helm repository URL the base commit already names: the pull request never chooses a
// network target. Anything that stops a prediction is one sentence on that release only.

import { predictedDiff, type PredictedDiff } from '../../core/predicted-diff.ts'
import { isRenderable, releaseInput, type ReleaseInput } from '../../core/release-input.ts'
import { releaseKey, type PlannedRelease } from '../../core/model.ts'
import type { RenderedRepository } from '../../core/rendered.ts'
import { mapLimit } from '../../lib/concurrency.ts'
import { quoted } from '../../lib/untrusted.ts'
import { renderRelease, type ReleaseRenderDeps } from '../../render/release-render.ts'
import type { Range } from '../../git/range.ts'
import type { Plan } from '../../core/model.ts'
import type { ReleaseResult } from '../../engine/result.ts'
import { chartStore } from '../../render/chart-store.ts'
import type { Sandbox } from '../../sandbox/sandbox.ts'

/** The predicted diff of each release a prepared plan holds, keyed by predictionKey. */
export type Predictor = (prepared: {
  readonly plan: Plan
  readonly range: Range
  readonly trees?: readonly RenderedTree[] | undefined
}) => Promise<ReadonlyMap<string, PredictedDiff>>

export interface PredictorOptions {
  readonly chartCache: string
  readonly kubeVersion: string | undefined
  readonly maxConcurrency: number
}

/** The run's predictor: one chart store (so base and head share each fetch), the run's sandbox and git. */
export function predictorOf(options: PredictorOptions, git: ReleaseRenderDeps['git'], sandbox: Sandbox, baseUrlsOnly: boolean): Predictor {
  const deps: PredictDeps = {
    git,
    sandbox,
    charts: chartStore({ cacheDir: options.chartCache, sandbox }),
    ...(options.kubeVersion === undefined ? {} : { kubeVersion: options.kubeVersion }),
    baseUrlsOnly,
    concurrency: Math.min(options.maxConcurrency, 8),
  }
  return async ({ plan, range, trees }) => predictReleases(plan.releases, trees ?? [], range, deps)
}

/** Each result with its release's prediction, when there is one. */
export function withPredictions(results: readonly ReleaseResult[], predicted: ReadonlyMap<string, PredictedDiff> | undefined): ReleaseResult[] {
  if (predicted === undefined) return [...results]
  return results.map((r) => {
    const p = predicted.get(predictionKey(r))
    return p === undefined ? r : { ...r, predicted: p }
  })
}

export interface PredictDeps extends ReleaseRenderDeps {
  /** Fetch charts only from Helm repository URLs the base commit names (pull requests). */
  readonly baseUrlsOnly: boolean
  readonly concurrency: number
}

/** A tree's rendered range: one for the repository, or one per cluster tree (`cluster` set). */
export interface RenderedTree {
  readonly cluster: string | undefined
  readonly rendered: RenderedSides
}

interface RenderedSides {
  readonly base: RenderedRepository
  readonly head: RenderedRepository
  /** The GitRepositories that fetch this repository (`ns/name`). */
  readonly source?: { readonly gitRepositories: readonly string[] }
}

/** Keyed like the plan's releases: `cluster:namespace/name` (no cluster: `namespace/name`). */
export function predictionKey(release: { readonly namespace: string; readonly name: string; readonly cluster?: string | undefined }): string {
  return release.cluster === undefined ? releaseKey(release) : `${release.cluster}:${releaseKey(release)}`
}

export async function predictReleases(
  releases: readonly PlannedRelease[],
  trees: readonly RenderedTree[],
  range: Range,
  deps: PredictDeps,
): Promise<Map<string, PredictedDiff>> {
  const baseUrls = new Set(trees.flatMap((t) => helmRepositoryUrls(t.rendered.base)))
  const out = new Map<string, PredictedDiff>()
  await mapLimit(releases, deps.concurrency, async (release) => {
    const tree = trees.find((t) => t.cluster === release.cluster) ?? trees[0]
    if (tree === undefined) return
    out.set(predictionKey(release), await predictOne(release, tree.rendered, range, baseUrls, deps))
  })
  return out
}

async function predictOne(
  release: PlannedRelease,
  rendered: RenderedSides,
  range: Range,
  baseUrls: ReadonlySet<string>,
  deps: PredictDeps,
): Promise<PredictedDiff> {
  const ours = new Set(rendered.source?.gitRepositories ?? [])
  const head = releaseInput(rendered.head, release, ours)
  if (head === undefined) return { notPredicted: 'it is not in the repository at head' }
  if (!isRenderable(head)) return { notPredicted: head.notRendered }
  const refused = forkRefusal(head, baseUrls, deps.baseUrlsOnly)
  if (refused !== undefined) return { notPredicted: refused }
  const base = range.base === undefined ? undefined : releaseInput(rendered.base, release, ours)
  if (base !== undefined && !isRenderable(base)) return { notPredicted: `at base, ${base.notRendered}` }
  const refusedBase = base === undefined ? undefined : forkRefusal(base, baseUrls, deps.baseUrlsOnly)
  if (refusedBase !== undefined) return { notPredicted: refusedBase }
  const upgrade = base !== undefined
  const [before, after, again] = await Promise.all([
    base === undefined || range.base === undefined ? undefined : renderRelease(base, { commit: range.base, revision: 1, isUpgrade: false }, deps),
    renderRelease(head, { commit: range.head, revision: upgrade ? 2 : 1, isUpgrade: upgrade }, deps),
    renderRelease(head, { commit: range.head, revision: upgrade ? 2 : 1, isUpgrade: upgrade }, deps),
  ])
  // A render that fails on one side is that one problem, never a diff of everything.
  if (before !== undefined && 'failed' in before) return { notPredicted: `at base, ${before.failed}` }
  if ('failed' in after) return { notPredicted: after.failed }
  if ('failed' in again) return { notPredicted: again.failed }
  const notes: string[] = []
  if (head.partial !== undefined) notes.push(`partial: ${head.partial}`)
  if (after.usesLookup) notes.push('the chart calls `lookup`, which reads nothing outside the cluster: what it would read renders as absent')
  if (
    head.chart.kind === 'git' &&
    head.chart.reconcileStrategy === 'ChartVersion' &&
    before !== undefined &&
    before.chartVersion === after.chartVersion &&
    before.chartDigest !== after.chartDigest
  )
    notes.push(
      `the chart's own edits do not reach the cluster: its Chart.yaml version stays ${quoted(after.chartVersion)} and its reconcileStrategy is ChartVersion, so source-controller makes no new artifact`,
    )
  return predictedDiff({ base: before, head: after, again, namespace: head.releaseNamespace, hidden: head.readsSecret, notes })
}

function forkRefusal(input: ReleaseInput, baseUrls: ReadonlySet<string>, baseUrlsOnly: boolean): string | undefined {
  const { chart } = input
  if (!baseUrlsOnly || chart.kind === 'git') return undefined
  const url = chart.kind === 'helm' ? chart.url : chart.sourceUrl
  if (baseUrls.has(url)) return undefined
  return `its chart source URL ${quoted(url)} is not in the base commit, and a pull request's chart is fetched only from URLs the base already names`
}

/** The URLs of the chart sources a commit defines (HelmRepository, OCIRepository). */
function helmRepositoryUrls(side: RenderedRepository): string[] {
  return side.objects.flatMap((o) => {
    if (o.kind !== 'HelmRepository' && o.kind !== 'OCIRepository') return []
    const spec = o.object['spec']
    const url = typeof spec === 'object' && spec !== null ? (spec as Record<string, unknown>)['url'] : undefined
    return typeof url === 'string' ? [url] : []
  })
}
