// The plan on a repository laid out as Flux's guides recommend (test/support/flux-guide.ts), rendered
// by Flux’s kustomize code in the sandbox from a real git repository through the trigger's own wiring (settings →
// renderRangeOf → preparePlan): a commit editing several values files and one HelmRelease spec →
// exactly the releases whose read keys changed, and those whose spec changed, each with the file
// and line edited.

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Plan } from '../../src/core/model.ts'
import { createGitReader } from '../../src/git/reader.ts'
import { renderRangeOf } from '../../src/modes/rendering.ts'
import { preparePlan } from '../../src/modes/trigger/pipeline.ts'
import { parseSettings } from '../../src/settings.ts'
import { FLUX_GUIDE_REPOSITORY, fluxGuideCommit, fluxGuideRepository } from '../../test/support/flux-guide.ts'
import { createSandbox } from '../../src/sandbox/sandbox.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

describe('the plan of a commit on a Flux-guide repository, rendered by Flux’s kustomize code in the sandbox', () => {
  let repo: Repo | undefined
  let plan: Plan
  const sandbox = createSandbox()

  beforeAll(async () => {
    const created = createRepo('hrt-flux-guide-')
    repo = created
    created.write(fluxGuideRepository())
    const base = created.commit('the fleet')
    created.write(fluxGuideCommit())
    const head = created.commit('values and a chart bump')
    const inputs: Record<string, string> = { 'cluster-root': 'clusters/production' }
    const settings = parseSettings((name) => inputs[name] ?? '')
    const reader = await createGitReader({ cwd: created.dir })
    const render = renderRangeOf(settings, reader, { env: { GITHUB_REPOSITORY: FLUX_GUIDE_REPOSITORY }, sandbox })
    const context = { eventName: 'push', event: { before: base, after: head }, sha: head, runUrl: undefined, refused: undefined }
    const prepared = await preparePlan(settings, context, reader, render)
    expect(prepared.rendered?.head.kustomizations.length).toBeGreaterThan(0)
    plan = prepared.plan
  })

  afterAll(async () => {
    repo?.cleanup()
    await sandbox.close()
  })

  it('renders without problems', () => {
    expect(plan.problems.filter((p) => p.severity !== 'notice')).toEqual([])
  })

  it('triggers exactly the releases whose read keys changed, each at the line edited', () => {
    const triggered = plan.releases
      .filter((r) => r.sources.length > 0)
      .map((r) => ({
        release: `${r.namespace}/${r.name}`,
        sources: r.sources.map((s) => ({ id: s.id.replace(/-[a-z0-9]{10}$/, '-<hash>'), at: `${s.origin?.file}:${s.origin?.line}` })),
      }))
    expect(triggered).toEqual([
      { release: 'atuin/atuin', sources: [{ id: 'ConfigMap/atuin/atuin-values-<hash>', at: 'apps/atuin/production/cluster-values.yaml:2' }] },
      { release: 'grafana/grafana', sources: [{ id: 'ConfigMap/grafana/grafana-values', at: 'apps/grafana/base/values.yaml:4' }] },
      { release: 'loki/loki', sources: [{ id: 'ConfigMap/loki/loki-values', at: 'apps/loki/base/values.yaml:7' }] },
    ])
  })

  it('plans the releases whose rendered spec changed, with the fields and the line edited (the release file or the patch)', () => {
    const specs = plan.releases.flatMap((r) =>
      r.spec === undefined ? [] : [[`${r.namespace}/${r.name}`, r.spec.fields, `${r.spec.origin.file}:${r.spec.origin.line}`]],
    )
    expect(specs).toEqual([
      // The hash-suffixed name moved with the values: helm-controller sees a new generation too.
      ['atuin/atuin', ['spec.valuesFrom'], 'apps/atuin/base/release.yaml:15'],
      ['loki/loki', ['spec.chart.spec.version'], 'apps/loki/production/release-patch.yaml:8'],
      ['redis/redis', ['spec.chart.spec.version'], 'apps/redis/base/release.yaml:10'],
    ])
  })

  it('names a changed key no release reads, and leaves another cluster out', () => {
    const podinfo = plan.sources.find((s) => s.id === 'ConfigMap/podinfo/podinfo-values')
    expect(podinfo?.targets).toEqual([])
    expect(podinfo?.edits).toEqual([{ key: 'extra.yaml', file: 'apps/podinfo/base/extra.yaml', line: 2 }])
    const names = plan.releases.map((r) => r.name)
    expect(names).not.toContain('minio')
    expect(names).not.toContain('podinfo')
  })
})
