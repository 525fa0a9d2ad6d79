// The kustomization.yaml kustomize-controller builds: the user's file or a generated listing,
// with the Flux Kustomization's fields and origin annotations added.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fluxKustomizationText, generatedResources, withCommonMetadata } from '../../../src/render/flux-layer.ts'
import { fluxKustomization, type FluxKustomization } from '../../../src/render/flux-objects.ts'
import { parseOrigin } from '../../../src/render/provenance.ts'

function flux(spec: Record<string, unknown>): FluxKustomization {
  const k = fluxKustomization({
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name: 'a' },
    spec: { sourceRef: { kind: 'GitRepository', name: 'r' }, ...spec },
  })
  if (k === undefined) throw new Error('bad fixture')
  return k
}

describe('fluxKustomizationText', () => {
  it('lists generated resources and asks for origin annotations when the path has no kustomization.yaml', () => {
    expect(parse(fluxKustomizationText(undefined, ['./a.yaml', './nested'], flux({})))).toEqual({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: ['./a.yaml', './nested'],
      buildMetadata: ['originAnnotations'],
    })
  })

  it("overrides the namespace with targetNamespace and appends patches and components after the user's", () => {
    const existing = 'namespace: mine\nresources: [r.yaml]\npatches:\n  - path: p.yaml\ncomponents: [../c1]\nbuildMetadata: [managedByLabel]\n'
    const k = flux({ targetNamespace: 'theirs', patches: [{ patch: 'x', target: { kind: 'HelmRelease' } }], components: ['../c2'] })
    expect(parse(fluxKustomizationText(existing, [], k))).toEqual({
      namespace: 'theirs',
      resources: ['r.yaml'],
      patches: [{ path: 'p.yaml' }, { patch: 'x', target: { kind: 'HelmRelease' } }],
      components: ['../c1', '../c2'],
      buildMetadata: ['managedByLabel', 'originAnnotations'],
    })
  })

  it('replaces an image of the same name and adds the others', () => {
    const existing = 'images:\n  - name: app\n    newTag: "1"\n  - name: db\n    newTag: "2"\n'
    const text = fluxKustomizationText(
      existing,
      [],
      flux({
        images: [
          { name: 'app', newTag: '9' },
          { name: 'cache', newName: 'redis' },
        ],
      }),
    )
    expect(parse(text).images).toEqual([
      { name: 'app', newTag: '9' },
      { name: 'db', newTag: '2' },
      { name: 'cache', newName: 'redis' },
    ])
  })
})

describe('generatedResources', () => {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hrt-flux-layer-'))
    for (const [path, text] of Object.entries({
      'b.yaml': 'x',
      'a.yml': 'x',
      'notes.md': 'x',
      'sub/c.yaml': 'x',
      'nested/kustomization.yaml': 'resources: []',
      'nested/inner.yaml': 'x',
      '.github/workflows/ci.yml': 'x',
      '.sops.yaml': 'x',
    })) {
      await mkdir(join(dir, path, '..'), { recursive: true })
      await writeFile(join(dir, path), text)
    }
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('lists YAML files in lexical order, kustomization directories whole, CI files left out', async () => {
    expect(await generatedResources(dir)).toEqual(['./a.yml', './b.yaml', './nested', './sub/c.yaml'])
  })
})

describe('withCommonMetadata', () => {
  it("adds Flux's labels and annotations over the object's own", () => {
    const object = { kind: 'ConfigMap', metadata: { name: 'x', labels: { a: '1', b: '1' } } }
    expect(withCommonMetadata(object, { commonMetadata: { labels: { b: '2' }, annotations: { team: 'x' } } })).toEqual({
      kind: 'ConfigMap',
      metadata: { name: 'x', labels: { a: '1', b: '2' }, annotations: { team: 'x' } },
    })
  })
})

describe('parseOrigin', () => {
  it("reads kustomize's origin annotation for files and generators, remote files not being ours", () => {
    expect(parseOrigin('path: ../base/release.yaml\n')).toEqual({ kind: 'file', path: '../base/release.yaml' })
    expect(parseOrigin('configuredIn: kustomization.yaml\nconfiguredBy:\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n')).toEqual({
      kind: 'generator',
      configuredIn: 'kustomization.yaml',
      generator: 'ConfigMapGenerator',
    })
    expect(parseOrigin('path: x.yaml\nrepo: https://github.com/o/r\n')).toBeUndefined()
  })
})
