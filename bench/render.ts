// Scenario — rendering a Flux repository: 50 Flux Kustomizations applying 1,000 manifests
// (each app: a generated values ConfigMap feeding a HelmRelease, plus 18 plain manifests),
// all under one bootstrap Kustomization at clusters/bench. Ours: renderChange (list both
// commits, find the Kustomizations, build what the range touched, Flux's layer, provenance)
// for a commit editing one app's values.yaml, and for a full re-render at head, every build in
// the sandboxed renderer (Flux's kustomize code in WebAssembly). Floor: the real, native
// kustomize alone building the same directories (root + the app, or all 51), at the same
// concurrency, on an already checked-out tree.

import { writeFile, mkdir, rm, mkdtemp } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createGitReader } from '../src/git/reader.ts'
import { renderChange } from '../src/render/render-change.ts'
import { createSandbox } from '../src/sandbox/sandbox.ts'
import { kustomizeAlone, kustomizeBinary } from '../test/support/kustomize.ts'
import { fig, mapLimit, median, ms, now, num, ratio, runOk, target, type Figure, type ScenarioResult } from './lib.ts'

export interface RenderOptions {
  readonly apps: number
  readonly manifestsPerApp: number
  readonly reps: number
  readonly log: (line: string) => void
}

export interface RenderRow {
  readonly case: 'one-app commit' | 'full re-render'
  readonly kustomizations: number
  readonly manifests: number
  readonly builds: number
  readonly ours: Figure
  readonly kustomizeAlone: Figure
  /** ours / kustomizeAlone */
  readonly ratio: Figure
  readonly objects: number
}

const URL = 'https://github.com/acme/bench-fleet'
const ROOT = 'clusters/bench'

export async function renderScenario(options: RenderOptions): Promise<ScenarioResult<RenderRow>> {
  const binary = await kustomizeBinary(options.log)
  const dir = await mkdtemp(join(tmpdir(), 'hrt-bench-render-'))
  const sandbox = createSandbox()
  try {
    const git = (...args: string[]): Promise<string> => runOk('git', args, { cwd: dir, timeoutMs: 120_000 })
    await git('init', '-q', '-b', 'main')
    await git('config', 'user.email', 'bench@example.invalid')
    await git('config', 'user.name', 'bench')
    await git('config', 'commit.gpgsign', 'false')
    await writeTree(dir, fleet(options.apps, options.manifestsPerApp, 1))
    await git('add', '-A')
    await git('commit', '-qm', 'fleet')
    const base = (await git('rev-parse', 'HEAD')).trim()
    const edited = `apps/app-7/values.yaml`
    await writeFile(join(dir, edited), valuesYaml(7, 2))
    await git('commit', '-qam', 'one app')
    const head = (await git('rev-parse', 'HEAD')).trim()
    const reader = await createGitReader({ cwd: dir })
    const concurrency = availableParallelism()
    const manifests = options.apps * options.manifestsPerApp

    // Ours and kustomize alone alternate, rep by rep: on a shared machine the load moves, and a
    // ratio of two medians taken minutes apart measures the load as much as the code.
    const measurePair = async (what: string, ours: () => Promise<number>, alone: () => Promise<number>) => {
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

    const appDirs = Array.from({ length: options.apps }, (_, i) => join(dir, 'apps', `app-${i}`))
    // kustomize alone on the same trees: root + the edited app at both commits (the work tree
    // holds head; building it twice is the same cost), and every directory for a full render.
    const oneApp = await measurePair(
      'one-app commit',
      async () => {
        const r = await renderChange(reader, { base, head, changedFiles: [edited], repositoryUrl: URL, clusterRoot: ROOT, sandbox, concurrency })
        return (r?.head.objects.length ?? 0) + (r?.base.objects.length ?? 0)
      },
      async () => {
        await mapLimit([join(dir, ROOT), join(dir, 'apps', 'app-7'), join(dir, 'apps', 'app-7')], concurrency, (d) => kustomizeAlone(binary, d))
        return 3
      },
    )
    const full = await measurePair(
      'full re-render',
      async () => {
        const r = await renderChange(reader, {
          base: undefined,
          head,
          changedFiles: [],
          repositoryUrl: URL,
          clusterRoot: ROOT,
          sandbox,
          concurrency,
          scope: 'all',
        })
        return r?.head.objects.length ?? 0
      },
      async () => {
        await mapLimit([join(dir, ROOT), ...appDirs], concurrency, (d) => kustomizeAlone(binary, d))
        return appDirs.length + 1
      },
    )
    const rows: RenderRow[] = [
      {
        case: 'one-app commit',
        kustomizations: options.apps + 1,
        manifests,
        builds: 3,
        ours: fig(oneApp.ours, 'ms'),
        kustomizeAlone: fig(oneApp.alone, 'ms'),
        ratio: fig(oneApp.ratio, '×'),
        objects: oneApp.count,
      },
      {
        case: 'full re-render',
        kustomizations: options.apps + 1,
        manifests,
        builds: options.apps + 1,
        ours: fig(full.ours, 'ms'),
        kustomizeAlone: fig(full.alone, 'ms'),
        ratio: fig(full.ratio, '×'),
        objects: full.count,
      },
    ]
    return {
      title: `Rendering a Flux repository (${options.apps} Flux Kustomizations, ${num(manifests)} manifests)`,
      columns: ['case', 'kustomize builds', 'ours', 'kustomize alone', 'ratio', 'objects rendered'],
      table: rows.map((r) => [r.case, num(r.builds), ms(r.ours.value), ms(r.kustomizeAlone.value), ratio(r.ratio.value), num(r.objects)]),
      rows,
      targets: [
        target('render-one-app', 'one-app commit rendered at base and head', fig(oneApp.ours, 'ms'), fig(1000, 'ms'), 'below'),
        target('render-full-ratio', 'full re-render vs kustomize alone (median of the paired runs)', fig(full.ratio, '×'), fig(1.5, '×'), 'below'),
      ],
      notes: [
        `Ours lists both commits through one git cat-file, finds the Flux objects with git grep, writes only each build's input closure, builds with kustomize ${concurrency} at a time (both commits side by side, child Kustomizations while their parent builds), and maps every object to file:line; kustomize alone builds a checked-out tree.`,
        'Each rep runs ours then kustomize alone; the ratio is the median of the per-rep ratios. The one-app commit builds the root once (it defines the Kustomizations; untouched, so shared by both commits) and the edited app at head and base.',
      ],
    }
  } finally {
    await sandbox.close()
    await rm(dir, { recursive: true, force: true })
  }
}

function valuesYaml(app: number, revision: number): string {
  return `replicaCount: ${revision}\nimage:\n  tag: "1.${revision}.0"\napp: app-${app}\n`
}

/** The repository, path → text. */
function fleet(apps: number, perApp: number, revision: number): Record<string, string> {
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
