import { describe, expect, it } from 'vitest'
import { EventWriter } from '../../../../src/modes/watch/event-writer.ts'

/** A write that finishes when the test says so. */
function gatedWrites(): { write: (e: number) => Promise<void>; started: number[]; finish: () => void } {
  const started: number[] = []
  const gates: (() => void)[] = []
  return {
    started,
    write: (e) => {
      started.push(e)
      return new Promise<void>((resolve) => gates.push(resolve))
    },
    finish: () => gates.shift()?.(),
  }
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('EventWriter', () => {
  it('writes at most `concurrency` Events at once, in the order added', async () => {
    const w = gatedWrites()
    const writer = new EventWriter<number>({ concurrency: 2, limit: 100, write: w.write, onDropped: () => undefined })
    for (const e of [1, 2, 3, 4, 5]) writer.add(e)
    expect(w.started).toEqual([1, 2])
    expect(writer.depth).toBe(5)
    w.finish()
    await settle()
    expect(w.started).toEqual([1, 2, 3])
    for (let i = 0; i < 4; i++) {
      w.finish()
      await settle()
    }
    expect(w.started).toEqual([1, 2, 3, 4, 5])
    expect(writer.depth).toBe(0)
  })

  it('drops what comes beyond `limit` waiting, and says which', () => {
    const w = gatedWrites()
    const dropped: number[] = []
    const writer = new EventWriter<number>({ concurrency: 1, limit: 2, write: w.write, onDropped: (e) => dropped.push(e) })
    for (const e of [1, 2, 3, 4, 5]) writer.add(e)
    // 1 is being written, 2 and 3 wait: 4 and 5 find the waiting list full.
    expect(w.started).toEqual([1])
    expect(dropped).toEqual([4, 5])
  })

  it('drain resolves once every Event added is written, a failed write included', async () => {
    const written: number[] = []
    const writer = new EventWriter<number>({
      concurrency: 2,
      limit: 100,
      write: async (e) => {
        await settle()
        if (e === 2) throw new Error('refused')
        written.push(e)
      },
      onDropped: () => undefined,
    })
    for (const e of [1, 2, 3, 4, 5]) writer.add(e)
    await writer.drain()
    expect(written.sort()).toEqual([1, 3, 4, 5])
    expect(writer.depth).toBe(0)
  })
})
