// Scenario — rendering a Flux repository in the sandbox: 40 Flux Kustomizations (a bootstrap
// root and 39 apps, each a generated values ConfigMap feeding a HelmRelease plus plain
// manifests), and the differential corpus of the rendering tests (test/support/render-corpus.ts).
// Ours: renderChange, every build in the sandboxed renderer (Flux's kustomize code in
// WebAssembly) — the one-app commit, a full re-render with the sandbox warm (kept across reps) and
// cold (a fresh sandbox: the module read, compiled and started first), the corpus rendered whole;
// and the CLI planning the one-app commit end to end as a fresh process (its peak RSS too). Floor:
// the real, native kustomize alone building the same directories, one process each, at the same
// concurrency, on a checked-out tree, measured alternately with ours, rep by rep.

import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createGitReader } from '../src/git/reader.ts'
import { isRendered, renderChange, type RenderChangeOptions } from '../src/render/render-change.ts'
import { createSandbox } from '../src/sandbox/sandbox.ts'
import { kustomizeAlone, kustomizeBinary } from '../test/support/kustomize.ts'
import { CLUSTER_ROOT, CORPUS_URL, corpusLayouts, corpusRepository } from '../test/support/render-corpus.ts'
import { fig, mapLimit, median, ms, now, num, ratio, runOk, target, type Figure, type ScenarioResult } from './lib.ts'

export interface RenderOptions {
  readonly apps: number
  readonly manifestsPerApp: number
  readonly reps: number
  readonly log: (line: string) => void
}

export interface RenderRow {
  readonly case: string
  readonly kustomizations: number
  readonly builds: number
  readonly ours: Figure
  readonly kustomizeAlone: Figure
  /** ours / kustomizeAlone, the median of the per-rep ratios */
  readonly ratio: Figure
  readonly objects: number
}

const URL = 'https://github.com/acme/bench-fleet'
const ROOT = 'clusters/bench'
const BENCH_DIR = import.meta.dirname

async function gitRepo(dir: string, files: Readonly<Record<string, string>>): Promise<(...args: string[]) => Promise<string>> {
  const git = (...args: string[]): Promise<string> => runOk('git', args, { cwd: dir, timeoutMs: 120_000 })
  await git('init', '-q', '-b', 'main')
  await git('config', 'user.email', 'bench@example.invalid')
  await git('config', 'user.name', 'bench')
  await git('config', 'commit.gpgsign', 'false')
  await writeTree(dir, files)
  await git('add', '-A')
  await git('commit', '-qm', 'tree')
  return git
}

export async function renderScenario(options: RenderOptions): Promise<ScenarioResult<RenderRow>> {
  const binary = await kustomizeBinary(options.log)
  const dir = await mkdtemp(join(tmpdir(), 'hrt-bench-render-'))
  const corpusDir = await mkdtemp(join(tmpdir(), 'hrt-bench-corpus-'))
  const bundle = await mkdtemp(join(tmpdir(), 'hrt-bench-render-dist-'))
  const sandbox = createSandbox()
  try {
    const git = await gitRepo(dir, fleet(options.apps, options.manifestsPerApp, 1))
    const base = (await git('rev-parse', 'HEAD')).trim()
    const edited = 'apps/app-7/values.yaml'
    await writeFile(join(dir, edited), valuesYaml(7, 2))
    await git('commit', '-qam', 'one app')
    const head = (await git('rev-parse', 'HEAD')).trim()
    const reader = await createGitReader({ cwd: dir })
    const concurrency = availableParallelism()
    const kustomizations = options.apps + 1
    const layouts = corpusLayouts()
    const corpusGit = await gitRepo(corpusDir, corpusRepository(layouts))
    const corpusHead = (await corpusGit('rev-parse', 'HEAD')).trim()
    const corpusReader = await createGitReader({ cwd: corpusDir })
    options.log('render: bundling the CLI from the current sources')
    await runOk(process.execPath, [join(BENCH_DIR, '..', 'scripts', 'bundle.mjs'), bundle], { timeoutMs: 900_000 })

    // Ours and kustomize alone alternate, rep by rep: on a shared machine the load moves, and a
    // ratio of two medians taken minutes apart measures the load as much as the code.
    const measurePair = async (what: string, ours: () => Promise<number>, alone: () => Promise<unknown>) => {
      const oursWalls: number[] = []
      const aloneWalls: number[] = []
      const ratios: number[] = []
      let count = 0
      for (let i = 0; i < options.reps; i++) {
        let t0 = now()
        count = await ours()
        oursWalls.push(now() - t0)
        t0 = now()
        await alone()
        aloneWalls.push(now() - t0)
        ratios.push((oursWalls.at(-1) ?? 0) / (aloneWalls.at(-1) ?? 1))
        options.log(`render: ${what} #${i + 1}: ours ${ms(oursWalls.at(-1) ?? 0)}, kustomize alone ${ms(aloneWalls.at(-1) ?? 0)}`)
      }
      return { ours: median(oursWalls), alone: median(aloneWalls), ratio: median(ratios), count }
    }
    const render = async (options: Partial<RenderChangeOptions> & Pick<RenderChangeOptions, 'head'>, on = reader): Promise<number> => {
      const r = await renderChange(on, { base: undefined, changedFiles: [], repositoryUrls: [URL], clusterRoot: ROOT, sandbox, concurrency, ...options })
      return isRendered(r) ? r.head.objects.length + r.base.objects.length : 0
    }
    const alone = (dirs: readonly string[]) => mapLimit(dirs, concurrency, (d) => kustomizeAlone(binary, d))
    const appDirs = Array.from({ length: options.apps }, (_, i) => join(dir, 'apps', `app-${i}`))
    const corpusDirs = layouts.map((l) => join(corpusDir, l.path, l.plain ? 'bundled' : ''))

    // The first render starts the sandbox: warm it before the warm cases.
    await render({ head, scope: 'all' })
    const oneApp = await measurePair(
      'one-app commit, warm',
      () => render({ base, head, changedFiles: [edited] }),
      // Root + the edited app at both commits (the work tree holds head; building it twice is the same cost).
      () => alone([join(dir, ROOT), join(dir, 'apps', 'app-7'), join(dir, 'apps', 'app-7')]),
    )
    const full = await measurePair(
      'full re-render, warm',
      () => render({ head, scope: 'all' }),
      () => alone([join(dir, ROOT), ...appDirs]),
    )
    const cold = await measurePair(
      'full re-render, cold',
      async () => {
        const fresh = createSandbox()
        try {
          const r = await renderChange(reader, {
            base: undefined,
            head,
            changedFiles: [],
            repositoryUrls: [URL],
            clusterRoot: ROOT,
            sandbox: fresh,
            concurrency,
            scope: 'all',
          })
          return isRendered(r) ? r.head.objects.length : 0
        } finally {
          await fresh.close()
        }
      },
      () => alone([join(dir, ROOT), ...appDirs]),
    )
    const corpus = await measurePair(
      'differential corpus, warm',
      () => render({ head: corpusHead, repositoryUrls: [CORPUS_URL], clusterRoot: CLUSTER_ROOT, scope: 'all' }, corpusReader),
      () => alone(corpusDirs),
    )
    // The CLI planning the one-app commit as a fresh process, its peak RSS read by the probe.
    const cli = await measurePair(
      'CLI plan, one-app commit, end to end',
      async () => {
        const rss = join(bundle, 'rss')
        await runCli(join(bundle, 'cli.js'), ['plan', '--base', base, '--head', head, '--github-repository', 'acme/bench-fleet', '--json'], dir, rss)
        return Number(await readFile(rss, 'utf8'))
      },
      () => alone([join(dir, ROOT), join(dir, 'apps', 'app-7'), join(dir, 'apps', 'app-7')]),
    )
    const peakRss = cli.count / 1024
    const row = (what: string, builds: number, m: typeof full, objects = m.count, count = kustomizations): RenderRow => ({
      case: what,
      kustomizations: count,
      builds,
      ours: fig(m.ours, 'ms'),
      kustomizeAlone: fig(m.alone, 'ms'),
      ratio: fig(m.ratio, '×'),
      objects,
    })
    const rows: RenderRow[] = [
      row('one-app commit (sandbox warm)', 3, oneApp),
      row('full re-render (sandbox warm)', kustomizations, full),
      row('full re-render (sandbox cold)', kustomizations, cold),
      row('differential corpus, full (warm)', corpusDirs.length, corpus, corpus.count, layouts.length + 3),
      row('CLI plan, one-app commit, end to end', 3, cli, 0),
    ]
    return {
      title: `Rendering a Flux repository in the sandbox (${kustomizations} Flux Kustomizations; the differential corpus)`,
      columns: ['case', 'Flux Kustomizations', 'kustomize builds', 'ours', 'kustomize alone', 'ratio', 'objects rendered'],
      table: rows.map((r) => [
        r.case,
        num(r.kustomizations),
        num(r.builds),
        ms(r.ours.value),
        ms(r.kustomizeAlone.value),
        ratio(r.ratio.value),
        num(r.objects),
      ]),
      rows,
      targets: [
        target(
          'render-full-ratio',
          `full re-render of ${kustomizations} Kustomizations vs native kustomize (warm)`,
          fig(full.ratio, '×'),
          fig(1.5, '×'),
          'below',
        ),
        target('render-corpus-ratio', 'differential corpus, full render vs native kustomize (warm)', fig(corpus.ratio, '×'), fig(1.5, '×'), 'below'),
        target('render-plan-one-app', 'CLI plan of the one-app commit, end to end', fig(cli.ours, 'ms'), fig(1000, 'ms'), 'below'),
        target('render-plan-rss', 'peak RSS of that plan', fig(peakRss, 'MiB'), fig(512, 'MiB'), 'below'),
      ],
      notes: [
        `Ours lists both commits through one git cat-file, finds the Flux objects with git grep, hands each build only its closure's files (in memory), builds in the sandbox ${concurrency} at a time (both commits side by side, child Kustomizations while their parent builds) and maps every object to file:line; kustomize alone builds a checked-out tree, one process per directory.`,
        `Cold: a fresh sandbox per rep, so the module is decompressed, compiled and started (Go's package init) before the first build: ${ms(cold.ours - full.ours)} over warm here. The CLI case is a fresh process, so it pays that too; its peak RSS is ${peakRss.toFixed(0)} MiB.`,
        'The corpus baseline builds each layout directory (a plain one through its bundled kustomization); ours renders the whole chain (root and two nested Kustomizations) with Flux’s layer.',
      ],
    }
  } finally {
    await sandbox.close()
    await rm(dir, { recursive: true, force: true })
    await rm(corpusDir, { recursive: true, force: true })
    await rm(bundle, { recursive: true, force: true })
  }
}

/** `node cli.js …` in `cwd` with the RSS probe preloaded; fails on a non-zero exit. */
function runCli(cli: string, args: readonly string[], cwd: string, rssFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', join(BENCH_DIR, 'rss-probe.mjs'), cli, ...args], {
      cwd,
      env: { ...process.env, BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`cli exited ${code}: ${err.slice(-500)}`))))
  })
}

export function valuesYaml(app: number, revision: number): string {
  return `replicaCount: ${revision}\nimage:\n  tag: "1.${revision}.0"\napp: app-${app}\n`
}

/** The repository, path → text. */
export function fleet(apps: number, perApp: number, revision: number): Record<string, string> {
  const files: Record<string, string> = {}
  files[`${ROOT}/flux-system/gotk-sync.yaml`] = [
    'apiVersion: source.toolkit.fluxcd.io/v1',
    'kind: GitRepository',
    'metadata: {name: flux-system, namespace: flux-system}',
    `spec: {interval: 1m, url: "${URL}", ref: {branch: main}}`,
    '---',
    'apiVersion: kustomize.toolkit.fluxcd.io/v1',
    'kind: Kustomization',
    'metadata: {name: flux-system, namespace: flux-system}',
    `spec: {interval: 10m, path: ./${ROOT}, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}`,
    '',
  ].join('\n')
  // kustomize alone needs a kustomization.yaml where Flux would generate one.
  files[`${ROOT}/kustomization.yaml`] = [
    'resources:',
    '  - flux-system/gotk-sync.yaml',
    ...Array.from({ length: apps }, (_, i) => `  - apps/app-${i}.yaml`),
    '',
  ].join('\n')
  for (let i = 0; i < apps; i++) {
    const app = `app-${i}`
    files[`${ROOT}/apps/${app}.yaml`] = [
      'apiVersion: kustomize.toolkit.fluxcd.io/v1',
      'kind: Kustomization',
      `metadata: {name: ${app}, namespace: flux-system}`,
      `spec: {interval: 10m, path: ./apps/${app}, prune: true, targetNamespace: ${app}, sourceRef: {kind: GitRepository, name: flux-system}, postBuild: {substitute: {cluster: bench}}}`,
      '',
    ].join('\n')
    const resources = ['release.yaml']
    files[`apps/${app}/values.yaml`] = valuesYaml(i, revision)
    files[`apps/${app}/release.yaml`] = [
      'apiVersion: helm.toolkit.fluxcd.io/v2',
      'kind: HelmRelease',
      `metadata: {name: ${app}}`,
      'spec:',
      '  interval: 10m',
      '  chart: {spec: {chart: podinfo, version: "6.x", sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}}}',
      '  values: {cluster: "${cluster}"}',
      `  valuesFrom: [{kind: ConfigMap, name: ${app}-values}]`,
      '',
    ].join('\n')
    // The generated ConfigMap is one manifest; the rest are plain ones.
    for (let m = 0; m < perApp - 2; m++) {
      const name = `${app}-part-${m}`
      resources.push(`${name}.yaml`)
      files[`apps/${app}/${name}.yaml`] =
        m % 2 === 0
          ? `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {index: "${m}", cluster: "\${cluster}"}\n`
          : `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}}\nspec: {ports: [{port: ${8000 + m}}], selector: {app: ${app}}}\n`
    }
    files[`apps/${app}/kustomization.yaml`] = [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      ...resources.map((r) => `  - ${r}`),
      'configMapGenerator:',
      `  - name: ${app}-values`,
      '    files: [values.yaml]',
      'generatorOptions: {disableNameSuffixHash: true}',
      '',
    ].join('\n')
  }
  return files
}

async function writeTree(dir: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), text)
  }
}
