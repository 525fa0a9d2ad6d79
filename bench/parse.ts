// Scenario — the plan's parse stage beside the YAML parsers on npm (issue 20: at most 1.5× the
// fastest parsing the same bytes). The bytes are the plan scenario's commit of N apps: each
// app's labelled ConfigMap at base and at head, and the HelmRelease that reads it. Ours:
// parseManifestFile on every file, as the plan's parse workers run it (line numbers, the linear
// duplicate-key check, every problem with its line, each ConfigMap's values.yaml parsed for its
// semantic digest). The parsers: `yaml` (the library ours builds on) and `js-yaml`, each
// loading every document of every file and, as ours does, the values.yaml inside each
// ConfigMap. All in this process, warm, one thread; the median of the reps.

import { load, loadAll } from 'js-yaml'
import { parse, parseAllDocuments } from 'yaml'
import { parseManifestFile } from '../src/core/manifest.ts'
import { fig, median, ms, now, num, ratio, target, type Figure, type ScenarioResult } from './lib.ts'
import { releaseManifest, valuesManifest } from './plan.ts'

export interface ParseOptions {
  readonly sizes: readonly number[]
  readonly reps: number
  readonly log: (line: string) => void
}

export interface ParseRow {
  readonly apps: number
  readonly files: number
  readonly bytes: number
  readonly ours: Figure
  readonly yaml: Figure
  readonly jsYaml: Figure
  /** ours ÷ the faster of the two parsers. */
  readonly ratio: Figure
  readonly fastest: 'yaml' | 'js-yaml'
}

const OPTIONS = { prefix: 'nebius.ai', defaultNamespace: 'default', semanticDigest: true } as const

interface ParseFile {
  readonly path: string
  readonly text: string
  readonly content: { readonly type: 'file'; readonly bytes: Uint8Array }
}
const encoder = new TextEncoder()

export async function parseScenario(options: ParseOptions): Promise<ScenarioResult<ParseRow>> {
  const rows: ParseRow[] = []
  for (const apps of options.sizes) {
    // Each round its own revisions of the values: ours memoises canonical values process-wide
    // (a value a plan reads twice is parsed once), which must not carry from one round to the next.
    const round = (r: number): ParseFile[] =>
      Array.from({ length: apps }, (_, i) => [valuesManifest(i, 2 * r + 1), valuesManifest(i, 2 * r + 2), releaseManifest(i)])
        .flat()
        .map((text, k) => ({ path: `apps/${k}.yaml`, text, content: { type: 'file', bytes: encoder.encode(text) } as const }))
    const warmUp = round(0)
    const bytes = warmUp.reduce((sum, f) => sum + f.content.bytes.length, 0)
    // Checksums keep the work from being optimised away, and prove each side read every document.
    const methods = {
      ours: (files: readonly ParseFile[]) => files.reduce((n, f) => n + countOf(parseManifestFile(f.path, f.content, OPTIONS)), 0),
      yaml: (files: readonly ParseFile[]) =>
        files.reduce(
          (n, f) =>
            n +
            withValues(
              parseAllDocuments(f.text).map((d) => d.toJS() as unknown),
              (v) => parse(v) as unknown,
            ),
          0,
        ),
      jsYaml: (files: readonly ParseFile[]) => files.reduce((n, f) => n + withValues(loadAll(f.text), (v) => load(v)), 0),
    }
    const walls: Record<keyof typeof methods, number[]> = { ours: [], yaml: [], jsYaml: [] }
    const counts = new Set<number>()
    // One warm-up round, then the reps, the methods alternating.
    for (let rep = -1; rep < options.reps; rep++) {
      const files = rep < 0 ? warmUp : round(rep + 1)
      for (const [name, run] of Object.entries(methods) as [keyof typeof methods, (files: readonly ParseFile[]) => number][]) {
        const t0 = now()
        const count = run(files)
        if (rep >= 0) walls[name].push(now() - t0)
        counts.add(count)
      }
    }
    if (counts.size !== 1) throw new Error(`the parsers read different numbers of documents and values: ${[...counts].join(', ')}`)
    const [ours, yaml, jsYaml] = [median(walls.ours), median(walls.yaml), median(walls.jsYaml)]
    const fastest = jsYaml < yaml ? 'js-yaml' : 'yaml'
    const row: ParseRow = {
      apps,
      files: warmUp.length,
      bytes,
      ours: fig(ours, 'ms'),
      yaml: fig(yaml, 'ms'),
      jsYaml: fig(jsYaml, 'ms'),
      ratio: fig(ours / Math.min(yaml, jsYaml), 'ours/fastest'),
      fastest,
    }
    rows.push(row)
    options.log(
      `parse: ${num(warmUp.length)} files (${(bytes / 1e6).toFixed(2)} MB): ours ${ms(ours)}, yaml ${ms(yaml)}, js-yaml ${ms(jsYaml)} (${ratio(row.ratio.value)} the fastest)`,
    )
  }
  const largest = rows.at(-1)
  return {
    title: "The plan's parse stage beside the YAML parsers on npm",
    columns: ['apps (files)', 'MB', 'ours (parseManifestFile)', 'yaml', 'js-yaml', 'ours ÷ fastest'],
    table: rows.map((r) => [
      `${num(r.apps)} (${num(r.files)})`,
      (r.bytes / 1e6).toFixed(2),
      ms(r.ours.value),
      ms(r.yaml.value),
      ms(r.jsYaml.value),
      `${ratio(r.ratio.value)} (${r.fastest})`,
    ]),
    rows,
    targets:
      largest === undefined
        ? []
        : [
            target(
              'parse-within-1.5x-fastest',
              `Parse stage within 1.5× the fastest npm YAML parser (${num(largest.files)} files)`,
              largest.ratio,
              fig(1.5, 'ours/fastest'),
              'below',
            ),
          ],
    notes: [
      `Each app: its labelled ConfigMap (~1 KB, a Helm values file in data) at base and at head, and its HelmRelease: the files a commit changing N values files makes the plan parse. ${options.reps} reps after a warm-up, methods alternating, in one process on one thread; medians. Every round has values of its own, so ours' memo of canonical values never carries from one round to the next.`,
      'Ours does more than load: line numbers for every object and problem, the duplicate-key check, and the model of each object (sources, releases, references). The parsers only load; each also loads every ConfigMap’s values.yaml, as ours does for the semantic digest. Every side reads the same number of documents and values (checked).',
    ],
  }
}

/** Documents loaded, plus one for each ConfigMap values.yaml parsed with `parseValues`. */
function withValues(documents: readonly unknown[], parseValues: (text: string) => unknown): number {
  let n = 0
  for (const d of documents) {
    n++
    const values = (d as { kind?: string; data?: Record<string, unknown> } | null)?.data?.['values.yaml']
    if (typeof values === 'string' && parseValues(values) !== undefined) n++
  }
  return n
}

/** Documents ours read: its sources (each with its values parsed) count twice, releases once. */
function countOf(file: ReturnType<typeof parseManifestFile>): number {
  if (file.problems.length > 0) throw new Error(`ours reported problems: ${file.problems.map((p) => p.message).join('; ')}`)
  return file.sources.length * 2 + file.releases.length
}
