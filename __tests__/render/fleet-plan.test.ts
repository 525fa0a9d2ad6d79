// The fleet plan on a generated Flux repository of three clusters (staging, prod-eu, prod-us),
// rendered by Flux's kustomize code in the sandbox, through the fleet's own wiring (settings →
// planFleet): the clusters share the apps' bases (hash suffix on for some, off for others) and an
// infrastructure Kustomization of one path, each with its own overlays and postBuild values.
// Commits that touch only a shared base, only one cluster's overlay, and only one cluster's
// release spec each give the matrix of exactly the clusters they change, with the releases and
// the file:line edited; the shared Kustomization is built once for all three clusters; a build
// that fails on one cluster is one problem naming it, and the others are still planned.

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGitReader } from '../../src/git/reader.ts'
import { matrixOf, readPlanFile, writePlanFile, type FleetPlan } from '../../src/modes/fleet/fleet-plan.ts'
import { planFleet } from '../../src/modes/fleet/fleet-planner.ts'
import { parseSettings } from '../../src/settings.ts'
import {
  app,
  clusterValues,
  FLUX_GUIDE_REPOSITORY,
  fluxGuideRepository,
  INFRASTRUCTURE,
  infrastructureValues,
  releasePatch,
  values,
} from '../../test/support/flux-guide.ts'
import { countingSandbox } from '../../test/support/sandbox.ts'
import { triggerConfigMap } from '../../test/support/manifests.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const CLUSTERS = ['staging', 'prod-eu', 'prod-us']
let repo: Repo
const sandbox = countingSandbox()

const legacyValues = (level: string) => triggerConfigMap({ name: 'legacy-values', namespace: 'legacy', releases: 'legacy', values: `level: ${level}\n` })

beforeAll(async () => {
  repo = createRepo('hrt-fleet-render-repo-')
  // A directory no Flux Kustomization applies, listed as a cluster root: planned file by file.
  repo.write({ ...fluxGuideRepository({ clusters: CLUSTERS, infrastructure: true }), 'legacy/values.yaml': legacyValues('one') })
  repo.commit('three clusters')
})

afterAll(async () => {
  await sandbox.close()
  repo?.cleanup()
})

/** Commits `edit` on top of the last commit and plans the push for `clusters` (default: discovered). */
async function planPush(edit: Record<string, string>, clusters = 'discover'): Promise<FleetPlan> {
  const before = repo.git('rev-parse', 'HEAD')
  repo.write(edit)
  const after = repo.commit(Object.keys(edit).join(', '))
  const inputs: Record<string, string> = { clusters }
  const settings = parseSettings((name) => inputs[name] ?? '')
  const reader = await createGitReader({ cwd: repo.dir })
  const context = { eventName: 'push', event: { before, after }, sha: after, runUrl: undefined, refused: undefined }
  return planFleet(settings, context, reader, { env: { GITHUB_REPOSITORY: FLUX_GUIDE_REPOSITORY }, sandbox })
}

const unhashed = (id: string) => id.replace(/-[a-z0-9]{10}$/, '-<hash>')

/** Per cluster, each release with where its changed sources were edited (file by file: the document), and its spec change. */
function parts(plan: FleetPlan): Record<string, string[]> {
  return Object.fromEntries(
    plan.clusters.map((c) => [
      c.name,
      c.plan.releases.map((r) =>
        [
          `${r.namespace}/${r.name}`,
          ...r.sources.map((s) => {
            const at = s.origin ?? c.plan.sources.find((p) => p.id === s.id)?.origin
            return `${unhashed(s.id)} at ${at?.file}:${at?.line}`
          }),
          ...(r.spec === undefined ? [] : [`spec ${r.spec.fields.join(',')} at ${r.spec.origin.file}:${r.spec.origin.line}`]),
        ].join(' | '),
      ),
    ]),
  )
}

const matrix = (plan: FleetPlan) => matrixOf(plan).include.map((e) => `${e.cluster}:${e.releases}`)
const errors = (plan: FleetPlan) => plan.clusters.flatMap((c) => c.plan.problems.filter((p) => p.severity !== 'notice').map((p) => `${c.name}: ${p.message}`))
const infrastructureBuilds = () => sandbox.builds.filter((b) => b === INFRASTRUCTURE).length

describe('the fleet plan of a repository of three clusters, each root rendered by Flux’s kustomize code', () => {
  it('a commit to the shared bases changes every cluster, and the shared Kustomization is built once for all three', async () => {
    const built = infrastructureBuilds()
    const plan = await planPush({
      'apps/grafana/base/values.yaml': values('grafana', '1.1.0', '128Mi'),
      'apps/redis/base/values.yaml': values('redis', '1.0.0', '256Mi'),
      [`${INFRASTRUCTURE}/values.yaml`]: infrastructureValues(3),
    })
    expect(errors(plan)).toEqual([])
    expect(plan.clusters.map((c) => [c.name, c.rendered])).toEqual([
      ['prod-eu', true],
      ['prod-us', true],
      ['staging', true],
    ])
    const every = [
      'grafana/grafana | ConfigMap/grafana/grafana-values at apps/grafana/base/values.yaml:4',
      'ingress/ingress | ConfigMap/ingress/ingress-values at infrastructure/values.yaml:1',
      // Hash suffix on: the generated name moved with the values, so the release's spec changed too.
      'redis/redis | ConfigMap/redis/redis-values-<hash> at apps/redis/base/values.yaml:7 | spec spec.valuesFrom at apps/redis/base/release.yaml:15',
    ]
    expect(parts(plan)).toEqual({ 'prod-eu': every, 'prod-us': every, staging: every })
    expect(matrix(plan)).toEqual(['prod-eu:3', 'prod-us:3', 'staging:3'])
    // Each cluster substituted its own name into the one build they share: three different digests.
    const ingress = plan.clusters.map((c) => c.plan.sources.find((s) => s.id === 'ConfigMap/ingress/ingress-values')?.digest)
    expect(new Set(ingress).size).toBe(3)
    // One build at head and one at base, not one per cluster.
    expect(infrastructureBuilds() - built).toBe(2)
    // The saved plan file holds the rendered parts whole.
    expect(readPlanFile(writePlanFile(plan), 'fleet-plan.json')).toEqual(plan)
  })

  it("a commit to one cluster's overlay changes that cluster only", async () => {
    const plan = await planPush({
      'apps/atuin/prod-eu/cluster-values.yaml': clusterValues('atuin', 'prod-eu', 3).replace('replicaCount: 3', 'replicaCount: 5'),
    })
    expect(errors(plan)).toEqual([])
    expect(parts(plan)).toEqual({
      'prod-eu': [
        'atuin/atuin | ConfigMap/atuin/atuin-values-<hash> at apps/atuin/prod-eu/cluster-values.yaml:2 | spec spec.valuesFrom at apps/atuin/base/release.yaml:15',
      ],
      'prod-us': [],
      staging: [],
    })
    expect(matrix(plan)).toEqual(['prod-eu:1'])
    const [source] = plan.clusters[0]?.plan.sources ?? []
    expect(source?.renamedFrom).toMatch(/^ConfigMap\/atuin\/atuin-values-[a-z0-9]{10}$/)
    expect(source?.renamedFrom).not.toBe(source?.id)
  })

  it("a commit to one cluster's release patch is a spec change there only, waited for and not patched", async () => {
    const plan = await planPush({ 'apps/loki/prod-us/release-patch.yaml': releasePatch(app('loki'), '2.1.0') })
    expect(errors(plan)).toEqual([])
    // The spec change names the field where it was edited: the cluster's patch.
    expect(parts(plan)).toEqual({
      'prod-eu': [],
      'prod-us': ['loki/loki | spec spec.chart.spec.version at apps/loki/prod-us/release-patch.yaml:8'],
      staging: [],
    })
    expect(matrix(plan)).toEqual(['prod-us:1'])
  })

  it('a build that fails on one cluster is one problem naming the cluster, the Flux Kustomization and kustomize; the rest is planned', async () => {
    const clusters = [...CLUSTERS.map((c) => `${c}=clusters/${c}`), 'legacy=legacy'].join('\n')
    const plan = await planPush(
      {
        'apps/minio/staging/kustomization.yaml': 'resources:\n  - ../base\n  - missing.yaml\n',
        'apps/grafana/base/values.yaml': values('grafana', '1.2.0', '128Mi'),
        'legacy/values.yaml': legacyValues('two'),
      },
      clusters,
    )
    const failures = errors(plan)
    expect(failures).toHaveLength(1)
    expect(failures[0]).toMatch(
      /^staging: Cluster staging: Flux Kustomization flux-system\/minio \(\.\/apps\/minio\/staging\) could not be rendered: Flux Kustomization flux-system\/minio \(path \.\/apps\/minio\/staging\) does not build: .*missing\.yaml/,
    )
    const grafana = 'grafana/grafana | ConfigMap/grafana/grafana-values at apps/grafana/base/values.yaml:4'
    expect(parts(plan)).toEqual({
      staging: [grafana],
      'prod-eu': [grafana],
      'prod-us': [grafana],
      legacy: ['legacy/legacy | ConfigMap/legacy/legacy-values at legacy/values.yaml:1'],
    })
    // The root without Flux Kustomizations was read file by file.
    expect(plan.clusters.map((c) => [c.name, c.rendered ?? false])).toEqual([
      ['staging', true],
      ['prod-eu', true],
      ['prod-us', true],
      ['legacy', false],
    ])
  })
})
