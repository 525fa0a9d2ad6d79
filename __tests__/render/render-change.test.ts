// renderChange's contract on real git repositories and the real renderer (Flux's kustomize code
// in the sandbox): what is built for a commit (cost follows the change), the chain,
// ExternalArtifacts, substitution sources, provenance, and bad input (a failing build, remote
// references, big files that are no source).

import { symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { RenderedObject, RenderedRepository } from '../../src/core/rendered.ts'
import { createGitReader } from '../../src/git/reader.ts'
import { isRendered, renderChange, type RenderChangeOptions, type RenderedChange, type Unapplied } from '../../src/render/render-change.ts'
import { countingSandbox } from '../../test/support/sandbox.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const URL = 'https://github.com/acme/fleet'
const sandbox = countingSandbox()
const repos: Repo[] = []

afterAll(() => sandbox.close())
afterEach(() => {
  for (const repo of repos.splice(0)) repo.cleanup()
})

function fluxKustomization(name: string, path: string, extra: string[] = [], source = 'kind: GitRepository, name: flux-system'): string {
  return [
    'apiVersion: kustomize.toolkit.fluxcd.io/v1',
    'kind: Kustomization',
    `metadata: {name: ${name}, namespace: flux-system}`,
    'spec:',
    '  interval: 10m',
    `  path: ${path}`,
    `  sourceRef: {${source}}`,
    ...extra,
    '',
  ].join('\n')
}

const BOOTSTRAP = {
  'clusters/prod/flux-system/gotk-sync.yaml': [
    'apiVersion: source.toolkit.fluxcd.io/v1',
    'kind: GitRepository',
    'metadata: {name: flux-system, namespace: flux-system}',
    `spec: {url: "git@github.com:acme/fleet.git"}`,
    '---',
    fluxKustomization('flux-system', './clusters/prod'),
  ].join('\n'),
}

function app(name: string, values = 'replicaCount: 1\n'): Record<string, string> {
  return {
    [`clusters/prod/${name}.yaml`]: fluxKustomization(name, `./apps/${name}`, [`  targetNamespace: ${name}`]),
    [`apps/${name}/kustomization.yaml`]: [
      'resources: [release.yaml]',
      'configMapGenerator:',
      `  - name: ${name}-values`,
      '    files: [values.yaml]',
      '    literals:',
      '      - tier=gold',
      '',
    ].join('\n'),
    [`apps/${name}/values.yaml`]: values,
    [`apps/${name}/release.yaml`]: `apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: ${name}}\nspec:\n  valuesFrom: [{kind: ConfigMap, name: ${name}-values}]\n`,
  }
}

interface Rendered {
  readonly change: RenderedChange | undefined
  /** What the repository held instead, when nothing read it. */
  readonly unapplied?: Unapplied
  readonly builds: string[]
}

async function render(
  files: Record<string, string>,
  edit: Record<string, string> | undefined,
  options: Partial<RenderChangeOptions> = {},
): Promise<Rendered & { repo: Repo }> {
  const repo = createRepo('hrt-render-')
  repos.push(repo)
  repo.write(files)
  const base = repo.commit('base')
  let head = base
  if (edit) {
    repo.write(edit)
    head = repo.commit('edit')
  }
  const before = sandbox.builds.length
  const reader = await createGitReader({ cwd: repo.dir })
  const result = await renderChange(reader, {
    base: edit ? base : undefined,
    head,
    changedFiles: Object.keys(edit ?? {}),
    repositoryUrls: [URL],
    clusterRoot: 'clusters/prod',
    sandbox,
    ...options,
  })
  const builds = sandbox.builds.slice(before)
  return isRendered(result) ? { change: result, builds, repo } : { change: undefined, unapplied: result, builds, repo }
}

const named = (view: RenderedRepository | undefined, kind: string, prefix: string): RenderedObject | undefined =>
  view?.objects.find((o) => o.kind === kind && o.name.startsWith(prefix))

describe('what a commit builds', () => {
  it('builds the root and the edited app at head, only the app at base, and lists every Kustomization', async () => {
    const { change, builds } = await render({ ...BOOTSTRAP, ...app('one'), ...app('two'), ...app('three') }, { 'apps/two/values.yaml': 'replicaCount: 2\n' })
    expect(builds.sort()).toEqual(['apps/two', 'apps/two', 'clusters/prod'])
    expect(change?.head.kustomizations).toEqual(['flux-system/flux-system', 'flux-system/one', 'flux-system/three', 'flux-system/two'])
    // In kustomize-controller's order: resources, then what generators made (no kind reordering).
    expect(change?.head.objects.filter((o) => o.kustomization === 'flux-system/two').map((o) => `${o.kind}/${o.namespace}`)).toEqual([
      'HelmRelease/two',
      'ConfigMap/two',
    ])
    expect(change?.head.objects.some((o) => o.kustomization === 'flux-system/one')).toBe(false)
    const before = named(change?.base, 'ConfigMap', 'two-values')
    const after = named(change?.head, 'ConfigMap', 'two-values')
    expect(before?.object.data).toEqual({ tier: 'gold', 'values.yaml': 'replicaCount: 1\n' })
    expect(after?.object.data).toEqual({ tier: 'gold', 'values.yaml': 'replicaCount: 2\n' })
    expect(before?.name).not.toBe(after?.name) // the hash suffix follows the content
  })

  it('rebuilds a Kustomization whose own definition changed, at both commits', async () => {
    const edit = { 'clusters/prod/one.yaml': fluxKustomization('one', './apps/one', ['  targetNamespace: elsewhere']) }
    const { change, builds } = await render({ ...BOOTSTRAP, ...app('one'), ...app('two') }, edit)
    expect(builds.sort()).toEqual(['apps/one', 'apps/one', 'clusters/prod', 'clusters/prod'])
    expect(named(change?.base, 'HelmRelease', 'one')?.namespace).toBe('one')
    expect(named(change?.head, 'HelmRelease', 'one')?.namespace).toBe('elsewhere')
  })

  it('renders every Kustomization with scope all, and every one found without a cluster root', async () => {
    const all = await render({ ...BOOTSTRAP, ...app('one'), ...app('two') }, undefined, { scope: 'all' })
    expect(all.builds.sort()).toEqual(['apps/one', 'apps/two', 'clusters/prod'])
    const rootless = await render({ ...BOOTSTRAP, ...app('one'), ...app('two') }, undefined, { scope: 'all', clusterRoot: undefined })
    expect(rootless.change?.head.kustomizations).toEqual(['flux-system/flux-system', 'flux-system/one', 'flux-system/two'])
  })

  it('renders a suspended Kustomization and names it suspended, so its changes are planned but not waited for', async () => {
    const held = { ...app('held'), 'clusters/prod/held.yaml': fluxKustomization('held', './apps/held', ['  suspend: true']) }
    const { change } = await render({ ...BOOTSTRAP, ...app('one'), ...held }, { 'apps/held/values.yaml': 'replicaCount: 3\n' })
    expect(change?.head.suspended).toEqual(['flux-system/held'])
    expect(named(change?.head, 'ConfigMap', 'held-values')?.object.data).toMatchObject({ 'values.yaml': 'replicaCount: 3\n' })
  })

  it('says what the repository holds when no Flux Kustomization applies it, so the caller reads files one by one and says why', async () => {
    const plain = await render({ 'apps/x/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n' }, undefined, { clusterRoot: undefined })
    expect(plain.change).toBeUndefined()
    expect(plain.unapplied).toEqual({ unapplied: true, kustomizations: 0, gitRepositories: [] })
    const other =
      'apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: other, namespace: other}\nspec: {url: "ssh://git@example.org/someone/else"}\n'
    const elsewhere = await render(
      { 'k.yaml': fluxKustomization('k', './', [], 'kind: GitRepository, name: other, namespace: other'), 'source.yaml': other },
      undefined,
      { clusterRoot: undefined },
    )
    expect(elsewhere.change).toBeUndefined()
    expect(elsewhere.unapplied).toEqual({
      unapplied: true,
      kustomizations: 1,
      gitRepositories: [{ id: 'other/other', url: 'ssh://git@example.org/someone/else' }],
    })
  })

  it('finds this repository by any of its URLs, in any spelling, and says how', async () => {
    const source =
      'apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: flux-system}\nspec: {url: "https://github.com/acme/fleet"}\n'
    const files = {
      'k.yaml': fluxKustomization('k', './apps', [], 'kind: GitRepository, name: fleet'),
      'source.yaml': source,
      'apps/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
    }
    const found = await render(files, undefined, {
      clusterRoot: undefined,
      repositoryUrls: ['git@example.org:me/fork.git', 'ssh://git@GitHub.com:22/acme/fleet.git'],
    })
    expect(found.change?.source).toEqual({ gitRepositories: ['flux-system/fleet'], by: 'url' })
    expect(found.change?.head.kustomizations).toEqual(['flux-system/k'])
    const named = await render(files, undefined, { clusterRoot: undefined, repositoryUrls: [], gitRepository: 'flux-system/fleet' })
    expect(named.change?.source).toEqual({ gitRepositories: ['flux-system/fleet'], by: 'name' })
    const unknown = await render(files, undefined, { clusterRoot: undefined, repositoryUrls: [] })
    expect(unknown.change).toBeUndefined()
    expect(unknown.unapplied?.gitRepositories).toEqual([{ id: 'flux-system/fleet', url: 'https://github.com/acme/fleet' }])
  })
})

describe('provenance', () => {
  it('names the document line of a resource and the file, literal or env line of each generated key', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/a.yaml': fluxKustomization('a', './apps/a'),
      'apps/a/kustomization.yaml': [
        'resources: [releases.yaml]',
        'configMapGenerator:',
        '  - name: a-values',
        '    files:',
        '      - values.yaml',
        '      - extra.yaml=other.yaml',
        '    literals:',
        '      - tier=gold',
        '    envs: [a.env]',
        'generatorOptions: {disableNameSuffixHash: true}',
        '',
      ].join('\n'),
      'apps/a/values.yaml': 'x: 1\n',
      'apps/a/other.yaml': 'y: 1\n',
      'apps/a/a.env': '# comment\r\nzone=eu\r\n\r\nsize=m\r\n',
      'apps/a/releases.yaml':
        '# leading comment\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: first}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: second}\n',
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    const values = named(change?.head, 'ConfigMap', 'a-values')
    expect(values?.origin).toEqual({ file: 'apps/a/kustomization.yaml', line: 3 })
    expect(values?.keyOrigins).toEqual({
      'values.yaml': { file: 'apps/a/values.yaml', line: 1 },
      'extra.yaml': { file: 'apps/a/other.yaml', line: 1 },
      tier: { file: 'apps/a/kustomization.yaml', line: 8 },
      zone: { file: 'apps/a/a.env', line: 2 },
      size: { file: 'apps/a/a.env', line: 4 },
    })
    expect(named(change?.head, 'HelmRelease', 'first')?.origin).toEqual({ file: 'apps/a/releases.yaml', line: 2 })
    expect(named(change?.head, 'HelmRelease', 'second')?.origin).toEqual({ file: 'apps/a/releases.yaml', line: 6 })
    // No origin annotation is left on what kustomize-controller would apply.
    expect(JSON.stringify(change?.head.objects.map((o) => o.object))).not.toContain('config.kubernetes.io/origin')
  })

  it('follows an overlay merge: base keys point at the base, merged keys at the overlay', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/a.yaml': fluxKustomization('a', './apps/a/prod'),
      'apps/a/base/kustomization.yaml': 'configMapGenerator:\n  - name: v\n    literals: [tier=gold, zone=eu]\n',
      'apps/a/prod/kustomization.yaml': 'resources: [../base]\nconfigMapGenerator:\n  - name: v\n    behavior: merge\n    literals:\n      - tier=platinum\n',
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    expect(named(change?.head, 'ConfigMap', 'v-')?.keyOrigins).toEqual({
      tier: { file: 'apps/a/prod/kustomization.yaml', line: 6 },
      zone: { file: 'apps/a/base/kustomization.yaml', line: 3 },
    })
  })
  it('points each key of a ConfigMap or Secret written as a resource at its value: the line after a block scalar key, the key line otherwise', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/a.yaml': fluxKustomization('a', './apps/a'),
      'apps/a/kustomization.yaml': 'resources: [sources.yaml]\n',
      'apps/a/sources.yaml': [
        'apiVersion: v1',
        'kind: Secret',
        'metadata: {name: creds}',
        'stringData:',
        '  pin: "1234"',
        '---',
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: web-values',
        'data:',
        '  tier: gold',
        '  values.yaml: |',
        '    replicas: 2',
        '    image: web',
        '',
      ].join('\n'),
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    const values = named(change?.head, 'ConfigMap', 'web-values')
    expect(values?.origin).toEqual({ file: 'apps/a/sources.yaml', line: 7 })
    expect(values?.keyOrigins).toEqual({ tier: { file: 'apps/a/sources.yaml', line: 12 }, 'values.yaml': { file: 'apps/a/sources.yaml', line: 14 } })
    expect(named(change?.head, 'Secret', 'creds')?.keyOrigins).toEqual({ pin: { file: 'apps/a/sources.yaml', line: 5 } })
  })
})

describe('sources', () => {
  it('renders Kustomizations reading an ExternalArtifact an ArtifactGenerator copies out of this repository', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/artifacts.yaml': [
        'apiVersion: source.extensions.fluxcd.io/v1beta1',
        'kind: ArtifactGenerator',
        'metadata: {name: flux-system, namespace: flux-system}',
        'spec:',
        '  sources:',
        '    - {alias: monorepo, kind: GitRepository, name: flux-system}',
        '  artifacts:',
        '    - name: apps',
        '      copy:',
        '        - {from: "@monorepo/apps/base/**", to: "@artifact/base/"}',
        '        - {from: "@monorepo/apps/staging/**", to: "@artifact/staging/"}',
        '',
      ].join('\n'),
      'clusters/prod/apps.yaml': fluxKustomization('apps', './staging', [], 'kind: ExternalArtifact, name: apps'),
      'apps/base/podinfo/kustomization.yaml': 'resources: [release.yaml]\nconfigMapGenerator:\n  - name: podinfo-values\n    files: [values.yaml]\n',
      'apps/base/podinfo/values.yaml': 'a: 1\n',
      'apps/base/podinfo/release.yaml': 'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo}\n',
      'apps/staging/kustomization.yaml': 'namespace: staging\nresources: [../base/podinfo]\n',
    }
    const { change, builds } = await render(files, { 'apps/base/podinfo/values.yaml': 'a: 2\n' })
    expect(builds.sort()).toEqual(['clusters/prod', 'staging', 'staging'])
    const values = named(change?.head, 'ConfigMap', 'podinfo-values')
    expect(values?.namespace).toBe('staging')
    expect(values?.kustomization).toBe('flux-system/apps')
    expect(values?.keyOrigins['values.yaml']).toEqual({ file: 'apps/base/podinfo/values.yaml', line: 1 })
    expect(named(change?.head, 'HelmRelease', 'podinfo')?.origin).toEqual({ file: 'apps/base/podinfo/release.yaml', line: 1 })
  })

  it('substitutes from repository ConfigMaps and Secrets, reports what is missing, honours the opt-out', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/vars.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata: {cluster: prod, region: eu}\n',
      'clusters/prod/secret-vars.yaml': `apiVersion: v1\nkind: Secret\nmetadata: {name: secret-vars, namespace: flux-system}\ndata: {token: ${Buffer.from('s3cr3t').toString('base64')}}\n`,
      'clusters/prod/a.yaml': fluxKustomization('a', './apps/a', [
        '  postBuild:',
        '    substitute: {region: us}',
        '    substituteFrom:',
        '      - {kind: ConfigMap, name: cluster-vars}',
        '      - {kind: Secret, name: secret-vars}',
        '      - {kind: Secret, name: not-here, optional: true}',
      ]),
      'clusters/prod/b.yaml': fluxKustomization('b', './apps/b', ['  postBuild:', '    substituteFrom:', '      - {kind: ConfigMap, name: in-cluster-only}']),
      'apps/a/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {where: "${cluster}-${region}", token: "${token}", price: "$$5"}\n',
      'apps/a/raw.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata: {where: "${cluster}"}\n',
      'apps/b/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {where: "${cluster}", fallback: "${cluster:=x}"}\n',
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    expect(named(change?.head, 'ConfigMap', 'a')?.object.data).toEqual({ where: 'prod-us', token: 's3cr3t', price: '$5' })
    expect(named(change?.head, 'ConfigMap', 'raw')?.object.data).toEqual({ where: '${cluster}' })
    // Flux substitutes nothing when it knows no variable at all (postBuild.substituteStrategy WithVariables).
    expect(named(change?.head, 'ConfigMap', 'b')?.object.data).toEqual({ where: '${cluster}', fallback: '${cluster:=x}' })
    const problems = change?.head.problems ?? []
    expect(problems.map((p) => p.kustomization)).toEqual(['flux-system/b', 'flux-system/b'])
    expect(problems[0]?.message).toContain('ConfigMap/flux-system/in-cluster-only')
    expect(problems[1]).toMatchObject({ path: './apps/b', file: 'apps/b/cm.yaml', line: 1 })
    expect(problems[1]?.message).toContain("no value for 'cluster'")
  })

  it('a substituteFrom object whose content changes touches every Kustomization substituting from it, and no other', async () => {
    const vars = (cluster: string): string =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata: {cluster: ${cluster}}\n`
    const generatedVars = (region: string): string => `region=${region}\n`
    const substituting = (name: string, from: string): string =>
      fluxKustomization(name, `./apps/${name}`, ['  postBuild:', '    substituteFrom:', `      - {kind: ConfigMap, name: ${from}}`])
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/vars.yaml': vars('prod'),
      // A generated substituteFrom source: the edited file is an env file that never names it.
      'clusters/prod/kustomization.yaml':
        'resources: [flux-system/gotk-sync.yaml, vars.yaml, a.yaml, b.yaml, c.yaml]\nconfigMapGenerator:\n  - name: region-vars\n    namespace: flux-system\n    envs: [region.env]\ngeneratorOptions: {disableNameSuffixHash: true}\n',
      'clusters/prod/region.env': generatedVars('eu'),
      'clusters/prod/a.yaml': substituting('a', 'cluster-vars'),
      'clusters/prod/b.yaml': substituting('b', 'region-vars'),
      'clusters/prod/c.yaml': fluxKustomization('c', './apps/c'),
      'apps/a/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {where: "${cluster}"}\n',
      'apps/b/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {where: "${region}"}\n',
      'apps/c/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {where: "${cluster}"}\n',
    }
    const cluster = await render(files, { 'clusters/prod/vars.yaml': vars('staging') })
    expect(cluster.builds.sort()).toEqual(['apps/a', 'apps/a', 'clusters/prod', 'clusters/prod'])
    expect(named(cluster.change?.base, 'ConfigMap', 'a')?.object.data).toEqual({ where: 'prod' })
    expect(named(cluster.change?.head, 'ConfigMap', 'a')?.object.data).toEqual({ where: 'staging' })
    const region = await render(files, { 'clusters/prod/region.env': generatedVars('us') })
    expect(region.builds.sort()).toEqual(['apps/b', 'apps/b', 'clusters/prod', 'clusters/prod'])
    expect(named(region.change?.base, 'ConfigMap', 'b')?.object.data).toEqual({ where: 'eu' })
    expect(named(region.change?.head, 'ConfigMap', 'b')?.object.data).toEqual({ where: 'us' })
  })

  it('substitutes from a ConfigMap a sibling Flux Kustomization generates (an env file), and an edit of that file touches its readers', async () => {
    const files = {
      ...BOOTSTRAP,
      // cluster-config and apps are siblings: both written in the cluster root, apps waits for cluster-config.
      'clusters/prod/config.yaml': fluxKustomization('cluster-config', './config'),
      'clusters/prod/apps.yaml': fluxKustomization('apps', './apps/a', [
        '  dependsOn: [{name: cluster-config}]',
        '  postBuild:',
        '    substituteFrom:',
        '      - {kind: ConfigMap, name: cluster-vars}',
      ]),
      'config/kustomization.yaml':
        'namespace: flux-system\nconfigMapGenerator:\n  - name: cluster-vars\n    envs: [cluster.env]\ngeneratorOptions: {disableNameSuffixHash: true}\n',
      'config/cluster.env': 'cluster_name=prod\n',
      'apps/a/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {where: "${cluster_name}"}\n',
    }
    const { change } = await render(files, { 'config/cluster.env': 'cluster_name=staging\n' })
    expect(change?.head.problems).toEqual([])
    expect(named(change?.base, 'ConfigMap', 'a')?.object.data).toEqual({ where: 'prod' })
    expect(named(change?.head, 'ConfigMap', 'a')?.object.data).toEqual({ where: 'staging' })
  })

  it('never renders or plans what source-controller leaves out: .sourceignore, spec.ignore, its defaults', async () => {
    const sync = BOOTSTRAP['clusters/prod/flux-system/gotk-sync.yaml'].replace(
      'spec: {url: "git@github.com:acme/fleet.git"}',
      'spec:\n  url: "git@github.com:acme/fleet.git"\n  ignore: |\n    apps/a/local/',
    )
    const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {v: "1"}\n`
    const files = {
      'clusters/prod/flux-system/gotk-sync.yaml': sync,
      'clusters/prod/a.yaml': fluxKustomization('a', './apps/a'),
      '.sourceignore': '*.draft.yaml\n',
      // No kustomization.yaml: Flux lists the directory's YAML, ignored files never among them.
      'apps/a/cm.yaml': cm('a'),
      'apps/a/wip.draft.yaml': cm('draft'),
      'apps/a/local/dev.yaml': cm('dev'),
      'apps/a/.sops.yaml': 'creation_rules: []\n',
    }
    const all = await render(files, undefined, { scope: 'all' })
    expect(all.change?.head.problems).toEqual([])
    expect(all.change?.head.objects.filter((o) => o.kustomization === 'flux-system/a').map((o) => o.name)).toEqual(['a'])
    // An edit to an ignored file changes nothing Flux applies: only the root is built (it defines the others), once.
    const ignored = await render(files, { 'apps/a/wip.draft.yaml': cm('draft2'), 'apps/a/local/dev.yaml': cm('dev2') })
    expect(ignored.builds).toEqual(['clusters/prod'])
    expect(ignored.change?.head.objects.some((o) => o.kustomization === 'flux-system/a')).toBe(false)
    // Changing the rules changes what every artifact holds: built again, at both commits.
    const unignored = await render(files, { '.sourceignore': '# nothing\n' })
    expect(unignored.builds.sort()).toEqual(['apps/a', 'apps/a', 'clusters/prod', 'clusters/prod'])
    expect(unignored.change?.head.objects.filter((o) => o.kustomization === 'flux-system/a').map((o) => o.name)).toEqual(['a', 'draft'])
  })

  it('reads substituteFrom values through the cluster port when the repository has none', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/b.yaml': fluxKustomization('b', './apps/b', ['  postBuild:', '    substituteFrom:', '      - {kind: Secret, name: in-cluster-only}']),
      'apps/b/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {where: "${cluster}"}\n',
    }
    const asked: string[] = []
    const cluster = async (kind: string, namespace: string, name: string): Promise<Record<string, string>> => {
      asked.push(`${kind}/${namespace}/${name}`)
      return { cluster: 'from-cluster' }
    }
    const { change } = await render(files, undefined, { scope: 'all', cluster })
    expect(asked).toEqual(['Secret/flux-system/in-cluster-only'])
    expect(named(change?.head, 'ConfigMap', 'b')?.object.data).toEqual({ where: 'from-cluster' })
    expect(change?.head.problems).toEqual([])
  })

  it("appends the Flux Kustomization's components after the path's own", async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/a.yaml': fluxKustomization('a', './apps/a', ['  components: [../../components/extra]']),
      'apps/a/kustomization.yaml': 'configMapGenerator:\n  - name: v\n    literals: [tier=gold]\ngeneratorOptions: {disableNameSuffixHash: true}\n',
      'components/extra/kustomization.yaml':
        'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nconfigMapGenerator:\n  - name: v\n    behavior: merge\n    literals: [extra=yes]\n',
    }
    const { change } = await render(files, {
      'components/extra/kustomization.yaml': files['components/extra/kustomization.yaml'].replace('extra=yes', 'extra=no'),
    })
    expect(named(change?.head, 'ConfigMap', 'v')?.object.data).toEqual({ tier: 'gold', extra: 'no' })
    expect(named(change?.base, 'ConfigMap', 'v')?.object.data).toEqual({ tier: 'gold', extra: 'yes' })
  })
})

describe('bad input', () => {
  it('reports a failing build once, naming the Flux Kustomization, its path and kustomize’s error, and renders the others', async () => {
    const files = { ...BOOTSTRAP, ...app('good'), ...app('bad'), 'apps/bad/kustomization.yaml': 'resources: [release.yaml, missing.yaml]\n' }
    const { change } = await render(files, undefined, { scope: 'all' })
    const problems = change?.head.problems ?? []
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ kustomization: 'flux-system/bad', path: './apps/bad' })
    expect(problems[0]?.message).toMatch(/^Flux Kustomization flux-system\/bad \(path \.\/apps\/bad\) does not build: .*missing\.yaml/)
    expect(problems[0]?.message).not.toMatch(/\/t\d+\/|\n/)
    expect(named(change?.head, 'HelmRelease', 'good')).toBeDefined()
  })

  it('points a failing build at the file and line writing its Flux Kustomization, with kustomize’s own message and no log prefix', async () => {
    const good = app('good')
    const bad = app('bad')
    // Both Flux Kustomizations in one file: the failing one is the second document.
    const apps = `${good['clusters/prod/good.yaml']}---\n${bad['clusters/prod/bad.yaml']}`
    const files = { ...BOOTSTRAP, ...good, ...bad, 'clusters/prod/good.yaml': apps, 'apps/bad/kustomization.yaml': 'resources: [release.yaml, missing.yaml]\n' }
    delete (files as Record<string, string>)['clusters/prod/bad.yaml']
    const { change } = await render(files, undefined, { scope: 'all' })
    const problems = change?.head.problems ?? []
    expect(problems.map((p) => [p.kustomization, p.file, p.line])).toEqual([
      ['flux-system/bad', 'clusters/prod/good.yaml', apps.split('\n').indexOf('---') + 2],
    ])
    expect(problems[0]?.message).toMatch(/does not build: .*missing\.yaml/)
    expect(problems[0]?.message).not.toMatch(/E\d{4} \d\d:|run\.go:\d+\]|"command failed"/)
  })

  it('never fetches a remote reference: that Kustomization is reported as not rendered, naming it, and the others are rendered', async () => {
    const files = {
      ...BOOTSTRAP,
      ...app('local'),
      'clusters/prod/remote.yaml': fluxKustomization('remote', './apps/remote'),
      'apps/remote/kustomization.yaml': 'resources:\n  - https://github.com/acme/shared//base?ref=v1.0.0\n',
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    expect(change?.head.notRendered).toEqual([
      {
        kustomization: 'flux-system/remote',
        reason: "it needs the remote reference 'https://github.com/acme/shared//base?ref=v1.0.0', which is never fetched while planning",
      },
    ])
    expect(change?.head.problems).toEqual([])
    expect(named(change?.head, 'HelmRelease', 'local')).toBeDefined()
  })

  it('a parent needing a remote file does not hide the Kustomizations it defines: they are followed and rendered', async () => {
    const files = {
      ...BOOTSTRAP,
      ...app('web'),
      'clusters/prod/kustomization.yaml':
        'resources:\n  - flux-system/gotk-sync.yaml\n  - web.yaml\n  - https://raw.githubusercontent.com/acme/dashboards/main/dash.yaml\n',
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    expect(change?.head.notRendered).toEqual([
      {
        kustomization: 'flux-system/flux-system',
        reason: "it needs the remote reference 'https://raw.githubusercontent.com/acme/dashboards/main/dash.yaml', which is never fetched while planning",
      },
    ])
    expect(change?.head.kustomizations).toEqual(['flux-system/flux-system', 'flux-system/web'])
    expect(named(change?.head, 'HelmRelease', 'web')).toBeDefined()
    expect(named(change?.head, 'ConfigMap', 'web-values')).toBeDefined()
  })

  it('reports a rendered object Kubernetes would refuse by its name or namespace, and keeps the others', async () => {
    const files = {
      ...BOOTSTRAP,
      ...app('good'),
      'clusters/prod/bad.yaml': fluxKustomization('bad', './apps/bad'),
      'apps/bad/release.yaml':
        'apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: "web\\n::warning title=x::forged", namespace: apps}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine, namespace: "Not_A_Namespace"}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: "system:reader"}\n',
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    expect((change?.head.problems ?? []).map((p) => `${p.file}:${p.line} ${p.message}`)).toEqual([
      "apps/bad/release.yaml:1 HelmRelease name 'web⏎::warning title=x::forged' is not a valid object name (DNS-1123 subdomain); Kubernetes refuses it, so Flux applies nothing of this Kustomization.",
      "apps/bad/release.yaml:5 ConfigMap fine: namespace 'Not_A_Namespace' is not a valid namespace name (DNS-1123 label); Kubernetes refuses it, so Flux applies nothing of this Kustomization.",
    ])
    expect(change?.head.objects.filter((o) => o.kustomization === 'flux-system/bad').map((o) => `${o.kind}/${o.name}`)).toEqual(['ClusterRole/system:reader'])
    expect(named(change?.head, 'HelmRelease', 'good')).toBeDefined()
  })

  it('never fails on files that are no source because of their size: a 1.1 MiB dashboard and a large CRD bundle', async () => {
    const dashboard = JSON.stringify({ panels: Array.from({ length: 24_000 }, (_, i) => ({ id: i, title: `panel ${i}`, type: 'graph' })) })
    expect(dashboard.length).toBeGreaterThan(1.1 * 1024 * 1024)
    // Few objects, much text: a CRD bundle is big because of its schemas.
    const schema = 'x'.repeat(8_000)
    const crds = Array.from(
      { length: 150 },
      (_, i) =>
        `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: thing${i}s.example.com}\nspec: {group: example.com, description: ${schema}}\n`,
    ).join('---\n')
    expect(crds.length).toBeGreaterThan(1024 * 1024)
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/monitoring.yaml': fluxKustomization('monitoring', './monitoring'),
      'monitoring/kustomization.yaml':
        'resources: [crds.yaml]\nconfigMapGenerator:\n  - name: dashboards\n    files: [dashboard.json]\ngeneratorOptions: {disableNameSuffixHash: true}\n',
      'monitoring/dashboard.json': dashboard,
      'monitoring/crds.yaml': crds,
      'docs/huge.json': dashboard,
    }
    const { change } = await render(files, undefined, { scope: 'all' })
    expect(change?.head.problems).toEqual([])
    expect((named(change?.head, 'ConfigMap', 'dashboards')?.object.data as Record<string, string>)['dashboard.json']).toBe(dashboard)
  })

  it('reports a spec.path that does not exist, and an escaping symbolic link is never followed', async () => {
    const files = {
      ...BOOTSTRAP,
      'clusters/prod/gone.yaml': fluxKustomization('gone', './apps/gone'),
      'clusters/prod/link.yaml': fluxKustomization('link', './apps/link'),
    }
    const repo = createRepo('hrt-render-link-')
    repos.push(repo)
    repo.write({ ...files, 'apps/link/kustomization.yaml': 'configMapGenerator:\n  - name: leak\n    files: [hostname]\n' })
    symlinkSync('/etc/hostname', join(repo.dir, 'apps/link/hostname'))
    const head = repo.commit('links')
    const reader = await createGitReader({ cwd: repo.dir })
    const change = await renderChange(reader, {
      base: undefined,
      head,
      changedFiles: [],
      repositoryUrls: [URL],
      clusterRoot: 'clusters/prod',
      sandbox,
      scope: 'all',
    })
    const messages = ((isRendered(change) ? change.head.problems : undefined) ?? []).map((p) => `${p.kustomization}: ${p.message}`)
    expect(messages).toHaveLength(2)
    expect(messages[0]).toBe('flux-system/gone: Flux Kustomization flux-system/gone: spec.path ./apps/gone does not exist in the source; fix spec.path.')
    expect(messages[1]).toMatch(/^flux-system\/link: .*does not build: .*hostname/)
    expect(isRendered(change) && change.head.objects.some((o) => o.name.startsWith('leak'))).toBe(false)
  })
})
