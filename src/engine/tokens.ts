// The requestedAt token: helm-controller acts on a value it has not handled yet, so each
// patch carries a new one.

import { randomInt } from 'node:crypto'

/** RFC 3339 UTC with nanoseconds, like Go's time.RFC3339Nano; unique per call within a process. */
export function newToken(now: Date, sequence: number): string {
  const iso = now.toISOString() // 2026-11-22T10:00:00.123Z
  const nanos = String(sequence % 1_000_000).padStart(6, '0')
  return `${iso.slice(0, 23)}${nanos}Z`
}

/** The tokens of one run: distinct by sequence within it, and by a random start between runs. */
export interface TokenSequence {
  next(now: number): string
}

export function tokenSequence(start = randomInt(1000) * 1000): TokenSequence {
  // Tokens differ within the run by sequence; a random start keeps two runs patching in the
  // same millisecond from writing one token (helm-controller would ignore the second).
  let n = start
  return { next: (now) => newToken(new Date(now), n++) }
}
