// The CLI in a clone whose only hint of "this repository" is its remotes: with GITHUB_REPOSITORY
// unset, the GitRepository that fetches the clone's origin (in any of the spellings Flux
// GitRepositories use) is this repository, and the commit is planned rendered as Flux applies
// it. When no GitRepository fetches it, the run says so in one line naming what it found and the
// flag to set, and reads file by file. Real git, the real sandboxed renderer, the CLI's own main.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main, type CliIo } from '../../src/entry/cli.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

/** A repository laid out by hand rather than by bootstrap: its GitRepository is not flux-system/flux-system. */
function homeOps(url: string, replicas: number): Record<string, string> {
  return {
    'clusters/prod/sync.yaml': [
      'apiVersion: source.toolkit.fluxcd.io/v1',
      'kind: GitRepository',
      'metadata: {name: home-ops, namespace: flux-system}',
      `spec: {interval: 1m, url: "${url}", ref: {branch: main}}`,
      '---',
      'apiVersion: kustomize.toolkit.fluxcd.io/v1',
      'kind: Kustomization',
      'metadata: {name: cluster, namespace: flux-system}',
      'spec: {interval: 10m, path: ./clusters/prod, prune: true, sourceRef: {kind: GitRepository, name: home-ops}}',
      '---',
      'apiVersion: kustomize.toolkit.fluxcd.io/v1',
      'kind: Kustomization',
      'metadata: {name: apps, namespace: flux-system}',
      'spec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: home-ops}}',
      '',
    ].join('\n'),
    'apps/kustomization.yaml': [
      'namespace: apps',
      'resources: [release.yaml]',
      'configMapGenerator:',
      '  - name: app-values',
      '    files: [values.yaml]',
      '    options: {disableNameSuffixHash: true}',
      '',
    ].join('\n'),
    'apps/release.yaml': [
      'apiVersion: helm.toolkit.fluxcd.io/v2',
      'kind: HelmRelease',
      'metadata: {name: app}',
      'spec:',
      '  interval: 10m',
      '  chart: {spec: {chart: app, sourceRef: {kind: HelmRepository, name: charts}}}',
      '  valuesFrom: [{kind: ConfigMap, name: app-values}]',
      '',
    ].join('\n'),
    'apps/values.yaml': `replicas: ${replicas}\n`,
  }
}

/** An io that records what is printed; env holds no GITHUB_REPOSITORY. */
function recordingIo(cwd: string): CliIo & { readonly stdout: () => string } {
  const out: string[] = []
  return { out: (text) => out.push(text), err: (text) => out.push(text), env: {}, cwd, stdout: () => out.join('') }
}

const FLUX_URL = 'ssh://git@github.com/acme/home-ops'

describe('the CLI finds this repository from the clone’s remotes', () => {
  const repos: Repo[] = []
  let repo: Repo

  beforeAll(() => {
    repo = createRepo('hrt-this-repository-')
    repos.push(repo)
    repo.write(homeOps(FLUX_URL, 1))
    repo.commit('the fleet')
    repo.write({ 'apps/values.yaml': 'replicas: 2\n' })
    repo.commit('scale app')
  })
  afterAll(() => {
    for (const r of repos) r.cleanup()
  })

  const setOrigin = (url: string, others: Record<string, string> = {}): void => {
    for (const name of repo.git('remote').split('\n').filter(Boolean)) repo.git('remote', 'remove', name)
    for (const [name, other] of Object.entries(others)) repo.git('remote', 'add', name, other)
    repo.git('remote', 'add', 'origin', url)
  }

  it.each([
    ['https', 'https://github.com/acme/home-ops'],
    ['https with .git', 'https://github.com/acme/home-ops.git'],
    ['ssh://', 'ssh://git@github.com/acme/home-ops'],
    ['scp-like', 'git@github.com:acme/home-ops.git'],
    ['https with a token, a port and another case', 'https://x-access-token:ghs_SECRET@GitHub.com:443/acme/home-ops'],
  ])('plans the rendered change when origin is %s', async (_, url) => {
    setOrigin(url, { upstream: 'https://github.com/someone/else' })
    const io = recordingIo(repo.dir)
    expect(await main(['plan', '--base', 'HEAD~1', '--head', 'HEAD'], io)).toBe(0)
    const out = io.stdout()
    expect(out).toContain(
      "note: Read as Flux applies it: 2 Flux Kustomizations from GitRepository 'flux-system/home-ops', its URL is this repository's (github.com/acme/home-ops, from the remotes 'origin', 'upstream').",
    )
    expect(out).toMatch(/^ConfigMap\/apps\/app-values {2,}modified .* apps\/values\.yaml:1 {2,}apps\/app$/m)
    expect(out).not.toContain('SECRET')
  })

  it('matches another host alike', async () => {
    const other = createRepo('hrt-this-repository-gitlab-')
    repos.push(other)
    other.write(homeOps('https://gitlab.example.com/group/sub/home-ops.git', 1))
    other.commit('the fleet')
    other.write({ 'apps/values.yaml': 'replicas: 2\n' })
    other.commit('scale app')
    other.git('remote', 'add', 'origin', 'git@gitlab.example.com:group/sub/home-ops')
    const io = recordingIo(other.dir)
    expect(await main(['plan', '--base', 'HEAD~1', '--head', 'HEAD'], io)).toBe(0)
    expect(io.stdout()).toContain("its URL is this repository's (gitlab.example.com/group/sub/home-ops, from the remote 'origin')")
    expect(io.stdout()).toMatch(/^ConfigMap\/apps\/app-values .* apps\/app$/m)
  })

  it('says in one line that no GitRepository fetches this repository, naming what it found and the flag, and reads file by file', async () => {
    setOrigin('https://github.com/someone/fork')
    const io = recordingIo(repo.dir)
    expect(await main(['plan', '--base', 'HEAD~1', '--head', 'HEAD'], io)).toBe(0)
    const notes = io
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('note: '))
    expect(notes).toContain(
      "note: Read file by file: 2 Flux Kustomizations found, but none reads this repository (github.com/someone/fork, from the remote 'origin'); " +
        "its GitRepositories fetch 'ssh://git@github.com/acme/home-ops' ('flux-system/home-ops'). " +
        'Name the one that fetches this repository with --git-repository NAMESPACE/NAME (input git-repository) or set GITHUB_REPOSITORY=owner/name.',
    )
    expect(io.stdout()).not.toContain('ConfigMap/apps/app-values')

    // Either way out works.
    const named = recordingIo(repo.dir)
    expect(await main(['plan', '--base', 'HEAD~1', '--head', 'HEAD', '--git-repository', 'flux-system/home-ops'], named)).toBe(0)
    expect(named.stdout()).toContain("note: Read as Flux applies it: 2 Flux Kustomizations from GitRepository 'flux-system/home-ops', named by git-repository.")
    expect(named.stdout()).toMatch(/^ConfigMap\/apps\/app-values .* apps\/app$/m)
    const github = recordingIo(repo.dir)
    expect(await main(['plan', '--base', 'HEAD~1', '--head', 'HEAD', '--github-repository', 'acme/home-ops'], github)).toBe(0)
    expect(github.stdout()).toContain("its URL is this repository's (github.com/acme/home-ops, from GITHUB_REPOSITORY)")
  })

  it('says so when the clone has no remote at all', async () => {
    setOrigin('https://example.org/x')
    repo.git('remote', 'remove', 'origin')
    const io = recordingIo(repo.dir)
    expect(await main(['plan', '--base', 'HEAD~1', '--head', 'HEAD'], io)).toBe(0)
    expect(io.stdout()).toContain("but none reads this repository (this repository's URL is unknown (no GITHUB_REPOSITORY, no remote))")
  })
})
