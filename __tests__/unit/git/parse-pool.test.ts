// Parsing on threads must change the speed of a plan, never the plan.

import { describe, expect, it } from 'vitest'
import { parseInParallel } from '../../../src/git/parse-pool.ts'
import { planChanges, type PlanInput } from '../../../src/core/plan.ts'
import type { FileChange, FileContent, HeadFile } from '../../../src/core/model.ts'
import { triggerConfigMap } from '../../../test/support/manifests.ts'

const text = (value: string): FileContent => ({ type: 'file', bytes: new TextEncoder().encode(value) })

function release(i: number): string {
  return `apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app-${i}\n  namespace: apps\nspec:\n  valuesFrom:\n    - kind: ConfigMap\n      name: values-${i}\n`
}

/** `apps` changed values files (one of them broken), each read by a release file that did not change. */
function input(apps: number): Omit<PlanInput, 'parsed'> {
  const values = (i: number, replicas: number): string =>
    i === 7 && replicas === 2
      ? 'kind: ConfigMap\n  bad: [indent\n'
      : triggerConfigMap({ name: `values-${i}`, namespace: 'apps', releases: `app-${i}`, values: `replicas: ${replicas}\nimage: { tag: "1.${i}" }` })
  const changes: FileChange[] = Array.from({ length: apps }, (_, i) => ({
    path: `apps/${i}/values.yaml`,
    status: 'modified',
    before: text(values(i, 1)),
    after: text(values(i, 2)),
  }))
  const headFiles: HeadFile[] = [
    ...changes.flatMap((c) => (c.after === undefined ? [] : [{ path: c.path, content: c.after }])),
    ...Array.from({ length: apps }, (_, i) => ({ path: `apps/${i}/release.yaml`, content: text(release(i)) })),
  ]
  const options = {
    prefix: 'nebius.ai',
    defaultNamespace: 'flux-system',
    semanticDigest: true,
    discover: true,
    paths: ['**/*.yaml'],
    crossNamespaceTargets: [],
  }
  return { changes, headFiles, fullSync: false, options }
}

// The threads start from this many contents here, not from PARALLEL_FROM: the same code path on a smaller commit.
const FROM = 2_000

describe('parseInParallel', () => {
  it('gives the plan the same parsed files the plan would parse itself', async () => {
    const apps = FROM / 2 // two contents (base and head) each
    const commit = input(apps)
    const parsed = await parseInParallel(commit, 2, FROM)
    // Both sides of every change, and every release file that reads a changed source.
    expect(parsed.size).toBe(apps * 3)
    const plan = planChanges({ ...commit, parsed })
    expect(plan).toEqual(planChanges(commit))
    expect(plan.releases).toHaveLength(apps - 1)
    expect(plan.problems.some((p) => p.file === 'apps/7/values.yaml' && p.severity === 'error')).toBe(true)
  }, 120_000)

  it('parses nothing ahead for a small commit or a single thread', async () => {
    expect((await parseInParallel(input(10), 4)).size).toBe(0)
    expect((await parseInParallel(input(FROM / 2 - 1), 4, FROM)).size).toBe(0)
    expect((await parseInParallel(input(FROM / 2), 1, FROM)).size).toBe(0)
  })
})
