// A chart bump's first half: the chart source a release's chartRef names (an OCIRepository or a
// HelmChart) holds the commit's spec, and source-controller has fetched the artifact it names
// (or said why it cannot). Only then is the release patched or waited for, so no upgrade runs
// on the old chart with new values.

import { chartSourceState, type ChartSourceState } from '../../core/chart-source.ts'
import { chartSourceId, releaseKey, type ChartChange, type PlannedRelease } from '../../core/model.ts'
import type { ClusterClient } from '../../kube/cluster.ts'
import type { Clock, Logger } from '../../engine/ports.ts'
import { Reason, Status, type ReleaseResult } from '../../engine/result.ts'
import { messageOf } from '../../lib/errors.ts'

// The same pace as the wait for a source to be applied: one GET per chart source per step.
const FETCH_POLL_MS = 200

type Waited = ChartSourceState | { readonly kind: 'unreadable'; readonly message: string }

export type ChartFetch = Extract<ChartSourceState, { kind: 'fetched' }> | { readonly kind: 'settled'; readonly result: ReleaseResult }

export interface ChartFetcher {
  fetch(planned: PlannedRelease & { readonly chart: ChartChange }): Promise<ChartFetch>
  /** The artifact revision fetched for a chart source (by chartSourceId), once it was. */
  revisions(): ReadonlyMap<string, string>
}

/**
 * Polls each chart source once per step, however many releases name it, until it is fetched,
 * has failed, or the deadline passes. The result of a release whose chart did not arrive says why.
 */
export function chartFetcher(cluster: ClusterClient, deadline: number, deps: { readonly clock: Clock; readonly log: Logger }): ChartFetcher {
  const waits = new Map<string, Promise<Waited>>()
  const fetched = new Map<string, string>()
  const waitFor = async (change: ChartChange): Promise<Waited> => {
    for (;;) {
      let live
      try {
        live = await cluster.getChartSource(change)
      } catch (error) {
        // Forbidden (the role lacks get on the chart source) or the apiserver gone: the releases naming it say so, the others go on.
        return { kind: 'unreadable', message: messageOf(error) }
      }
      const state = chartSourceState(live, change)
      if (state.kind !== 'pending' || deps.clock.now() + FETCH_POLL_MS > deadline) return state
      await deps.clock.sleep(FETCH_POLL_MS)
    }
  }
  const fetch = async (planned: PlannedRelease & { readonly chart: ChartChange }): Promise<ChartFetch> => {
    const { chart } = planned
    const id = chartSourceId(chart)
    const started = deps.clock.now()
    const wait = waits.get(id) ?? waitFor(chart)
    waits.set(id, wait)
    const state = await wait
    if (state.kind === 'fetched') {
      fetched.set(id, state.revision)
      return state
    }
    const at = `${chart.origin.file}:${chart.origin.line}`
    const message =
      state.kind === 'failed'
        ? `not upgraded: source-controller could not fetch the chart ${id} names since the commit (${chart.fields.join(', ')}, ${at}): ${state.message}`
        : state.kind === 'unreadable'
          ? `not patched: ${id} (${chart.fields.join(', ')}, ${at}) could not be read: ${state.message}`
          : `not upgraded: the chart ${id} names did not arrive within the timeout (${chart.fields.join(', ')}, ${at}; ${state.why}); is kustomize-controller applying it?`
    deps.log.warning(`${releaseKey(planned)}: ${message}`)
    return {
      kind: 'settled',
      result: {
        namespace: planned.namespace,
        name: planned.name,
        sources: planned.sources,
        status: Status.Failed,
        reason: Reason.ChartNotFetched,
        message,
        durationMs: deps.clock.now() - started,
        severity: 'error',
      },
    }
  }
  return { fetch, revisions: () => fetched }
}
