// Scenario — the pre-merge diff (issue 35), as whole processes. Lays out two Flux repositories on
// disk with a loopback Helm repository serving the corpus chart `webapp` (what `helm create`
// makes, grown a little) at 1.2.3 and 1.3.0, warms the chart cache once, and prints the commands
// to time with farm-bench, then serves the charts until stopped:
//   one:   one release whose values ConfigMap changed: `plan --diff` against `plan`;
//   bump:  40 releases sharing the chart, all bumped 1.2.3 → 1.3.0 in one commit (renovate's
//          shape): `plan --diff` against the real `helm template` of the 40 releases one after
//          another (head only, and base + head).
// Usage: node bench/diff.ts DIR   (Node 24 runs the TypeScript; stop with Ctrl-C)

import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse, stringify } from 'yaml'
import { startChartServer } from '../test/support/chart.ts'
import { webapp } from '../test/support/helm-corpus/webapp.ts'
import { bootstrapText, repositoryKustomization } from '../test/support/flux.ts'
import { helmBinary } from '../test/support/helm.ts'

const RELEASES = 40
const dir = process.argv[2]
if (dir === undefined) throw new Error('usage: node bench/diff.ts DIR')

const chartYaml = (version: string): string =>
  `apiVersion: v2\nname: webapp\ndescription: A web application\ntype: application\nversion: ${version}\nappVersion: "2.0.1"\n`
const files = (version: string): Record<string, string> =>
  Object.fromEntries(
    webapp.files.map(([path, content]) => [
      path.startsWith('templates/') ? path.slice('templates/'.length) : path,
      path === 'Chart.yaml' ? chartYaml(version) : String(content),
    ]),
  )
const templates = (version: string): Record<string, string> =>
  Object.fromEntries(Object.entries(files(version)).filter(([path]) => path !== 'Chart.yaml' && path !== 'values.yaml' && !path.includes('/')))
// The chart server writes values.yaml from an object: the corpus chart's defaults, parsed.
const defaults = parse(String(webapp.files.find(([path]) => path === 'values.yaml')?.[1] ?? '{}')) as Record<string, unknown>
const charts = await startChartServer({
  charts: ['1.2.3', '1.3.0'].map((version) => ({ name: 'webapp', version, appVersion: '2.0.1', templates: templates(version), values: defaults })),
})

function release(name: string, version: string): string {
  return stringify({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name, namespace: 'apps' },
    spec: {
      interval: '1h',
      chart: { spec: { chart: 'webapp', version, sourceRef: { kind: 'HelmRepository', name: 'charts' } } },
      valuesFrom: [{ kind: 'ConfigMap', name: `${name}-values` }],
      values: { image: { tag: '2.0.1' } },
    },
  })
}

/** A Flux repository of `count` releases at `version`, committed; then `change` applied and committed. */
function repository(path: string, count: number, change: (tree: Record<string, string>, names: readonly string[]) => void): void {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: path, encoding: 'utf8' })
  const names = Array.from({ length: count }, (_, i) => `web-${String(i).padStart(2, '0')}`)
  const tree: Record<string, string> = {
    'clusters/bench/flux-system/gotk-sync.yaml': bootstrapText('https://github.com/acme/bench', './clusters/bench'),
    'clusters/bench/apps.yaml': repositoryKustomization('apps', './apps'),
    'apps/repository.yaml': stringify({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'HelmRepository',
      metadata: { name: 'charts', namespace: 'apps' },
      spec: { url: charts.url },
    }),
    'apps/kustomization.yaml': stringify({
      resources: ['repository.yaml', ...names.map((n) => `${n}/release.yaml`)],
      configMapGenerator: names.map((n) => ({
        name: `${n}-values`,
        namespace: 'apps',
        files: [`values.yaml=${n}/values.yaml`],
        options: { disableNameSuffixHash: true },
      })),
    }),
  }
  for (const name of names) {
    tree[`apps/${name}/release.yaml`] = release(name, '1.2.3')
    tree[`apps/${name}/values.yaml`] = 'replicaCount: 1\n'
  }
  const commit = (message: string): void => {
    for (const [file, text] of Object.entries(tree)) {
      mkdirSync(join(path, file, '..'), { recursive: true })
      writeFileSync(join(path, file), text)
    }
    git('add', '-A')
    git('commit', '-qm', message)
  }
  mkdirSync(path, { recursive: true })
  git('init', '-q', '-b', 'main')
  git('config', 'user.email', 'bench@example.invalid')
  git('config', 'user.name', 'bench')
  commit('the fleet')
  change(tree, names)
  commit('the change')
}

const one = join(dir, 'one')
// One release's values change.
repository(one, 1, (tree) => void (tree['apps/web-00/values.yaml'] = 'replicaCount: 3\n'))
const bump = join(dir, 'bump')
// Every release bumped to the chart's next version in one commit.
repository(bump, RELEASES, (tree, names) => {
  for (const name of names) tree[`apps/${name}/release.yaml`] = release(name, '1.3.0')
})

// The native baseline: the same chart archives and values, one `helm template` per release.
const helm = await helmBinary()
const archives = join(dir, 'charts')
mkdirSync(archives, { recursive: true })
for (const version of ['1.2.3', '1.3.0']) {
  const response = await fetch(`${charts.url}/webapp-${version}.tgz`)
  writeFileSync(join(archives, `webapp-${version}.tgz`), Buffer.from(await response.arrayBuffer()))
}
writeFileSync(join(dir, 'values.json'), JSON.stringify({ replicaCount: 1, image: { tag: '2.0.1' } }))
const loop = (versions: readonly string[]): string =>
  `for v in ${versions.join(' ')}; do for i in $(seq -w 0 ${RELEASES - 1}); do ${helm} template web-$i ${archives}/webapp-$v.tgz --namespace apps -f ${dir}/values.json >/dev/null || exit 1; done; done`
writeFileSync(join(dir, 'helm-head.sh'), loop(['1.3.0']))
writeFileSync(join(dir, 'helm-both.sh'), loop(['1.2.3', '1.3.0']))

const cli = join(import.meta.dirname, '..', 'dist', 'cli.js')
const cache = join(dir, 'chart-cache')
const plan = (repo: string, diff: boolean): string =>
  `${process.execPath} ${cli} plan --repo ${repo} --base HEAD~1 --head HEAD --cluster-root clusters/bench${diff ? ` --diff --chart-cache ${cache}` : ''}`
// Warm the chart cache once: the targets are with the chart cached.
execFileSync('bash', ['-c', `${plan(bump, true)} >/dev/null`], { env: { ...process.env, GITHUB_REPOSITORY: 'acme/bench' } })
process.stdout.write(
  [
    `charts served at ${charts.url} (leave this running)`,
    `export GITHUB_REPOSITORY=acme/bench`,
    `farm-bench -n 9 --vs "${plan(one, false)}" -- ${plan(one, true)}`,
    `farm-bench -n 5 --vs "bash ${dir}/helm-head.sh" -- ${plan(bump, true)}`,
    `farm-bench -n 5 --vs "bash ${dir}/helm-both.sh" -- ${plan(bump, true)}`,
    '',
  ].join('\n'),
)
