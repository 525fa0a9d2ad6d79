// A repository holding two clusters' trees, as `flux bootstrap` lays them out: clusters/production
// and clusters/staging, each with its own flux-system/flux-system and the same app Kustomizations
// (same Flux names, same release names). Rendered by Flux's kustomize code in the sandbox through
// the trigger's own wiring (settings → renderRangeOf → preparePlan), without a cluster-root: each
// tree is planned apart and every entry names its cluster; a run that talks to a cluster plans
// only the tree that cluster's live bootstrap applies.

import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { ForbiddenError } from '../../src/kube/api-error.ts'
import { createGitReader } from '../../src/git/reader.ts'
import { renderCommitOf, renderRangeOf } from '../../src/modes/rendering.ts'
import { clusterLocator } from '../../src/modes/trigger/own-cluster.ts'
import { planReport, preparePlan, type PreparedPlan } from '../../src/modes/trigger/pipeline.ts'
import { summaryMarkdown, textReport, triggerResult } from '../../src/modes/trigger/report.ts'
import { triggerVerdict } from '../../src/modes/trigger/verdict.ts'
import { createSandbox } from '../../src/sandbox/sandbox.ts'
import { parseSettings, triggerRunOptionsOf } from '../../src/settings.ts'
import { ConfigurationError } from '../../src/lib/errors.ts'
import { FakeCluster } from '../../test/support/fakes.ts'
import { clusterValues, FLUX_GUIDE_REPOSITORY, FLUX_GUIDE_URL, fluxGuideCommit, fluxGuideRepository } from '../../test/support/flux-guide.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { fleetRepoFiles } from '../../test/support/fleet-repo.ts'
import type { LocateCluster } from '../../src/modes/trigger/own-cluster.ts'

const sandbox = createSandbox()
const repos: Repo[] = []

afterAll(() => sandbox.close())
afterEach(() => {
  for (const repo of repos.splice(0)) repo.cleanup()
})

async function prepare(
  edit: Record<string, string>,
  locate?: LocateCluster,
  inputs: Record<string, string> = {},
  clusters: readonly string[] = ['production', 'staging'],
): Promise<PreparedPlan> {
  const repo = createRepo('hrt-clusters-')
  repos.push(repo)
  repo.write(fluxGuideRepository({ clusters }))
  const base = repo.commit('two clusters')
  repo.write(edit)
  const head = repo.commit('the change')
  const settings = parseSettings((name) => inputs[name] ?? '')
  const reader = await createGitReader({ cwd: repo.dir })
  const render = renderRangeOf(settings, reader, { env: { GITHUB_REPOSITORY: FLUX_GUIDE_REPOSITORY }, sandbox })
  const context = { eventName: 'push', event: { before: base, after: head }, sha: head, runUrl: undefined, refused: undefined }
  return preparePlan(triggerRunOptionsOf(settings), context, reader, render, locate)
}

const releases = (prepared: PreparedPlan): string[] => prepared.plan.releases.map((r) => `${r.cluster}: ${r.namespace}/${r.name}`).sort()

const STAGING_ONLY = { 'apps/minio/staging/cluster-values.yaml': clusterValues('minio', 'staging', 2) }

function liveCluster(bootstrap: FakeCluster['bootstrap']): { locate: LocateCluster; cluster: FakeCluster } {
  const cluster = new FakeCluster()
  cluster.bootstrap = bootstrap
  return { cluster, locate: clusterLocator(async () => cluster) }
}

describe('a repository of two cluster trees with the same Flux names, planned without a cluster-root', () => {
  it('plans a change in one cluster’s overlay as that cluster’s only, naming it', async () => {
    const prepared = await prepare(STAGING_ONLY)
    expect(prepared.clusters).toEqual(['production', 'staging'])
    expect(releases(prepared)).toEqual(['staging: minio/minio'])
    expect(prepared.plan.sources.map((s) => [s.cluster, s.id.replace(/-[a-z0-9]{10}$/, '-<hash>')])).toEqual([
      ['staging', 'ConfigMap/minio/minio-values-<hash>'],
    ])
  })

  it('with flux-system/apps in both trees (flux bootstrap’s layout), a change in one cluster’s apps is that cluster’s only', async () => {
    const repo = createRepo('hrt-clusters-')
    repos.push(repo)
    const specs = [
      { name: 'eu', namespace: 'web', releases: ['web'] },
      { name: 'us', namespace: 'web', releases: ['web'] },
    ]
    repo.write(fleetRepoFiles(specs, () => 'one'))
    const base = repo.commit('two clusters')
    repo.write(fleetRepoFiles(specs, (cluster) => (cluster === 'us' ? 'two' : 'one')))
    const head = repo.commit('us only')
    const settings = parseSettings(() => '')
    const reader = await createGitReader({ cwd: repo.dir })
    const render = renderRangeOf(settings, reader, { env: { GITHUB_REPOSITORY: FLUX_GUIDE_REPOSITORY }, sandbox })
    const context = { eventName: 'push', event: { before: base, after: head }, sha: head, runUrl: undefined, refused: undefined }
    const prepared = await preparePlan(triggerRunOptionsOf(settings), context, reader, render)
    expect(prepared.clusters).toEqual(['eu', 'us'])
    expect(releases(prepared)).toEqual(['us: web/web'])
    expect(prepared.plan.sources.map((s) => [s.cluster, s.id, `${s.origin.file}:${s.origin.line}`])).toEqual([
      ['us', 'ConfigMap/web/web-values', 'apps/us/web-values.yaml:13'],
    ])
  })

  it('plans each cluster’s releases apart: a shared base changes both, an overlay one, each entry naming its cluster', async () => {
    const prepared = await prepare(fluxGuideCommit())
    // grafana's base values change both clusters' grafana: two entries, not one merged.
    expect(releases(prepared).filter((r) => r.endsWith('grafana/grafana'))).toEqual(['production: grafana/grafana', 'staging: grafana/grafana'])
    expect(releases(prepared)).toContain('production: atuin/atuin')
    expect(releases(prepared)).not.toContain('staging: atuin/atuin')
    expect(releases(prepared)).toContain('staging: minio/minio')
    expect(prepared.plan.releases.every((r) => r.cluster !== undefined)).toBe(true)
    expect(prepared.plan.problems.filter((p) => p.severity !== 'notice')).toEqual([])
    expect(prepared.plan.notes?.[0]).toMatch(/one cluster tree at a time: 2 cluster trees found \('clusters\/production', 'clusters\/staging'\)/)
  })

  it('shows one section per cluster with work in the summary, the CLI, the check and the comment; the outputs name the cluster', async () => {
    const prepared = await prepare(STAGING_ONLY)
    const options = triggerRunOptionsOf(parseSettings(() => ''))
    const report = planReport(prepared, options, 'plan only')
    const summary = summaryMarkdown(report)
    expect(summary).toContain('## helmrelease-trigger: plan: 1 release would be triggered')
    expect(summary).toContain('### Cluster <code>staging</code>')
    expect(summary).not.toContain('### Cluster <code>production</code>')
    expect(summary).toContain('_Nothing to trigger in cluster <code>production</code>._')
    const text = textReport(report)
    expect(text).toContain('== cluster staging ==')
    expect(text).toContain('nothing to trigger in cluster production')
    const verdict = triggerVerdict(report, { failOn: 'error', runUrl: undefined })
    expect(verdict.comment).toContain('### Cluster <code>staging</code>')
    expect(verdict.comment).toContain('### Plan for cluster <code>staging</code>')
    expect(verdict.annotations.map((a) => a.title)).toEqual([
      expect.stringMatching(/^cluster staging: ConfigMap\/minio\/minio-values-[a-z0-9]{10} modified$/),
      // The hash-suffixed name moved with the values: a new generation of the release too.
      'cluster staging: HelmRelease minio/minio spec modified',
    ])
    const outputs = triggerResult(report, 'error').outputs
    expect(JSON.parse(outputs['skipped'] ?? '')).toEqual([
      expect.objectContaining({ cluster: 'staging', namespace: 'minio', name: 'minio', status: 'Planned' }),
    ])
    const plan = JSON.parse(outputs['plan'] ?? '')
    expect(plan.clusters).toEqual(['production', 'staging'])
    expect(plan.releases.map((r: { cluster: string; name: string }) => `${r.cluster}/${r.name}`)).toEqual(['staging/minio'])
  })

  it('keeps a cluster-root run as it was: that tree only, entries named by no cluster', async () => {
    const prepared = await prepare(fluxGuideCommit(), undefined, { 'cluster-root': 'clusters/staging' })
    expect(prepared.clusters).toBeUndefined()
    expect(prepared.plan.releases.map((r) => [r.cluster, r.name])).toContainEqual([undefined, 'minio'])
    expect(prepared.plan.releases.map((r) => r.name)).not.toContain('atuin')
  })
})

describe('discover --from-git on a repository of two cluster trees', () => {
  it('reads every tree: each cluster’s releases are declared, none hidden by the other’s same Flux names', async () => {
    const repo = createRepo('hrt-clusters-')
    repos.push(repo)
    repo.write(fluxGuideRepository())
    const head = repo.commit('two clusters')
    const reader = await createGitReader({ cwd: repo.dir })
    const render = renderCommitOf(
      parseSettings(() => ''),
      reader,
      { env: { GITHUB_REPOSITORY: FLUX_GUIDE_REPOSITORY }, sandbox },
    )
    const rendered = await render(head)
    const values = rendered?.objects.filter((o) => o.kind === 'ConfigMap' && o.name.startsWith('minio-values')) ?? []
    // minio's values differ per cluster (its overlay replaces values.yaml): one generated ConfigMap from each tree.
    expect(values.map((o) => o.keyOrigins['values.yaml']?.file).sort()).toEqual([
      'apps/minio/production/cluster-values.yaml',
      'apps/minio/staging/cluster-values.yaml',
    ])
  })
})

describe('a run that talks to one cluster plans only the tree its live Flux bootstrap applies', () => {
  it('reads flux-system/flux-system from the cluster and plans that tree, naming it', async () => {
    const { locate } = liveCluster({ path: './clusters/staging', source: 'GitRepository/flux-system/flux-system', url: `${FLUX_GUIDE_URL}.git` })
    const prepared = await prepare(fluxGuideCommit(), locate)
    expect(prepared.clusters).toEqual(['staging'])
    expect(new Set(prepared.plan.releases.map((r) => r.cluster))).toEqual(new Set(['staging']))
    expect(prepared.plan.releases.map((r) => r.name)).toContain('minio')
    expect(prepared.plan.releases.map((r) => r.name)).not.toContain('atuin')
    expect(prepared.plan.notes?.[0]).toContain(
      "The cluster's Flux bootstrap (flux-system/flux-system) applies 'clusters/staging': only cluster 'staging' is planned.",
    )
  })

  it('fails in one sentence listing the trees when the bootstrap cannot be read, and says what to set', async () => {
    const { locate, cluster } = liveCluster(undefined)
    cluster.bootstrapError = new ForbiddenError('Forbidden: cannot get kustomizations flux-system/flux-system.')
    const failed = prepare(fluxGuideCommit(), locate)
    await expect(failed).rejects.toBeInstanceOf(ConfigurationError)
    await expect(failed).rejects.toThrow(
      /^This repository holds 2 cluster trees \('clusters\/production', 'clusters\/staging'\) and the cluster's Flux bootstrap .* could not be read \(Forbidden: .*\): grant get on them, or set the cluster-root input/,
    )
  })

  it('refuses a bootstrap that applies another repository or none of the trees', async () => {
    const other = liveCluster({ path: './clusters/staging', source: 'GitRepository/flux-system/flux-system', url: 'https://github.com/acme/other' })
    await expect(prepare(fluxGuideCommit(), other.locate)).rejects.toThrow(/applies '\.\/clusters\/staging' of 'github\.com\/acme\/other', which is none of/)
    const elsewhere = liveCluster({ path: './clusters/dev', source: 'GitRepository/flux-system/flux-system', url: FLUX_GUIDE_URL })
    await expect(prepare(fluxGuideCommit(), elsewhere.locate)).rejects.toThrow(
      /applies '\.\/clusters\/dev' of .*, which is none of this repository's 2 cluster trees/,
    )
  })

  it('never asks the cluster when the repository holds one tree', async () => {
    const { locate, cluster } = liveCluster(undefined)
    cluster.bootstrapError = new Error('must not be read')
    const prepared = await prepare({ 'apps/atuin/production/cluster-values.yaml': clusterValues('atuin', 'production', 5) }, locate, {}, ['production'])
    expect(prepared.clusters).toBeUndefined()
    expect(prepared.plan.releases.map((r) => [r.cluster, r.name])).toEqual([[undefined, 'atuin']])
  })
})
