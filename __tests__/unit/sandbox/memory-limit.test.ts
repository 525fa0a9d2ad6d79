// A module's own memory given a maximum, on hand-made modules (the real renderer's is exercised
// by the sandbox tests): the memory section rewritten, every other byte kept.

import { describe, expect, it } from 'vitest'
import { withMemoryMaximum } from '../../../src/sandbox/memory-limit.ts'

const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]
/** A module of a type section, a memory section with these limits, and an export section. */
const module = (limits: number[]): Uint8Array =>
  Uint8Array.from([...HEADER, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x05, limits.length + 1, 0x01, ...limits, 0x07, 0x01, 0x00])

describe('withMemoryMaximum', () => {
  it('adds a maximum to a memory that has none, in whole pages', () => {
    const out = withMemoryMaximum(module([0x00, 0x02]), 3 * 65536 + 100)
    expect([...out]).toEqual([...module([0x01, 0x02, 0x03])])
  })

  it('keeps a smaller maximum the module declares, and encodes large counts in LEB128', () => {
    expect([...withMemoryMaximum(module([0x01, 0x01, 0x02]), 1024 * 1024 * 1024)]).toEqual([...module([0x01, 0x01, 0x02])])
    // 1 GiB is 16,384 pages: 0x80 0x80 0x01.
    expect([...withMemoryMaximum(module([0x00, 0x01]), 1024 * 1024 * 1024)]).toEqual([...module([0x01, 0x01, 0x80, 0x80, 0x01])])
  })

  it('refuses a maximum below what the module needs to start, and what is not a module', () => {
    expect(() => withMemoryMaximum(module([0x00, 0x10]), 65536)).toThrow(/needs 1048576 bytes/)
    expect(() => withMemoryMaximum(Uint8Array.from([1, 2, 3]), 65536)).toThrow(/not a WebAssembly module/)
  })
})
