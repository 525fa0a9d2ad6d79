// The trigger's deployed diff on a fake cluster: the revision before read before the patch, the
// new one after; values from a Secret shown as paths only; storage that cannot be read is said,
// never a failure.

import { describe, expect, it } from 'vitest'
import { encodeRelease } from '../../../../src/core/helm-storage.ts'
import { toHelmRelease } from '../../../../src/core/helmrelease.ts'
import { Status, type ReleaseResult } from '../../../../src/engine/result.ts'
import { ForbiddenError } from '../../../../src/kube/api-error.ts'
import { readBefore, withDeployed } from '../../../../src/modes/trigger/deployed.ts'
import { FakeCluster } from '../../../../test/support/fakes.ts'

const manifest = (tag: string): string =>
  `---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: web, image: "web:${tag}"}\n`

function stored(version: number, tag: string, config: Record<string, unknown>): Record<string, string> {
  return {
    release: encodeRelease({
      name: 'web',
      namespace: 'apps',
      version,
      info: { status: 'deployed' },
      manifest: manifest(tag),
      config,
      chart: { metadata: { name: 'web', version: '1.0.0' } },
    }),
  }
}

function live(valuesFrom: { kind: string; name: string }[]) {
  return toHelmRelease({
    metadata: { namespace: 'apps', name: 'web' },
    spec: { valuesFrom },
    status: { history: [{ name: 'web', namespace: 'apps', version: 1 }] },
  })
}

const result: ReleaseResult = {
  namespace: 'apps',
  name: 'web',
  sources: [],
  status: Status.Upgraded,
  reason: 'UpgradeSucceeded',
  message: '',
  durationMs: 1,
  severity: 'none',
  revisionBefore: 1,
  revisionAfter: 2,
}

describe('the deployed diff of a trigger run', () => {
  it('compares the revision read before the patch with the one helm-controller wrote, though the first is gone by then', async () => {
    const cluster = new FakeCluster()
    cluster.setSource({ kind: 'Secret', namespace: 'apps', name: 'sh.helm.release.v1.web.v1' }, stored(1, '1', { tag: '1' }))
    const release = live([{ kind: 'ConfigMap', name: 'web-values' }])
    const before = await readBefore(cluster, [release], 4)
    // Pruned during the upgrade; revision 2 stored.
    cluster.setSource({ kind: 'Secret', namespace: 'apps', name: 'sh.helm.release.v1.web.v1' }, {})
    cluster.setSource({ kind: 'Secret', namespace: 'apps', name: 'sh.helm.release.v1.web.v2' }, stored(2, '2', { tag: '2' }))
    const [diffed] = await withDeployed(cluster, [result], before, new Map([['apps/web', release]]), 4)
    expect(diffed?.deployed).toEqual({
      from: 1,
      to: 2,
      headline: ['images: web web:1 → web:2', 'rolls out Deployment apps/web'],
      objects: [
        {
          object: 'Deployment apps/web',
          kind: 'Deployment',
          change: 'changed',
          paths: [{ path: 'spec.template.spec.containers[name=web].image', change: 'changed', before: 'web:1', after: 'web:2' }],
        },
      ],
      hooks: [],
      values: [{ path: 'tag', change: 'changed', before: '1', after: '2' }],
      valuesHidden: false,
      folded: 0,
    })
  })

  it('shows paths only, in the values and in every object, when the release reads a Secret: a chart may write its value anywhere', async () => {
    const cluster = new FakeCluster()
    // The chart writes the password into the container image tag's place, as a chart may.
    cluster.setSource({ kind: 'Secret', namespace: 'apps', name: 'sh.helm.release.v1.web.v1' }, stored(1, 'hunter2', { password: 'hunter2' }))
    cluster.setSource({ kind: 'Secret', namespace: 'apps', name: 'sh.helm.release.v1.web.v2' }, stored(2, 'swordfish', { password: 'swordfish' }))
    const release = live([{ kind: 'Secret', name: 'web-auth' }])
    const [diffed] = await withDeployed(cluster, [result], await readBefore(cluster, [release], 4), new Map([['apps/web', release]]), 4)
    expect(diffed?.deployed).toMatchObject({
      headline: ['images: web changed', 'rolls out Deployment apps/web'],
      objects: [{ paths: [{ path: 'spec.template.spec.containers[name=web].image', change: 'changed' }] }],
      values: [{ path: 'password', change: 'changed' }],
      valuesHidden: true,
    })
    expect(JSON.stringify(diffed)).not.toMatch(/hunter2|swordfish/)
  })

  it('says why the diff is not known when storage cannot be read, and keeps the result', async () => {
    const cluster = new FakeCluster()
    cluster.getSource = async () => {
      throw new ForbiddenError('Forbidden: cannot get secrets in namespace apps.')
    }
    const release = live([])
    const [diffed] = await withDeployed(cluster, [result], await readBefore(cluster, [release], 4), new Map([['apps/web', release]]), 4)
    expect(diffed).toMatchObject({ status: Status.Upgraded, deployed: { unavailable: 'Forbidden: cannot get secrets in namespace apps.' } })
  })

  it('leaves a result without a new revision alone', async () => {
    const cluster = new FakeCluster()
    const same = { ...result, status: Status.Unchanged, revisionAfter: 1 }
    expect(await withDeployed(cluster, [same], new Map(), new Map(), 4)).toEqual([same])
  })
})
