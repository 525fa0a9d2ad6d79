// Reading Flux objects and telling whether a GitRepository URL is this repository.

import { describe, expect, it } from 'vitest'
import { artifactGenerator, fluxKustomization, normalisePath, repositoryKey } from '../../../src/render/flux-objects.ts'

describe('repositoryKey', () => {
  it('spells https, scp-like and ssh URLs of one repository the same', () => {
    const keys = [
      'https://github.com/Acme/fleet.git',
      'https://token@github.com/Acme/fleet',
      'git@github.com:Acme/fleet.git',
      'ssh://git@github.com/Acme/fleet',
      'ssh://git@GitHub.com:22/Acme/fleet/',
    ].map(repositoryKey)
    expect(new Set(keys)).toEqual(new Set(['github.com/Acme/fleet']))
  })

  it('keeps different repositories apart', () => {
    expect(repositoryKey('https://github.com/acme/fleet')).not.toBe(repositoryKey('https://github.com/acme/fleet-infra'))
  })
})

describe('fluxKustomization', () => {
  it('reads id, source and a normalised path, defaulting namespaces to flux-system', () => {
    const k = fluxKustomization({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'apps' },
      spec: { path: './apps//production/', sourceRef: { kind: 'GitRepository', name: 'flux-system' } },
    })
    expect(k).toMatchObject({
      id: 'flux-system/apps',
      path: 'apps/production',
      sourceRef: { kind: 'GitRepository', name: 'flux-system', namespace: 'flux-system' },
    })
  })

  it('ignores kustomize.config.k8s.io Kustomizations and ones without a source', () => {
    expect(fluxKustomization({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', metadata: { name: 'x' }, spec: {} })).toBeUndefined()
    expect(
      fluxKustomization({ apiVersion: 'kustomize.toolkit.fluxcd.io/v1', kind: 'Kustomization', metadata: { name: 'x' }, spec: { path: './' } }),
    ).toBeUndefined()
  })

  it('normalises paths the way Flux joins them to the artifact root', () => {
    expect(normalisePath('./')).toBe('')
    expect(normalisePath('/clusters/prod/../staging')).toBe('clusters/staging')
  })
})

describe('artifactGenerator', () => {
  it('reads sources by alias and artifacts with their copy rules in order', () => {
    const g = artifactGenerator({
      apiVersion: 'source.extensions.fluxcd.io/v1beta1',
      kind: 'ArtifactGenerator',
      metadata: { name: 'flux-system', namespace: 'flux-system' },
      spec: {
        sources: [{ alias: 'monorepo', kind: 'GitRepository', name: 'flux-system' }],
        artifacts: [
          {
            name: 'apps',
            copy: [
              { from: '@monorepo/apps/base/**', to: '@artifact/base/' },
              { from: '@monorepo/apps/staging/**', to: '@artifact/staging/', exclude: ['*.md'] },
            ],
          },
        ],
      },
    })
    expect(g?.sources.get('monorepo')).toEqual({ kind: 'GitRepository', name: 'flux-system', namespace: 'flux-system' })
    expect(g?.artifacts).toEqual([
      {
        id: 'flux-system/apps',
        copy: [
          { from: '@monorepo/apps/base/**', to: '@artifact/base/', exclude: [] },
          { from: '@monorepo/apps/staging/**', to: '@artifact/staging/', exclude: ['*.md'] },
        ],
      },
    ])
  })
})
