// Range resolution against a hand-written fake history.

import { describe, expect, it } from 'vitest'
import { ConfigurationError } from '../../../src/lib/errors.ts'
import type { GitHubEventLike } from '../../../src/github/event.ts'
import { resolveRange, type CommitLookup, type RangeEvent, type RangeInputs } from '../../../src/git/range.ts'

const sha = (c: string): string => c.repeat(40)
const A = sha('a') // root
const B = sha('b') // parent A
const C = sha('c') // parent B
const M = sha('e') // a pull request merge commit: parent C
const ZERO = sha('0')

/** A clone holding these commits (each with its first parent, if fetched); resolves full SHAs and unique prefixes. */
function fakeClone(parents: Readonly<Record<string, string | undefined>>): CommitLookup {
  const names = Object.keys(parents)
  return {
    resolve: async (rev) => {
      const matches = rev.length >= 4 ? names.filter((n) => n.startsWith(rev)) : []
      return matches.length === 1 ? matches[0] : undefined
    },
    parent: async (commit) => parents[commit],
  }
}

const history = fakeClone({ [A]: undefined, [B]: A, [C]: B, [M]: C })
const noInputs: RangeInputs = { fullSync: false }

function range(eventName: string, event: RangeEvent, inputs: RangeInputs = noInputs, head = C, git = history) {
  return resolveRange({ event, eventName, inputs, sha: head }, git)
}

describe('push', () => {
  it('compares before..after', async () => {
    expect(await range('push', { before: A, after: C })).toEqual({ base: A, head: C, fullSync: false, notes: [] })
  })

  it('falls back to the head’s parent for a new branch, and says so', async () => {
    const r = await range('push', { before: ZERO, after: C })
    expect(r).toEqual({ base: B, head: C, fullSync: false, notes: [expect.stringContaining('new branch')] })
    expect(r.notes[0]).toContain('compared with the parent of the head')
  })

  it('falls back to the head’s parent when before is not in the clone', async () => {
    const r = await range('push', { before: sha('9'), after: C })
    expect(r).toEqual({
      base: B,
      head: C,
      fullSync: false,
      notes: [
        'before commit 9999999 is not in the clone (force push or shallow checkout? use fetch-depth: 2 or more); compared with the parent of the head instead',
      ],
    })
  })

  it('compares with nothing when the head has no parent in the clone, with both reasons', async () => {
    const shallow = fakeClone({ [C]: undefined })
    const r = await range('push', { before: B, after: C }, noInputs, C, shallow)
    expect(r.base).toBeUndefined()
    expect(r).not.toHaveProperty('base')
    expect(r.head).toBe(C)
    expect(r.notes).toEqual([
      expect.stringContaining('before commit bbbbbbb is not in the clone'),
      'head ccccccc has no parent in the clone (root commit, or a shallow checkout: use fetch-depth: 2 or more); every file at the head counts as added',
    ])
  })

  it('treats the first push of a repository (root commit) as everything added', async () => {
    const r = await range('push', { before: ZERO, after: A }, noInputs, A)
    expect(r.base).toBeUndefined()
    expect(r.head).toBe(A)
    expect(r.notes).toHaveLength(2)
    expect(r.notes[1]).toContain('head aaaaaaa has no parent')
  })

  it('has nothing to compare when the push deleted the branch', async () => {
    const r = await range('push', { before: C, after: ZERO, deleted: true })
    expect(r).toEqual({ base: C, head: C, fullSync: false, notes: ['the push deleted the branch; there is nothing to compare'] })
  })

  it('uses GITHUB_SHA when after is not in the clone', async () => {
    const r = await range('push', { before: A, after: sha('7') })
    expect(r.base).toBe(A)
    expect(r.head).toBe(C)
    expect(r.notes).toEqual(['pushed commit 7777777 is not in the clone; used the checked-out commit ccccccc'])
  })

  it('lets explicit inputs override the payload', async () => {
    expect(await range('push', { before: A, after: C }, { base: 'bbbb', head: 'cccc', fullSync: false })).toEqual({
      base: B,
      head: C,
      fullSync: false,
      notes: [],
    })
  })
})

describe('workflow_dispatch', () => {
  it('defaults to GITHUB_SHA and its parent', async () => {
    expect(await range('workflow_dispatch', {})).toEqual({ base: B, head: C, fullSync: false, notes: [] })
  })

  it('takes base and head inputs, resolved to full SHAs', async () => {
    expect(await range('workflow_dispatch', {}, { base: 'aaaa', head: 'bbbbbb', fullSync: false })).toEqual({
      base: A,
      head: B,
      fullSync: false,
      notes: [],
    })
  })

  it('defaults base to the parent of the head input', async () => {
    expect(await range('workflow_dispatch', {}, { head: B, fullSync: false })).toMatchObject({ base: A, head: B })
  })

  it('treats empty inputs as unset', async () => {
    expect(await range('workflow_dispatch', {}, { base: '', head: '  ', fullSync: false })).toMatchObject({ base: B, head: C })
  })

  it('full-sync takes every labelled source at head, whatever the base', async () => {
    const r = await range('workflow_dispatch', {}, { base: A, fullSync: true })
    expect(r).toEqual({
      head: C,
      fullSync: true,
      notes: [`input 'base' is ignored under full-sync`, 'full sync: every labelled source at ccccccc'],
    })
    expect(r).not.toHaveProperty('base')
  })

  it('full-sync honours the head input', async () => {
    expect(await range('workflow_dispatch', {}, { head: B, fullSync: true })).toMatchObject({ head: B, fullSync: true })
  })

  it('names the input whose commit is not in the clone', async () => {
    const base = range('workflow_dispatch', {}, { base: 'xyz', fullSync: false })
    await expect(base).rejects.toBeInstanceOf(ConfigurationError)
    await expect(base).rejects.toThrow(`input 'base': commit 'xyz' not found in the clone; fetch it (actions/checkout fetch-depth: 0)`)
    await expect(range('workflow_dispatch', {}, { head: 'main~3', fullSync: false })).rejects.toThrow(
      `input 'head': commit 'main~3' not found in the clone; fetch it (actions/checkout fetch-depth: 0)`,
    )
  })

  it('fails clearly when GITHUB_SHA itself is not in the clone', async () => {
    await expect(range('workflow_dispatch', {}, noInputs, sha('5'))).rejects.toThrow(
      new ConfigurationError(`GITHUB_SHA commit '${sha('5')}' is not in the clone; check out the repository first (actions/checkout)`),
    )
  })
})

describe('pull requests', () => {
  const pr = (base: string, head: string): GitHubEventLike => ({ pull_request: { base: { sha: base }, head: { sha: head }, fromFork: false } })

  it('compares the pull request base with its head', async () => {
    expect(await range('pull_request', pr(A, C), noInputs, M)).toEqual({ base: A, head: C, fullSync: false, notes: [] })
    expect(await range('pull_request_target', pr(A, C), noInputs, B)).toEqual({ base: A, head: C, fullSync: false, notes: [] })
  })

  it('pull_request: uses the checked-out merge commit when the head was not fetched', async () => {
    const r = await range('pull_request', pr(C, sha('8')), noInputs, M)
    expect(r).toEqual({
      base: C,
      head: M,
      fullSync: false,
      notes: ['pull request head 8888888 is not in the clone; used the checked-out merge commit eeeeeee'],
    })
  })

  it('pull_request_target: refuses to plan the base branch in place of a missing head', async () => {
    await expect(range('pull_request_target', pr(A, sha('8')), noInputs, C)).rejects.toThrow(
      /pull request head 8888888 is not in the clone; plan pull requests on the pull_request event/,
    )
  })

  it('falls back to the head’s parent when the base was not fetched', async () => {
    const r = await range('pull_request', pr(sha('9'), C), noInputs, M)
    expect(r.base).toBe(B)
    expect(r.notes).toEqual(['pull request base 9999999 is not in the clone; compared with the parent of the head instead'])
  })

  it('ignores a pull_request field on other events', async () => {
    expect(await range('schedule', pr(A, B))).toMatchObject({ base: B, head: C })
  })
})

describe('schedule and other events', () => {
  it('compares GITHUB_SHA with its parent', async () => {
    for (const eventName of ['schedule', 'repository_dispatch', 'merge_group', 'release']) {
      expect(await range(eventName, { before: A })).toEqual({ base: B, head: C, fullSync: false, notes: [] })
    }
  })

  it('runs a full sync when asked', async () => {
    expect(await range('schedule', {}, { fullSync: true })).toEqual({
      head: C,
      fullSync: true,
      notes: ['full sync: every labelled source at ccccccc'],
    })
  })

  it('takes explicit inputs', async () => {
    expect(await range('schedule', {}, { base: A, fullSync: false })).toMatchObject({ base: A, head: C })
  })

  it('says so when GITHUB_SHA is the root commit', async () => {
    const r = await range('schedule', {}, noInputs, A)
    expect(r).toEqual({ head: A, fullSync: false, notes: [expect.stringContaining('head aaaaaaa has no parent in the clone')] })
  })
})
