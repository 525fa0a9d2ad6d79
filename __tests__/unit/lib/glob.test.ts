// Glob matching for patterns from repository content: Go's filepath.Match on a component, and
// the copy-rule globs over paths, both without regular expressions, so a crafted pattern costs
// pattern × text steps at most.

import { describe, expect, it } from 'vitest'
import { matchComponent, matchPath, MAX_PATTERN } from '../../../src/lib/glob.ts'

describe('matchComponent (Go filepath.Match)', () => {
  it.each([
    ['*.yaml', 'a.yaml', true],
    ['*.yaml', 'a.yml', false],
    ['a?c', 'abc', true],
    ['a?c', 'ac', false],
    ['[a-c]x', 'bx', true],
    ['[^a-c]x', 'bx', false],
    ['[^a-c]x', 'dx', true],
    ['\\*', '*', true],
    ['\\*', 'a', false],
    ['*a*b', 'xaxxb', true],
    ['*a*b', 'xaxxbx', false],
    ['', '', true],
    ['*', '', true],
  ])('%s against %s is %s', (pattern, name, expected) => {
    expect(matchComponent(pattern, name)).toBe(expected)
  })

  it('matches nothing for a malformed pattern', () => {
    expect(matchComponent('[a-', 'a')).toBe(false)
    expect(matchComponent('a\\', 'a')).toBe(false)
    expect(matchComponent('[z-a]', 'm')).toBe(false)
  })

  it('answers a pattern built to backtrack, on a long name, correctly', () => {
    const name = 'a'.repeat(5_000)
    expect(matchComponent(`${'*a'.repeat(200)}b`, name)).toBe(false)
    expect(matchComponent(`${'*a'.repeat(200)}*`, name)).toBe(true)
  })
})

describe('matchPath (copy-rule globs)', () => {
  it('matches * within a segment and ** across segments', () => {
    expect(['deploy/a.yaml', 'deploy/x/y/b.yaml'].map((p) => matchPath('deploy/**/*.yaml', p))).toEqual([true, true])
    expect(['deploy/a.yml', 'other/a.yaml'].map((p) => matchPath('deploy/**/*.yaml', p))).toEqual([false, false])
    expect(matchPath('apps/*', 'apps/x/y')).toBe(false)
    expect(matchPath('apps/**', 'apps/x/y')).toBe(true)
    expect(matchPath('**/kustomization.yaml', 'kustomization.yaml')).toBe(true)
    expect(matchPath('a?c/*', 'abc/d')).toBe(true)
    expect(matchPath('a?c/*', 'a/c/d')).toBe(false)
  })

  it('answers a pattern built to backtrack, on a long path, correctly, and matches nothing past the pattern limit', () => {
    const file = `${'a'.repeat(3_000)}.yaml`
    expect(matchPath(`${'**a'.repeat(300)}b`, file)).toBe(false)
    expect(matchPath(`${'**a'.repeat(300)}**`, file)).toBe(true)
    expect(matchPath('*'.repeat(MAX_PATTERN + 1), 'a')).toBe(false)
  })
})
