// One HelmRelease rendered at one commit as helm-controller would install or upgrade it: its
// chart (from this repository's checkout, or fetched from its Helm repository), its values and
// post-renderers (release-input.ts), Helm's engine in the sandbox. The answer is the render or one
// sentence saying why there is none.

import { createHash } from 'node:crypto'
import type { RenderedRelease } from '../core/predicted-diff.ts'
import type { ReleaseInput } from '../core/release-input.ts'
import type { GitReader } from '../git/reader.ts'
import { compareText } from '../lib/sort.ts'
import { oneLine, quoted } from '../lib/untrusted.ts'
import type { SourceFiles } from '../sandbox/protocol.ts'
import type { Sandbox } from '../sandbox/sandbox.ts'
import type { ChartStore } from './chart-store.ts'

export interface ReleaseRenderDeps {
  readonly git: Pick<GitReader, 'headFiles'>
  readonly sandbox: Pick<Sandbox, 'helmTemplate'>
  readonly charts: ChartStore
  /** The Kubernetes version templates see; undefined: Helm's default. */
  readonly kubeVersion?: string
}

export interface RenderAt {
  /** The commit the release's input was read from (a Git chart's files are read there). */
  readonly commit: string
  readonly revision: number
  readonly isUpgrade: boolean
}

export type ReleaseRender =
  | (RenderedRelease & {
      readonly chartVersion: string
      readonly usesLookup: boolean
      /** The chart's files, hashed: tells a Git chart's edit from a values change. */
      readonly chartDigest: string
    })
  | { readonly failed: string }

const ARCHIVE = 'chart.tgz'

export async function renderRelease(input: ReleaseInput, at: RenderAt, deps: ReleaseRenderDeps): Promise<ReleaseRender> {
  const chart = await chartFiles(input, at.commit, deps)
  if ('failed' in chart) return chart
  const answer = await deps.sandbox.helmTemplate(
    {
      ...(chart.archive ? { archive: ARCHIVE } : {}),
      ...(chart.sourceRevision === undefined ? {} : { sourceRevision: chart.sourceRevision }),
      release: input.release,
      namespace: input.releaseNamespace,
      revision: at.revision,
      isUpgrade: at.isUpgrade,
      owner: { name: input.name, namespace: input.namespace },
      values: input.values,
      valuesFrom: input.valuesFrom,
      objects: input.objects,
      ...(deps.kubeVersion === undefined ? {} : { kubeVersion: deps.kubeVersion }),
      apiVersions: input.apiVersions,
      postRenderers: input.postRenderers,
      commonMetadata: input.commonMetadata,
      ...(input.postRenderStrategy === undefined ? {} : { postRenderStrategy: input.postRenderStrategy }),
      skipSchemaValidation: input.skipSchemaValidation,
    },
    chart.files,
  )
  if (answer.error !== undefined) {
    const stage = answer.stage === 'values' ? 'its values' : answer.stage === 'chart' ? 'its chart' : 'the chart'
    return { failed: `${stage}: ${oneLine(answer.error, 400)}` }
  }
  return {
    manifest: answer.manifest ?? '',
    hooks: answer.hooks ?? [],
    crds: answer.crds ?? [],
    values: answer.values ?? {},
    chart: `${answer.chartName ?? '?'}@${answer.chartVersion ?? '?'}`,
    chartVersion: answer.chartVersion ?? '',
    usesLookup: answer.usesLookup === true,
    chartDigest: digestOf(chart.files),
  }
}

function digestOf(files: SourceFiles): string {
  const hash = createHash('sha256')
  for (const [path, bytes] of [...files].sort(([a], [b]) => compareText(a, b))) hash.update(`${path}\0`).update(bytes).update('\0')
  return hash.digest('hex')
}

async function chartFiles(
  input: ReleaseInput,
  commit: string,
  deps: ReleaseRenderDeps,
): Promise<{ files: SourceFiles; archive: boolean; sourceRevision?: string } | { failed: string }> {
  const location = input.chart
  if (location.kind === 'helm' || location.kind === 'oci') {
    const fetched = await deps.charts.fetch(location)
    if ('unavailable' in fetched) return { failed: fetched.unavailable }
    return { files: [[ARCHIVE, fetched.archive]], archive: true, ...(fetched.sourceRevision === undefined ? {} : { sourceRevision: fetched.sourceRevision }) }
  }
  const prefix = location.path === '' ? '' : `${location.path}/`
  const found = await deps.git.headFiles(commit, (p) => p.startsWith(prefix))
  const files: [string, Uint8Array][] = []
  for (const f of found) if (f.content.type === 'file') files.push([f.path.slice(prefix.length), f.content.bytes])
  if (!files.some(([p]) => p === 'Chart.yaml')) return { failed: `the chart directory ${quoted(location.path)} holds no Chart.yaml at ${commit.slice(0, 12)}` }
  return { files, archive: false }
}
