// Go-style durations ("5m", "90s", "1h30m", "250ms"), the format Flux and kubectl users type.

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/

/** Milliseconds, or undefined when the text is not a duration. A bare number means seconds. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim()
  if (/^\d+$/.test(t)) return Number(t) * 1000
  if (!WHOLE.test(t)) return undefined
  let total = 0
  for (const m of t.matchAll(PART)) total += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? 0)
  return Math.round(total)
}

/** "1m30s", "450ms": for summaries and logs. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`
  const s = ms / 1000
  if (s < 10) return `${s.toFixed(1)}s`
  // Round once, then split: 119.7s is 2m, not 1m60s.
  const total = Math.round(s)
  if (total < 60) return `${total}s`
  const m = Math.floor(total / 60)
  const rest = total - m * 60
  return rest === 0 ? `${m}m` : `${m}m${rest}s`
}
