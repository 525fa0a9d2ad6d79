// One cluster's rendered part executed from the saved plan file (`trigger --plan FILE --cluster
// NAME`): the release whose read key changed is patched with the plan's digest, the release
// whose spec changed is waited for and never patched, a release reading an unchanged key is not
// brought back by discovery in the cluster, and nothing is planned again.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { planRendered, renderedReleaseKeys } from '../../../../src/core/plan-rendered.ts'
import type { Triggered } from '../../../../src/engine/outcome.ts'
import { Status } from '../../../../src/engine/result.ts'
import { assignWaves } from '../../../../src/modes/fleet/clusters.ts'
import { writePlanFile, type FleetPlan } from '../../../../src/modes/fleet/fleet-plan.ts'
import { runClusterPart, type FleetDeps } from '../../../../src/modes/fleet/run.ts'
import { readResultFile } from '../../../../src/modes/fleet/fleet-result.ts'
import { withoutSecrets } from '../../../../src/lib/untrusted.ts'
import { gatherResults } from '../../../../src/modes/fleet/rollout.ts'
import { fleetSummaryMarkdown } from '../../../../src/modes/fleet/fleet-summary.ts'
import { parseSettings } from '../../../../src/settings.ts'
import { FakeClock, FakeCluster, recordingWaiter } from '../../../../test/support/fakes.ts'
import { release, renderedSource, repo } from '../../../../test/support/rendered.ts'

const dir = mkdtempSync(join(tmpdir(), 'hrt-cluster-part-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const OPTIONS = { prefix: 'nebius.ai', defaultNamespace: 'flux-system', semanticDigest: true, discover: true, paths: ['**/*.yaml'], crossNamespaceTargets: [] }
const values = (replicas: string) => ({ 'values.yaml': `image: v1\nreplicas: ${replicas}\n`, 'other.yaml': 'x: 1\n' })
const cm = (replicas: string) =>
  renderedSource({ name: 'web-values', data: values(replicas), keyOrigins: { 'values.yaml': { file: 'apps/base/web/values.yaml', line: 1 } } })
const web = release({ name: 'web', valuesFrom: [{ kind: 'ConfigMap', name: 'web-values' }] })
// Reads a key of the same ConfigMap that the commit leaves alone: never triggered.
const otherReads = [{ kind: 'ConfigMap', name: 'web-values', valuesKey: 'other.yaml' }]
const other = release({ name: 'other', valuesFrom: otherReads })
const db = (version: string) => release({ name: 'db', version, origin: { file: 'apps/prod-eu/db-patch.yaml', line: 1 } })
const dbSpec = (version: string) => ({ chart: { spec: { chart: 'db', version, sourceRef: { kind: 'HelmRepository', name: 'charts' } } } })

/** The plan file of one cluster whose rendered part changes web's values and db's chart version. */
function planFile(): { file: string; plan: FleetPlan } {
  const base = repo([cm('1'), web, other, db('1.0.0')])
  const head = repo([cm('2'), web, other, db('2.0.0')])
  const plan = planRendered({ base, head, fullSync: false, options: OPTIONS })
  const [target] = assignWaves([{ name: 'prod-eu', root: 'clusters/prod-eu' }], [])
  if (target === undefined) throw new Error('no target')
  const fleet: FleetPlan = {
    range: { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] },
    options: OPTIONS,
    waves: 1,
    clusters: [{ ...target, paths: ['clusters/prod-eu/**'], plan, rendered: true, renderedReleases: [...renderedReleaseKeys(head)].sort() }],
  }
  const file = join(dir, 'fleet-plan.json')
  writeFileSync(file, writePlanFile(fleet))
  return { file, plan: fleet }
}

function deps(cluster: FakeCluster, seen: Triggered[]): FleetDeps {
  return {
    git: async () => {
      throw new Error('a cluster part never reads the repository again')
    },
    connect: async () => cluster,
    clock: new FakeClock(),
    log: { info: () => undefined, warning: () => undefined },
    outcome: recordingWaiter(seen),
  }
}

const context = { eventName: 'push', event: {}, sha: 'b'.repeat(40), runUrl: undefined, refused: undefined }

describe("a cluster's rendered part from the plan file", () => {
  it('patches the release whose read key changed with the planned digest and waits for the spec change unpatched', async () => {
    const { file, plan } = planFile()
    const cluster = new FakeCluster()
      .addRelease('apps', 'web')
      .addRelease('apps', 'other', { valuesFrom: otherReads })
      .addRelease('apps', 'db', dbSpec('2.0.0'))
      .setSource({ kind: 'ConfigMap', namespace: 'apps', name: 'web-values' }, values('2'))
    const seen: Triggered[] = []
    const settings = parseSettings((name) => ({ 'plan-file': file, cluster: 'prod-eu' })[name] ?? '')
    const { report, result } = await runClusterPart(settings, context, deps(cluster, seen))

    // Discovery in the cluster finds `other` reading the ConfigMap too; the plan knew it and left it out.
    expect(cluster.patches.map((p) => p.ref.name)).toEqual(['web'])
    const planned = plan.clusters[0]?.plan.releases.find((r) => r.name === 'web')?.sources[0]
    const annotations = cluster.release('apps', 'web').annotations
    expect(JSON.parse(annotations['nebius.ai/config-digest'] ?? '{}')).toEqual({ 'ConfigMap/apps/web-values': planned?.digest })
    expect(cluster.events[0]?.message).toContain('at apps/base/web/values.yaml:2')
    // db is waited for from its new generation, without a token of ours.
    expect(seen.map((t) => [t.planned.name, t.token === undefined])).toEqual([
      ['web', false],
      ['db', true],
    ])
    expect(report.results.map((r) => [r.name, r.status, r.spec?.fields, r.spec?.origin])).toEqual([
      ['db', Status.Upgraded, ['spec.chart.spec.version'], { file: 'apps/prod-eu/db-patch.yaml', line: 1 }],
      ['web', Status.Upgraded, undefined, undefined],
    ])
    expect(result.state).toBe('Succeeded')
  })

  it('refuses apply: true in one sentence: the plan file holds digests, not rendered objects', async () => {
    const { file } = planFile()
    const settings = parseSettings((name) => ({ 'plan-file': file, cluster: 'prod-eu', apply: 'true' })[name] ?? '')
    await expect(runClusterPart(settings, context, deps(new FakeCluster(), []))).rejects.toThrow(
      "Cluster prod-eu's part was planned on its root rendered by kustomize, and apply: true cannot apply rendered objects from a plan file",
    )
  })
})

describe("a cluster's part that fails before its report", () => {
  const resultOf = (file: string) => readResultFile(readFileSync(file, 'utf8'), file)

  it('still writes its result: Failed, with the error in one plain line, and the run still fails', async () => {
    const { file, plan } = planFile()
    const resultFile = join(dir, 'no-connection', 'result-prod-eu.json')
    const settings = parseSettings((name) => ({ 'plan-file': file, cluster: 'prod-eu', 'result-file': resultFile })[name] ?? '')
    const failing: FleetDeps = {
      ...deps(new FakeCluster(), []),
      // An apiserver's text is untrusted: a line break or a workflow command in it stays inert.
      connect: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:443\n::error::forged')),
    }
    await expect(runClusterPart(settings, context, failing)).rejects.toThrow('ECONNREFUSED')
    const result = resultOf(resultFile)
    expect(result).toMatchObject({ cluster: 'prod-eu', wave: 1, state: 'Failed', results: [] })
    expect(result.message).toBe('connect ECONNREFUSED 10.0.0.1:443⏎::error::forged')
    const gathered = gatherResults(plan, [result])
    expect(gathered.map((c) => [c.cluster, c.state])).toEqual([['prod-eu', 'Failed']])
    expect(fleetSummaryMarkdown({ plan, clusters: gathered })).toContain('❌ Failed')
  })

  it('takes the secrets the log masks out of the reason: the file is printed by another job, where no mask applies', async () => {
    const { file } = planFile()
    const resultFile = join(dir, 'secret', 'result-prod-eu.json')
    const settings = parseSettings((name) => ({ 'plan-file': file, cluster: 'prod-eu', 'result-file': resultFile })[name] ?? '')
    const failing: FleetDeps = {
      ...deps(new FakeCluster(), []),
      connect: () => Promise.reject(new Error('Unauthorized: token s3cr3t-t0ken refused')),
      redact: (text) => withoutSecrets(text, ['s3cr3t-t0ken']),
    }
    await expect(runClusterPart(settings, context, failing)).rejects.toThrow()
    expect(resultOf(resultFile).message).toBe('Unauthorized: token *** refused')
  })

  it('writes it when the plan file cannot be read, and for a cluster the plan does not have', async () => {
    const missing = join(dir, 'absent-plan', 'result-prod-eu.json')
    const noPlan = parseSettings((name) => ({ 'plan-file': join(dir, 'absent.json'), cluster: 'prod-eu', 'result-file': missing })[name] ?? '')
    await expect(runClusterPart(noPlan, context, deps(new FakeCluster(), []))).rejects.toThrow('Cannot read the plan file')
    expect(resultOf(missing)).toMatchObject({ cluster: 'prod-eu', state: 'Failed', message: expect.stringContaining('Cannot read the plan file') })

    const { file } = planFile()
    const unknown = join(dir, 'unknown-cluster', 'result-prod-us.json')
    const notPlanned = parseSettings((name) => ({ 'plan-file': file, cluster: 'prod-us', 'result-file': unknown })[name] ?? '')
    await expect(runClusterPart(notPlanned, context, deps(new FakeCluster(), []))).rejects.toThrow()
    expect(resultOf(unknown)).toMatchObject({ cluster: 'prod-us', state: 'Failed' })
    expect(existsSync(unknown)).toBe(true)
  })
})
