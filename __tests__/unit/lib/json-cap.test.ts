// An output cut to fit GitHub's limit stays valid JSON of the same shape and says what it cut.

import { describe, expect, it } from 'vitest'
import { capJson, TRUNCATED_NOTE } from '../../../src/lib/json-cap.ts'

const bytes = (s: string): number => Buffer.byteLength(s)

describe('capJson', () => {
  it('keeps a document that fits as it is', () => {
    const json = JSON.stringify({ releases: [{ name: 'a' }] })
    expect(capJson(json, 1000)).toBe(json)
  })

  it('cuts the longest array of an object, marks its tail and names the cut at the top', () => {
    const plan = {
      releases: Array.from({ length: 10 }, (_, i) => ({ name: `r${i}` })),
      sources: Array.from({ length: 5_000 }, (_, i) => ({ id: `ConfigMap/apps/s${i}` })),
    }
    const out = capJson(JSON.stringify(plan), 50_000)
    expect(bytes(out)).toBeLessThanOrEqual(50_000)
    const parsed = JSON.parse(out) as { releases: unknown[]; sources: unknown[]; truncated: Record<string, number> }
    expect(parsed.releases).toHaveLength(10)
    expect(parsed.sources.at(-1)).toEqual({ truncated: parsed.truncated['.sources'], note: TRUNCATED_NOTE })
    expect(parsed.sources.length - 1 + (parsed.truncated['.sources'] ?? 0)).toBe(5_000)
  })

  it('cuts a top-level array, its last entry saying how many are missing', () => {
    const failed = Array.from({ length: 3_000 }, (_, i) => ({ namespace: 'apps', name: `r${i}`, message: 'x'.repeat(100) }))
    const out = JSON.parse(capJson(JSON.stringify(failed), 100_000)) as ({ name: string } | { truncated: number })[]
    const last = out.at(-1) as { truncated: number }
    expect(out.length - 1 + last.truncated).toBe(3_000)
  })

  it('says only that it was cut when nothing cut fits', () => {
    expect(JSON.parse(capJson(JSON.stringify({ value: 'x'.repeat(10_000) }), 500))).toEqual({ truncated: true, note: TRUNCATED_NOTE })
  })
})
