// The fan-out to many releases of one namespace: one LIST instead of a GET each, Events after
// the patches, and every per-release behaviour (conflicts, missing, suspended) kept.

import { describe, expect, it } from 'vitest'
import { parseSettings, type Settings } from '../../../src/settings.ts'
import { Status } from '../../../src/engine/result.ts'
import { LIST_FROM, runTrigger, type RunContext, type TriggerDeps } from '../../../src/modes/trigger/pipeline.ts'
import { ForbiddenError } from '../../../src/kube/api-error.ts'
import type { ReleaseRef } from '../../../src/core/model.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../test/support/fakes.ts'
import { triggerConfigMap } from '../../../test/support/manifests.ts'

const NAMES = Array.from({ length: LIST_FROM + 10 }, (_, i) => `app-${String(i).padStart(3, '0')}`)
const SOURCE = { kind: 'ConfigMap' as const, namespace: 'apps', name: 'shared' }

const configMap = (value: string, releases: readonly string[]): string =>
  triggerConfigMap({ name: 'shared', namespace: 'apps', releases: releases.join(', '), values: `replicas: ${value}` })

function settings(overrides: Record<string, string> = {}): Settings {
  // discover: false, so the only LIST is the fan-out's (discovery lists the namespace for itself).
  return parseSettings((name) => ({ wait: 'false', discover: 'false', ...overrides })[name] ?? '')
}

function pushContext(before: string, after: string): RunContext {
  return { eventName: 'push', event: { before, after }, sha: after, runUrl: undefined, refused: undefined }
}

function deps(git: FakeGit, cluster: FakeCluster, warnings: string[] = []): TriggerDeps {
  return { git, connect: async () => cluster, clock: new FakeClock(), log: { info: () => undefined, warning: (m) => warnings.push(m) } }
}

/** Counts reads, so the tests can tell a LIST from a GET each. */
class CountingCluster extends FakeCluster {
  gets: string[] = []
  lists = 0
  listFails = false
  override async getRelease(ref: ReleaseRef) {
    this.gets.push(ref.name)
    return super.getRelease(ref)
  }
  override async listReleases(namespace: string | undefined) {
    this.lists++
    if (this.listFails) throw new ForbiddenError('Forbidden: cannot list helmreleases')
    return super.listReleases(namespace)
  }
}

function fleet(): { git: FakeGit; cluster: CountingCluster } {
  // One name the cluster does not hold: the list says it is missing, no GET needed.
  const targets = [...NAMES, 'gone']
  const git = new FakeGit().commit('a', undefined, { 'cm.yaml': configMap('1', targets) }).commit('b', 'a', { 'cm.yaml': configMap('2', targets) })
  const cluster = new CountingCluster().setSource(SOURCE, { 'values.yaml': 'replicas: 2\n' })
  for (const name of NAMES) cluster.addRelease('apps', name)
  cluster.addRelease('apps', 'gone-not', {})
  return { git, cluster }
}

describe('fan-out to many releases of one namespace', () => {
  it('reads them with one LIST, patches each once, and records an Event each after the patches', async () => {
    const { git, cluster } = fleet()
    cluster.addRelease('apps', 'app-000', { suspend: true })
    const report = await runTrigger(settings(), pushContext('a', 'b'), deps(git, cluster))

    expect(cluster.lists).toBe(1)
    expect(cluster.gets).toEqual([])
    const byName = new Map(report.results.map((r) => [r.name, r]))
    expect(byName.get('app-000')?.reason).toBe('Suspended')
    expect(byName.get('gone')).toMatchObject({ status: Status.Skipped, reason: 'NotFound', severity: 'warning' })
    expect(report.results.filter((r) => r.status === Status.Triggered)).toHaveLength(NAMES.length - 1)
    expect(cluster.patches).toHaveLength(NAMES.length - 1)
    // Each patch carries the listed resourceVersion: optimistic concurrency as with a GET.
    expect(cluster.patches.every((p) => p.patch.resourceVersion !== undefined)).toBe(true)
    expect(cluster.events.map((e) => e.release.name).sort()).toEqual(NAMES.slice(1))
    expect(cluster.events[0]?.message).toContain('commit b')
  })

  it('re-reads with a GET only the release whose patch conflicts, and decides again', async () => {
    const { git, cluster } = fleet()
    cluster.conflictOnce.add('apps/app-007')
    const report = await runTrigger(settings(), pushContext('a', 'b'), deps(git, cluster))

    expect(cluster.gets).toEqual(['app-007'])
    expect(report.results.find((r) => r.name === 'app-007')?.status).toBe(Status.Triggered)
    expect(cluster.events.filter((e) => e.release.name === 'app-007')).toHaveLength(1)
  })

  it('skips them all on a re-run for the same digests (idempotent), still with one LIST', async () => {
    const { git, cluster } = fleet()
    await runTrigger(settings(), pushContext('a', 'b'), deps(git, cluster))
    const again = await runTrigger(settings(), pushContext('a', 'b'), deps(git, cluster))

    expect(cluster.lists).toBe(2)
    expect(cluster.gets).toEqual([])
    expect(again.results.filter((r) => r.reason === 'UpToDate')).toHaveLength(NAMES.length)
  })

  it('falls back to a GET each when the namespace cannot be listed', async () => {
    const { git, cluster } = fleet()
    cluster.listFails = true
    const report = await runTrigger(settings(), pushContext('a', 'b'), deps(git, cluster))

    expect(cluster.gets).toHaveLength(NAMES.length + 1)
    expect(report.results.filter((r) => r.status === Status.Triggered)).toHaveLength(NAMES.length)
  })

  it('writes nothing but dry-run patches under dry-run: no Events', async () => {
    const { git, cluster } = fleet()
    const report = await runTrigger(settings({ 'dry-run': 'true' }), pushContext('a', 'b'), deps(git, cluster))

    expect(cluster.patches.every((p) => p.dryRun)).toBe(true)
    expect(cluster.events).toEqual([])
    expect(report.results.filter((r) => r.status === Status.DryRun)).toHaveLength(NAMES.length)
  })
})
