// Flux's postBuild substitution (fluxcd/pkg envsubst semantics, re-implemented): only `${…}`
// is an expression, `$$` writes a literal `$` (so `$${var}` stays `${var}`), a bare `$var` is
// text. Variables that have no value and no default are left as written and reported: offline
// we cannot know them (they may come from the cluster), and a guess would plan the wrong digest.

/** kustomize-controller refuses variable names outside this pattern. */
export const VARIABLE_NAME = /^[_a-zA-Z][_a-zA-Z0-9]*$/

export interface Substitution {
  readonly text: string
  /** Variables referenced without a value or a default, in order of first use. */
  readonly unresolved: readonly string[]
  /** Expressions we could not parse or do not support (left as written). */
  readonly errors: readonly string[]
}

/** Substitutes `${…}` in `text` from `vars` (undefined = unknown, '' = set and empty). */
export function substitute(text: string, vars: ReadonlyMap<string, string>): Substitution {
  const unresolved: string[] = []
  const errors: string[] = []
  let out = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (c === '$' && text[i + 1] === '$') {
      out += '$'
      i += 2
      continue
    }
    if (c === '$' && text[i + 1] === '{') {
      const parsed = expression(text, i + 2, vars, unresolved, errors)
      if (parsed === undefined) {
        out += text.slice(i)
        break
      }
      out += parsed.value
      i = parsed.end
      continue
    }
    out += c
    i += 1
  }
  return { text: out, unresolved: [...new Set(unresolved)], errors }
}

interface Parsed {
  readonly value: string
  /** Index just after the closing brace. */
  readonly end: number
}

/** Parses from just after `${`; undefined when there is no closing brace. */
function expression(text: string, start: number, vars: ReadonlyMap<string, string>, unresolved: string[], errors: string[]): Parsed | undefined {
  const close = closingBrace(text, start)
  if (close === undefined) {
    errors.push(`missing closing brace after '\${${text.slice(start, start + 20)}'`)
    return undefined
  }
  const raw = text.slice(start, close)
  const keep = (): Parsed => ({ value: `\${${raw}}`, end: close + 1 })
  if (raw.startsWith('#')) {
    const name = raw.slice(1)
    if (!VARIABLE_NAME.test(name)) return (errors.push(`bad substitution '\${${raw}}'`), keep())
    const value = vars.get(name)
    if (value === undefined) return (unresolved.push(name), keep())
    return { value: String([...value].length), end: close + 1 }
  }
  const name = /^[_a-zA-Z0-9]+/.exec(raw)?.[0] ?? ''
  if (name === '') return (errors.push(`bad substitution '\${${raw}}'`), keep())
  const rest = raw.slice(name.length)
  const value = vars.get(name)
  if (rest === '') {
    if (value === undefined) return (unresolved.push(name), keep())
    return { value, end: close + 1 }
  }
  const fallback = /^(:?[=-])([\s\S]*)$/.exec(rest)
  if (fallback) {
    const [, operator = '', argument = ''] = fallback
    const useDefault = value === undefined || (operator.startsWith(':') && value === '')
    if (!useDefault) return { value, end: close + 1 }
    // The default may itself hold expressions.
    const inner = substitute(argument, vars)
    unresolved.push(...inner.unresolved)
    errors.push(...inner.errors)
    return { value: inner.text, end: close + 1 }
  }
  const casing = /^(\^\^?|,,?)$/.exec(rest)
  if (casing) {
    if (value === undefined) return (unresolved.push(name), keep())
    return { value: changeCase(value, rest), end: close + 1 }
  }
  errors.push(`'\${${raw}}' uses a substitution form this planner does not evaluate; use \${var} or \${var:=default}`)
  return keep()
}

/** The brace closing an expression opened at `start`, nested `${…}` included. */
function closingBrace(text: string, start: number): number | undefined {
  let depth = 0
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (c === '$' && text[i + 1] === '{') {
      depth += 1
      i += 1
    } else if (c === '}') {
      if (depth === 0) return i
      depth -= 1
    }
  }
  return undefined
}

function changeCase(value: string, operator: string): string {
  const [first = '', ...rest] = [...value]
  switch (operator) {
    case '^':
      return first.toUpperCase() + rest.join('')
    case '^^':
      return value.toUpperCase()
    case ',':
      return first.toLowerCase() + rest.join('')
    default:
      return value.toLowerCase()
  }
}
