// A JSON document cut to fit a size limit, still valid JSON of the same shape: GitHub refuses a
// step or job output over 1 MB, and a run's plan can list thousands of sources. The longest arrays
// lose their tail, and the document says how much is missing and where the rest is.

/** What replaces the cut tail of an array, and what an object says was cut. */
export const TRUNCATED_NOTE = 'truncated to fit GitHub’s output limit: the job summary and the plan file have every entry'

/**
 * `json` (a JSON text) when it fits in `maxBytes` of UTF-8; otherwise the same document with its
 * arrays shortened, longest first: an array ends with `{"truncated": N, "note": …}` (N entries
 * cut), and a top-level object also gets `"truncated": {"<path>": N, …}`. Always valid JSON.
 */
export function capJson(json: string, maxBytes: number): string {
  if (Buffer.byteLength(json) <= maxBytes) return json
  const value: unknown = JSON.parse(json)
  const arrays = arraysOf(value, '')
  // Shorten the biggest array by halves until the whole fits; then the next biggest.
  const cut = new Map<unknown[], number>()
  let text = json
  for (let round = 0; round < 200 && Buffer.byteLength(text) > maxBytes; round++) {
    const biggest = [...arrays].sort((a, b) => sizeOf(b.array) - sizeOf(a.array))[0]
    if (biggest === undefined || biggest.array.length === 0) break
    const keep = Math.floor(biggest.array.length / 2)
    const removed = biggest.array.length - keep
    biggest.array.splice(keep, removed)
    cut.set(biggest.array, (cut.get(biggest.array) ?? 0) + removed)
    text = render(value, arrays, cut)
  }
  if (Buffer.byteLength(text) <= maxBytes) return text
  return JSON.stringify({ truncated: true, note: TRUNCATED_NOTE })
}

interface Located {
  readonly path: string
  readonly array: unknown[]
}

function arraysOf(value: unknown, path: string): Located[] {
  if (Array.isArray(value)) return [{ path: path === '' ? '.' : path, array: value }, ...value.flatMap((v, i) => arraysOf(v, `${path}[${i}]`))]
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([k, v]) => arraysOf(v, `${path}.${k}`))
  return []
}

function sizeOf(array: readonly unknown[]): number {
  return Buffer.byteLength(JSON.stringify(array))
}

function render(value: unknown, arrays: readonly Located[], cut: ReadonlyMap<unknown[], number>): string {
  const marked = new Map([...cut].map(([array, n]) => [array, n] as const))
  const withMarkers = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      const n = marked.get(v)
      const items = v.map(withMarkers)
      return n === undefined ? items : [...items, { truncated: n, note: TRUNCATED_NOTE }]
    }
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withMarkers(x)]))
    return v
  }
  const out = withMarkers(value)
  if (typeof out === 'object' && out !== null && !Array.isArray(out)) {
    const where = Object.fromEntries(arrays.filter((a) => cut.has(a.array)).map((a) => [a.path, cut.get(a.array)]))
    return JSON.stringify({ ...out, truncated: where })
  }
  return JSON.stringify(out)
}
