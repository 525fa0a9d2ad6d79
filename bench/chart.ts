// bench/results.json → bench/scaling.svg: the plan and fan-out scaling curves, log scales,
// plain SVG text. Run by bench/run.ts after every run, or on its own:
//
//   node --experimental-strip-types bench/chart.ts [results.json] [scaling.svg]

import { readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Results } from './run.ts'

interface Point {
  readonly x: number
  readonly y: number
}

interface Series {
  readonly label: string
  readonly color: string
  readonly dashed: boolean
  readonly points: readonly Point[]
}

interface Panel {
  readonly title: string
  readonly xLabel: string
  readonly yLabel: string
  readonly series: readonly Series[]
  /** A horizontal or single-point target marker. */
  readonly marks: readonly { readonly label: string; readonly at: Point }[]
}

const WIDTH = 1060
const HEIGHT = 500
const PANEL = { width: 430, height: 300, top: 84, left: [80, 600] as const }
const COLORS = { ours: '#1f6feb', ours50: '#8250df', raw: '#2da44e', raw50: '#7ee2a8', kubectl: '#cf222e', baseline: '#2da44e', patched: '#bf8700' }

export function renderChart(results: Results): string {
  const panels = [planPanel(results), fanoutPanel(results)]
  const body = panels.map((p, i) => renderPanel(p, PANEL.left[i] ?? 0)).join('\n')
  const subtitle = `${results.mode} run ${results.startedAt.slice(0, 16).replace('T', ' ')} UTC · ${results.machine.cores} cores, ${results.machine.memory.value.toFixed(0)} GiB · Node ${results.machine.node}`
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">helmrelease-trigger: how plan and fan-out scale</text>
<text x="${WIDTH / 2}" y="40" text-anchor="middle" fill="#57606a">${escape(subtitle)}</text>
${body}
</svg>
`
}

function planPanel(results: Results): Panel {
  const rows = results.scenarios.plan?.rows ?? []
  return {
    title: 'Plan: wall time vs changed files',
    xLabel: 'changed files (log)',
    yLabel: 'ms (log)',
    series: [
      { label: 'ours: preparePlan', color: COLORS.ours, dashed: false, points: rows.map((r) => ({ x: r.files, y: r.ours.wall.value })) },
      { label: 'baseline: git diff + cat-file', color: COLORS.baseline, dashed: false, points: rows.map((r) => ({ x: r.files, y: r.baseline.wall.value })) },
    ],
    marks: rows.some((r) => r.files === 5_000) ? [{ label: 'target: 3 s at 5,000', at: { x: 5_000, y: 3_000 } }] : [],
  }
}

function fanoutPanel(results: Results): Panel {
  const rows = results.scenarios.fanout?.rows ?? []
  const at = (concurrency: number) => rows.filter((r) => r.concurrency === concurrency)
  const series: Series[] = [
    { label: 'ours, concurrency 10', color: COLORS.ours, dashed: false, points: at(10).map((r) => ({ x: r.releases, y: r.ours.throughput.value })) },
    { label: 'ours, concurrency 50', color: COLORS.ours50, dashed: false, points: at(50).map((r) => ({ x: r.releases, y: r.ours.throughput.value })) },
    {
      label: 'raw HTTP/2, concurrency 10',
      color: COLORS.raw,
      dashed: false,
      points: at(10).map((r) => ({ x: r.releases, y: r.baselines.rawHttp2.throughput.value })),
    },
    {
      label: 'raw HTTP/2, concurrency 50',
      color: COLORS.raw50,
      dashed: false,
      points: at(50).map((r) => ({ x: r.releases, y: r.baselines.rawHttp2.throughput.value })),
    },
    {
      label: 'kubectl annotate loop',
      color: COLORS.kubectl,
      dashed: false,
      points: rows.flatMap((r) => (r.baselines.kubectl === undefined ? [] : [{ x: r.releases, y: r.baselines.kubectl.throughput.value }])),
    },
    {
      label: 'ours, all patched, conc. 10',
      color: COLORS.patched,
      dashed: true,
      points: at(10).map((r) => ({ x: r.releases, y: r.releases / (r.ours.patched.value / 1000) })),
    },
  ]
  return {
    title: 'Fan-out: throughput vs releases',
    xLabel: 'releases triggered (log)',
    yLabel: 'releases/s (log)',
    series: series.filter((s) => s.points.length > 0),
    marks: rows.some((r) => r.releases === 1_000) ? [{ label: 'target: 1,000 in 5 s', at: { x: 1_000, y: 200 } }] : [],
  }
}

// ---- drawing ---------------------------------------------------------------------------

interface LogScale {
  readonly min: number
  readonly max: number
  readonly map: (value: number) => number
}

function logScale(values: readonly number[], from: number, to: number): LogScale {
  const finite = values.filter((v) => Number.isFinite(v) && v > 0)
  const data = finite.length === 0 ? [1, 10] : finite
  const min = 10 ** Math.floor(Math.log10(Math.min(...data)))
  const max = Math.max(min * 10, 10 ** Math.ceil(Math.log10(Math.max(...data))))
  const span = Math.log10(max) - Math.log10(min) || 1
  return { min, max, map: (v) => from + ((Math.log10(v) - Math.log10(min)) / span) * (to - from) }
}

function renderPanel(panel: Panel, left: number): string {
  const points = [...panel.series.flatMap((s) => s.points), ...panel.marks.map((m) => m.at)]
  const bottom = PANEL.top + PANEL.height
  const x = logScale(
    points.map((p) => p.x),
    left,
    left + PANEL.width,
  )
  const y = logScale(
    points.map((p) => p.y),
    bottom,
    PANEL.top,
  )
  const parts = [
    `<text x="${left + PANEL.width / 2}" y="${PANEL.top - 12}" text-anchor="middle" font-size="14" font-weight="bold">${escape(panel.title)}</text>`,
    `<rect x="${left}" y="${PANEL.top}" width="${PANEL.width}" height="${PANEL.height}" fill="none" stroke="#d0d7de"/>`,
    ...decades(x).map((v) => gridX(x.map(v), v, bottom)),
    ...decades(y).map((v) => gridY(y.map(v), v, left)),
    `<text x="${left + PANEL.width / 2}" y="${bottom + 34}" text-anchor="middle" fill="#57606a">${escape(panel.xLabel)}</text>`,
    `<text transform="translate(${left - 50} ${PANEL.top + PANEL.height / 2}) rotate(-90)" text-anchor="middle" fill="#57606a">${escape(panel.yLabel)}</text>`,
    ...panel.marks.map((m) => mark(x.map(m.at.x), y.map(m.at.y), m.label, x.map(m.at.x) > left + PANEL.width * 0.6)),
    ...panel.series.map((s) => line(s, x, y)),
    ...panel.series.map((s, i) => legend(s, left + 8, bottom + 52 + Math.floor(i / 2) * 16, i % 2)),
  ]
  return parts.join('\n')
}

function decades(scale: LogScale): number[] {
  const out: number[] = []
  for (let v = scale.min; v <= scale.max * 1.0001 && out.length < 12; v *= 10) out.push(v)
  return out
}

function gridX(px: number, value: number, bottom: number): string {
  return `<line x1="${px.toFixed(1)}" y1="${PANEL.top}" x2="${px.toFixed(1)}" y2="${bottom}" stroke="#eaeef2"/><text x="${px.toFixed(1)}" y="${bottom + 16}" text-anchor="middle" fill="#57606a">${tick(value)}</text>`
}

function gridY(py: number, value: number, left: number): string {
  return `<line x1="${left}" y1="${py.toFixed(1)}" x2="${left + PANEL.width}" y2="${py.toFixed(1)}" stroke="#eaeef2"/><text x="${left - 6}" y="${(py + 4).toFixed(1)}" text-anchor="end" fill="#57606a">${tick(value)}</text>`
}

function tick(value: number): string {
  if (value >= 1_000_000) return `${value / 1_000_000}M`
  if (value >= 1_000) return `${value / 1_000}k`
  return String(value)
}

function line(series: Series, x: LogScale, y: LogScale): string {
  const pts = series.points.filter((p) => p.x > 0 && p.y > 0 && Number.isFinite(p.y))
  const path = pts.map((p) => `${x.map(p.x).toFixed(1)},${y.map(p.y).toFixed(1)}`).join(' ')
  const dash = series.dashed ? ' stroke-dasharray="6 4"' : ''
  const dots = pts.map(
    (p) =>
      `<circle cx="${x.map(p.x).toFixed(1)}" cy="${y.map(p.y).toFixed(1)}" r="3.5" fill="${series.color}"><title>${escape(`${series.label}: ${tick(p.x)} → ${p.y.toFixed(1)}`)}</title></circle>`,
  )
  return [`<polyline points="${path}" fill="none" stroke="${series.color}" stroke-width="2"${dash}/>`, ...dots].join('\n')
}

/** A cross at the target; its label to the left when the cross is near the right edge. */
function mark(px: number, py: number, label: string, labelLeft: boolean): string {
  const cross = `M ${(px - 7).toFixed(1)} ${py.toFixed(1)} L ${(px + 7).toFixed(1)} ${py.toFixed(1)} M ${px.toFixed(1)} ${(py - 7).toFixed(1)} L ${px.toFixed(1)} ${(py + 7).toFixed(1)}`
  const text = `<text x="${(labelLeft ? px - 9 : px + 9).toFixed(1)}" y="${(py + 16).toFixed(1)}" text-anchor="${labelLeft ? 'end' : 'start'}" fill="#111" stroke="#fff" stroke-width="4" paint-order="stroke">${escape(label)}</text>`
  return `<g><path d="${cross}" stroke="#111" stroke-width="2"/>${text}</g>`
}

function legend(series: Series, left: number, top: number, column: number): string {
  const x = left + column * 215
  const dash = series.dashed ? ' stroke-dasharray="6 4"' : ''
  return `<line x1="${x}" y1="${top - 4}" x2="${x + 22}" y2="${top - 4}" stroke="${series.color}" stroke-width="2"${dash}/><text x="${x + 28}" y="${top}">${escape(series.label)}</text>`
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

export async function writeChart(results: Results, path: string): Promise<void> {
  await writeFile(path, renderChart(results))
}

async function main(): Promise<void> {
  const here = dirname(fileURLToPath(import.meta.url))
  const input = resolve(process.argv[2] ?? join(here, 'results.json'))
  const output = resolve(process.argv[3] ?? join(here, 'scaling.svg'))
  const results = JSON.parse(await readFile(input, 'utf8')) as Results
  await writeChart(results, output)
  process.stdout.write(`wrote ${output}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  })
}
