// Flux's postBuild substitution rules (fluxcd/pkg envsubst), as documented: `${var}`, defaults,
// `$$` escapes, bare `$var` left alone, unknown variables reported rather than guessed.

import { describe, expect, it } from 'vitest'
import { substitute } from '../../../src/render/substitute.ts'

const vars = new Map([
  ['cluster', 'prod'],
  ['empty', ''],
  ['region', 'eu-west-1'],
])

describe('substitute', () => {
  it('replaces ${var} and leaves a bare $var as text', () => {
    expect(substitute('name: app-${cluster}\nhome: $HOME', vars)).toEqual({ text: 'name: app-prod\nhome: $HOME', unresolved: [], errors: [] })
  })

  it('applies := and :- when the variable is unset or empty, = and - only when unset', () => {
    expect(substitute('${missing:=a} ${empty:=b} ${empty=c} ${missing-d} ${empty:-e} ${cluster:=f}', vars).text).toBe('a b  d e prod')
  })

  it('evaluates expressions inside a default', () => {
    expect(substitute('${missing:=${region}-x}', vars).text).toBe('eu-west-1-x')
  })

  it('writes $$ as one literal $, so $${var} stays an unsubstituted ${var}', () => {
    expect(substitute('price: $$5 keep: $${cluster} both: $$$${cluster}', vars).text).toBe('price: $5 keep: ${cluster} both: $${cluster}')
  })

  it('leaves unknown variables as written and names each once', () => {
    const result = substitute('a: ${nope}\nb: ${nope}\nc: ${other}', vars)
    expect(result.text).toBe('a: ${nope}\nb: ${nope}\nc: ${other}')
    expect(result.unresolved).toEqual(['nope', 'other'])
  })

  it('supports the case and length operators', () => {
    expect(substitute('${cluster^} ${cluster^^} ${#region}', vars).text).toBe('Prod PROD 9')
  })

  it('reports forms it does not evaluate and a missing closing brace, leaving the text as written', () => {
    const unsupported = substitute('${region/eu/us}', vars)
    expect(unsupported.text).toBe('${region/eu/us}')
    expect(unsupported.errors[0]).toContain('does not evaluate')
    const open = substitute('x: ${cluster', vars)
    expect(open.text).toBe('x: ${cluster')
    expect(open.errors[0]).toContain('missing closing brace')
  })

  it('keeps non-ASCII text and CRLF line ends untouched', () => {
    expect(substitute('grüße: ${cluster}\r\nnext: ü', vars).text).toBe('grüße: prod\r\nnext: ü')
  })
})
