// Which way the repository was read, in one sentence: pure, from what the render found and how
// this repository is known. Repository content is quoted, credentials never shown.

import { describe, expect, it } from 'vitest'
import type { RenderedRepository } from '../../../src/core/rendered.ts'
import { readingOf, thisRepositoryOf } from '../../../src/modes/rendering.ts'
import type { RenderedChange, Unapplied } from '../../../src/render/render-change.ts'
import { FakeGit } from '../../../test/support/fakes.ts'

const view = (kustomizations: string[]): RenderedRepository => ({ objects: [], problems: [], notRendered: [], kustomizations })
const rendered = (by: RenderedChange['source']['by'], kustomizations = ['flux-system/apps']): RenderedChange => ({
  base: view(kustomizations),
  head: view(kustomizations),
  source: { gitRepositories: ['flux-system/flux-system'], by },
})
const origin = { urls: ['https://user:hunter2@github.com/acme/fleet.git'], from: "the remote 'origin'" }

describe('readingOf', () => {
  it('says the repository was rendered, from which GitRepository and why', () => {
    expect(readingOf(rendered('url'), origin, undefined)).toBe(
      "Read as Flux applies it: 1 Flux Kustomization from GitRepository 'flux-system/flux-system', its URL is this repository's (github.com/acme/fleet, from the remote 'origin').",
    )
    expect(readingOf(rendered('bootstrap', ['a/a', 'a/b']), origin, undefined)).toBe(
      "Read as Flux applies it: 2 Flux Kustomizations from GitRepository 'flux-system/flux-system', Flux bootstrap's name, as no GitRepository's URL is this repository's (github.com/acme/fleet, from the remote 'origin').",
    )
  })

  it('says why it read file by file: no Flux Kustomization, none under the root, or none reading this repository', () => {
    const none: Unapplied = { unapplied: true, kustomizations: 0, gitRepositories: [] }
    expect(readingOf(none, origin, undefined)).toBe('Read file by file: the repository holds no Flux Kustomization.')
    expect(readingOf(rendered('url', []), origin, 'clusters/prod')).toBe(
      "Read file by file: no Flux Kustomization under the cluster root 'clusters/prod' reads this repository.",
    )
    const hostile: Unapplied = {
      unapplied: true,
      kustomizations: 5,
      gitRepositories: [
        { id: 'a/one', url: 'https://github.com/a/one\n::error::forged' },
        { id: 'a/two', url: 'https://github.com/a/two' },
        { id: 'a/three', url: 'https://github.com/a/three' },
        { id: 'a/four', url: 'https://github.com/a/four' },
      ],
    }
    const line = readingOf(hostile, origin, undefined)
    expect(line).not.toMatch(/[\n\r]/)
    expect(line).not.toContain('hunter2')
    expect(line).toBe(
      "Read file by file: 5 Flux Kustomizations found, but none reads this repository (github.com/acme/fleet, from the remote 'origin'); " +
        "its GitRepositories fetch 'https://github.com/a/one⏎::error::forged' ('a/one'), 'https://github.com/a/two' ('a/two'), 'https://github.com/a/three' ('a/three') and 1 more. " +
        'Name the one that fetches this repository with --git-repository NAMESPACE/NAME (input git-repository) or set GITHUB_REPOSITORY=owner/name.',
    )
  })
})

describe('thisRepositoryOf', () => {
  it('takes GITHUB_REPOSITORY when set, on GITHUB_SERVER_URL', async () => {
    const git = new FakeGit().withRemotes({ name: 'origin', url: 'https://github.com/other/repo' })
    expect(await thisRepositoryOf({ GITHUB_REPOSITORY: 'acme/fleet', GITHUB_SERVER_URL: 'https://ghe.example.com' }, git)).toEqual({
      urls: ['https://ghe.example.com/acme/fleet'],
      from: 'GITHUB_REPOSITORY',
    })
  })

  it('else every remote, origin first', async () => {
    const git = new FakeGit().withRemotes({ name: 'origin', url: 'git@github.com:acme/fleet' }, { name: 'fork', url: 'https://github.com/me/fleet' })
    expect(await thisRepositoryOf({}, git)).toEqual({
      urls: ['git@github.com:acme/fleet', 'https://github.com/me/fleet'],
      from: "the remotes 'origin', 'fork'",
    })
  })
})
