// The shape of the differential test's charts (__tests__/render/helm-differential.test.ts): a chart
// directory's files and the releases rendered from it. Values are JSON (strings, bools, numbers as
// float64), as a HelmRelease's spec.values are; `set` carries what Helm's --set types (integers).
// Nothing in a chart may depend on time or chance (now, rand*, uuidv4, gen*): both renders must agree.

import { gzipSync } from 'node:zlib'
import { tar } from '../chart.ts'

export type ChartTree = readonly (readonly [path: string, content: string | Uint8Array])[]

export interface CorpusRelease {
  readonly name: string
  readonly values?: Readonly<Record<string, unknown>>
  /**
   * Dotted path → value, typed by Helm's --set parser: `helm --set` natively, a valuesFrom entry
   * with that targetPath on our side. A quoted value stays a string (--set-string; Flux's rule).
   */
  readonly set?: Readonly<Record<string, string>>
  readonly kubeVersion?: string
  readonly apiVersions?: readonly string[]
  readonly isUpgrade?: boolean
}

export interface CorpusChart {
  readonly name: string
  /** Paths relative to the chart's root (Chart.yaml at the top). */
  readonly files: ChartTree
  readonly releases: readonly CorpusRelease[]
}

export function tree(files: Readonly<Record<string, string | Uint8Array>>): ChartTree {
  return Object.entries(files)
}

/** The chart as an archive, its files under `<name>/` as `helm package` lays them out. */
export function archiveOf(chart: CorpusChart): Uint8Array {
  return gzipSync(tar(chart.files.map(([path, content]) => ({ path: `${chart.name}/${path}`, content }))))
}
