// The fleet's plan: one commit planned once for several cluster trees (a generated repository,
// as flux bootstrap lays it out), the matrix of the clusters with work, waves, secrets, and the
// plan file read back exactly as written.

import { describe, expect, it } from 'vitest'
import { parseClusterList, secretName } from '../../../../src/core/cluster-list.ts'
import { ConfigurationError } from '../../../../src/lib/errors.ts'
import type { FileChange, HeadFile } from '../../../../src/core/model.ts'
import { assignWaves, discoverClusters } from '../../../../src/modes/fleet/clusters.ts'
import { matrixOf, readPlanFile, releasesByCluster, writePlanFile, type FleetPlan } from '../../../../src/modes/fleet/fleet-plan.ts'
import { fleetPlanOutputs } from '../../../../src/modes/fleet/fleet-plan-report.ts'
import { scopedPlanner } from '../../../../src/modes/fleet/fleet-planner.ts'
import { clusterPaths } from '../../../../src/modes/fleet/scope.ts'
import { planRendered } from '../../../../src/core/plan-rendered.ts'
import { fleetRepoFiles, type FleetClusterSpec } from '../../../../test/support/fleet-repo.ts'
import { ociRepository, release, renderedSource, repo } from '../../../../test/support/rendered.ts'

const bytes = (text: string) => ({ type: 'file' as const, bytes: new TextEncoder().encode(text) })

function headFiles(files: Record<string, string>): HeadFile[] {
  return Object.entries(files).map(([path, text]) => ({ path, content: bytes(text) }))
}

function changesOf(before: Record<string, string>, after: Record<string, string>): FileChange[] {
  const paths = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()
  return paths.flatMap((path): FileChange[] => {
    const a = before[path]
    const b = after[path]
    if (a === b) return []
    if (a === undefined) return [{ path, status: 'added', after: bytes(b ?? '') }]
    if (b === undefined) return [{ path, status: 'deleted', before: bytes(a) }]
    return [{ path, status: 'modified', before: bytes(a), after: bytes(b) }]
  })
}

const OPTIONS = {
  prefix: 'nebius.ai',
  defaultNamespace: 'flux-system',
  semanticDigest: true,
  discover: true,
  paths: ['**/*.yaml', '**/*.yml'],
  crossNamespaceTargets: [],
}
const RANGE = { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] }

const CLUSTERS: FleetClusterSpec[] = ['staging', 'prod-eu', 'prod-us'].map((name) => ({ name, namespace: 'apps', releases: ['web', 'api'] }))

/** The fleet plan of a commit that edits `edited` (cluster/release pairs) in a 3-cluster repository. */
async function planOf(edited: readonly string[], waves: readonly (readonly string[])[] = []): Promise<FleetPlan> {
  const before = fleetRepoFiles(CLUSTERS, () => 'one')
  const after = fleetRepoFiles(CLUSTERS, (c, r) => (edited.includes(`${c}/${r}`) ? 'two' : 'one'))
  const head = headFiles(after)
  const planner = await scopedPlanner({ changes: changesOf(before, after), headFiles: head, fullSync: false, options: OPTIONS })
  const targets = assignWaves(discoverClusters(head), waves)
  const clusters = await Promise.all(targets.map(async (t) => ({ ...t, ...(await planner.plan(t)) })))
  return { range: RANGE, options: OPTIONS, waves: Math.max(1, waves.length), clusters }
}

describe('planning a fleet once', () => {
  it('finds the three bootstrap trees and names only the clusters whose trees the commit changed in the matrix', async () => {
    const plan = await planOf(['staging/web', 'prod-us/api', 'prod-us/web'])
    expect(plan.clusters.map((c) => [c.name, c.root])).toEqual([
      ['prod-eu', 'clusters/prod-eu'],
      ['prod-us', 'clusters/prod-us'],
      ['staging', 'clusters/staging'],
    ])
    expect(releasesByCluster(plan)).toEqual({ 'prod-eu': [], 'prod-us': ['apps/api', 'apps/web'], staging: ['apps/web'] })
    expect(matrixOf(plan)).toEqual({
      include: [
        { cluster: 'prod-us', secret: 'KUBECONFIG_PROD_US', wave: 1, releases: 2 },
        { cluster: 'staging', secret: 'KUBECONFIG_STAGING', wave: 1, releases: 1 },
      ],
    })
    // Each cluster's part holds only its own tree's sources, with the digests of its own files.
    const staging = plan.clusters.find((c) => c.name === 'staging')
    expect(staging?.plan.sources.map((s) => s.origin.file)).toEqual(['apps/staging/web-values.yaml'])
    expect(staging?.plan.problems).toEqual([])
  })

  it('gives no cluster work for a commit outside every tree, and an empty matrix', async () => {
    const plan = await planOf([])
    expect(matrixOf(plan)).toEqual({ include: [] })
    expect(fleetPlanOutputs(plan)['matrix']).toBe('{"include":[]}')
  })

  it('splits the matrix by wave: the first matching line wins', async () => {
    const plan = await planOf(['staging/web', 'prod-eu/web'], [['staging'], ['prod-*']])
    const outputs = fleetPlanOutputs(plan)
    expect(JSON.parse(outputs['wave-1'] ?? '')).toEqual({ include: [{ cluster: 'staging', secret: 'KUBECONFIG_STAGING', wave: 1, releases: 1 }] })
    expect(JSON.parse(outputs['wave-2'] ?? '')).toEqual({ include: [{ cluster: 'prod-eu', secret: 'KUBECONFIG_PROD_EU', wave: 2, releases: 1 }] })
    expect(outputs['wave-count']).toBe('2')
  })

  it('refuses a cluster no wave names, saying how to fix it', () => {
    expect(() => assignWaves([{ name: 'qa', root: 'clusters/qa' }], [['staging'], ['prod-*']])).toThrow(
      "Cluster 'qa' matches no line of input 'waves': add it to a wave, or end 'waves' with a line '*'.",
    )
  })
})

describe('a cluster tree', () => {
  it('reads its root, the paths of its Flux Kustomizations and what their kustomization.yaml names', () => {
    const files = headFiles({
      'clusters/prod/flux-system/gotk-sync.yaml':
        'apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system}\nspec: {path: ./clusters/prod}\n',
      'clusters/prod/apps.yaml':
        'apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps}\nspec: {path: ./apps/overlays/prod}\n',
      'apps/overlays/prod/kustomization.yaml': 'resources:\n  - ../../base/web\n  - https://example.com/remote.yaml\n  - ../../shared/config.yaml\n',
      'apps/base/web/release.yaml': 'kind: HelmRelease\n',
      'apps/shared/config.yaml': 'kind: ConfigMap\n',
      'apps/overlays/staging/kustomization.yaml': 'resources: [../../base/web]\n',
    })
    expect(clusterPaths('clusters/prod', files)).toEqual(['apps/base/web/**', 'apps/overlays/prod/**', 'clusters/prod/**', 'apps/shared/config.yaml'])
  })
})

describe('the clusters input', () => {
  it('reads name=path and bare paths, or discover', () => {
    expect(parseClusterList(['prod-eu=clusters/prod-eu/', './clusters/staging'])).toEqual({
      kind: 'listed',
      clusters: [
        { name: 'prod-eu', root: 'clusters/prod-eu' },
        { name: 'staging', root: 'clusters/staging' },
      ],
    })
    expect(parseClusterList(['discover'])).toEqual({ kind: 'discover' })
    expect(parseClusterList([])).toBeUndefined()
  })

  it.each([
    [['a b=clusters/x'], "Input 'clusters' has the cluster name 'a b'"],
    [['x=../outside'], "Input 'clusters' has 'x=../outside': give a directory inside the repository"],
    [['prod-eu=clusters/a', 'prod.eu=clusters/b'], "Input 'clusters' names 'prod-eu' and 'prod.eu', which would read the same secret KUBECONFIG_PROD_EU"],
  ])('refuses %j in one sentence', (items, message) => {
    expect(() => parseClusterList(items)).toThrow(ConfigurationError)
    expect(() => parseClusterList(items)).toThrow(message)
  })

  it('derives secret names GitHub accepts', () => {
    expect(secretName('prod-eu')).toBe('KUBECONFIG_PROD_EU')
    expect(secretName('eu.west_1')).toBe('KUBECONFIG_EU_WEST_1')
  })
})

describe('the plan file', () => {
  it('reads back exactly what was written', async () => {
    const plan = await planOf(['staging/web', 'prod-eu/api'], [['staging'], ['*']])
    expect(readPlanFile(writePlanFile(plan), 'plan.json')).toEqual(plan)
  })

  it('reads back a rendered part whole: where each key was edited, renamed generated sources, spec and chart changes and notes', () => {
    const values = (name: string, text: string, extra: Record<string, string> = {}) =>
      renderedSource({
        name,
        labels: { 'nebius.ai/helmrelease-trigger-operator': 'true' },
        data: { 'values.yaml': text, ...extra },
        keyOrigins: { 'values.yaml': { file: 'apps/base/web/values.yaml', line: 1 } },
      })
    const web = (cm: string, version: string) => release({ name: 'web', version, valuesFrom: [{ kind: 'ConfigMap', name: cm }] })
    const api = (values: Record<string, unknown> | undefined) => release({ name: 'api', ...(values ? { values } : {}) })
    const db = release({ name: 'db', chartRef: { kind: 'OCIRepository', name: 'db' } })
    const plan = planRendered({
      base: repo([
        values('web-values-5tb6k2hm4f', 'a: 1\nb: 1\n'),
        web('web-values-5tb6k2hm4f', '1.0.0'),
        api({ replicas: 2, gone: true }),
        ociRepository({ name: 'db', tag: '1.0.0' }),
        db,
      ]),
      head: repo(
        [
          values('web-values-c8h9b7t2g6', 'a: 1\nb: 2\n'),
          web('web-values-c8h9b7t2g6', '1.1.0'),
          api({ replicas: 3 }),
          ociRepository({ name: 'db', tag: '1.1.0' }),
          db,
        ],
        {
          notRendered: [{ kustomization: 'flux-system/remote', reason: 'it uses remote bases' }],
        },
      ),
      fullSync: false,
      options: OPTIONS,
    })
    // What the rendered plan carries beyond a file-by-file one, so the round trip below covers it.
    expect(plan.sources[0]).toMatchObject({ renamedFrom: 'ConfigMap/apps/web-values-5tb6k2hm4f', edits: [{ key: 'values.yaml', line: 2 }] })
    expect(plan.releases.map((r) => [r.name, r.spec?.fields, r.chart?.fields, r.sources.map((s) => s.origin)])).toEqual([
      ['api', ['spec.values.gone', 'spec.values.replicas'], undefined, []],
      ['db', undefined, ['spec.ref.tag'], []],
      ['web', ['spec.chart.spec.version', 'spec.valuesFrom'], undefined, [{ file: 'apps/base/web/values.yaml', line: 2 }]],
    ])
    expect(plan.notes).toHaveLength(1)
    const [target] = assignWaves([{ name: 'staging', root: 'clusters/staging' }], [])
    if (target === undefined) throw new Error('no target')
    const fleet: FleetPlan = {
      range: RANGE,
      options: OPTIONS,
      waves: 1,
      clusters: [{ ...target, paths: ['clusters/staging/**'], plan, rendered: true, renderedReleases: ['apps/api', 'apps/db', 'apps/web'] }],
    }
    const read = readPlanFile(writePlanFile(fleet), 'plan.json')
    expect(read).toEqual(fleet)
    // A removed field is expected absent after the round trip too (JSON has no undefined).
    const gone = read.clusters[0]?.plan.releases[0]?.spec?.expect.find((e) => e.path.join('.') === 'values.gone')
    expect(gone).toEqual({ path: ['values', 'gone'], value: undefined })
  })

  it('names the file and the field when damaged, and the version when from another release', async () => {
    const json = JSON.parse(writePlanFile(await planOf(['staging/web'])))
    json.clusters[2].plan.releases[0].sources[0].digest = 'sha256:short'
    expect(() => readPlanFile(JSON.stringify(json), 'fleet-plan.json')).toThrow(
      'fleet-plan.json: clusters[2].plan.releases[0].sources[0].digest must be a digest sha256:<64 hex>; the plan file is damaged, plan again.',
    )
    expect(() => readPlanFile(JSON.stringify({ ...json, version: 1 }), 'fleet-plan.json')).toThrow(
      'fleet-plan.json is plan file version 1; this helmrelease-trigger reads version 4: plan and trigger with the same release.',
    )
    expect(() => readPlanFile('{', 'fleet-plan.json')).toThrow('fleet-plan.json is not JSON')
  })
})
