// Glob matching without regular expressions: patterns come from repository content
// (.sourceignore, a GitRepository's spec.ignore, ArtifactGenerator copy rules), and a pattern
// turned into a RegExp backtracks polynomially or worse on a crafted name. Both matchers here run
// in time proportional to pattern × text, with no recursion.

/** A pattern longer than this matches nothing (no real ignore or copy rule comes near it). */
export const MAX_PATTERN = 1024

type Token =
  | { readonly kind: 'char'; readonly char: string }
  | { readonly kind: 'any' }
  | { readonly kind: 'star' }
  | { readonly kind: 'class'; readonly test: (c: string) => boolean }

/**
 * Go's path/filepath.Match on one path component: `*` any run, `?` one character, `[…]` a class
 * (`^` negates, `a-z` ranges), `\` escapes. A malformed pattern matches nothing.
 */
export function matchComponent(pattern: string, name: string): boolean {
  const tokens = componentTokens(pattern)
  return tokens !== undefined && matchTokens(tokens, [...name])
}

/**
 * A path glob over `/`-separated paths: `*` and `?` stay within a component, `**` crosses any
 * number of them and `**` followed by `/` any number of whole directories (none included); every other
 * character is literal.
 */
export function matchPath(pattern: string, path: string): boolean {
  if (pattern.length > MAX_PATTERN) return false
  const tokens: (Token | { readonly kind: 'globstar' } | { readonly kind: 'dirs' })[] = []
  const chars = [...pattern]
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? ''
    if (c === '*' && chars[i + 1] === '*') {
      const slash = chars[i + 2] === '/'
      tokens.push({ kind: slash ? 'dirs' : 'globstar' })
      i += slash ? 2 : 1
    } else if (c === '*') tokens.push({ kind: 'star' })
    else if (c === '?') tokens.push({ kind: 'any' })
    else tokens.push({ kind: 'char', char: c })
  }
  const text = [...path]
  // reach[j]: the tokens so far can match text[0..j).
  let reach = new Array<boolean>(text.length + 1).fill(false)
  reach[0] = true
  // Each token is one pass over the text.
  for (const token of tokens) {
    const next = new Array<boolean>(text.length + 1).fill(false)
    let open = false
    for (let j = 0; j <= text.length; j++) {
      const c = text[j]
      if (reach[j]) open = true
      switch (token.kind) {
        case 'char':
          if (reach[j] && c === token.char) next[j + 1] = true
          break
        case 'any':
          if (reach[j] && c !== undefined && c !== '/') next[j + 1] = true
          break
        case 'star':
          // From a reached position, any run of characters up to the next `/`.
          next[j] = open
          if (c === '/') open = false
          break
        case 'globstar':
          next[j] = open
          break
        case 'dirs':
          // Nothing, or up to and including any later `/`.
          if (reach[j]) next[j] = true
          if (open && c === '/') next[j + 1] = true
          break
        case 'class':
          break
      }
    }
    reach = next
  }
  return reach[text.length] === true
}

function componentTokens(pattern: string): Token[] | undefined {
  if (pattern.length > MAX_PATTERN) return undefined
  const chars = [...pattern]
  const tokens: Token[] = []
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? ''
    if (c === '*') {
      if (tokens[tokens.length - 1]?.kind !== 'star') tokens.push({ kind: 'star' })
    } else if (c === '?') tokens.push({ kind: 'any' })
    else if (c === '\\') {
      const next = chars[i + 1]
      if (next === undefined) return undefined
      tokens.push({ kind: 'char', char: next })
      i += 1
    } else if (c === '[') {
      const parsed = classAt(chars, i + 1)
      if (parsed === undefined) return undefined
      tokens.push({ kind: 'class', test: parsed.test })
      i = parsed.end
    } else tokens.push({ kind: 'char', char: c })
  }
  return tokens
}

/** A `[…]` class starting after its `[`: its test and the index of its `]`. */
function classAt(chars: readonly string[], start: number): { test: (c: string) => boolean; end: number } | undefined {
  let i = start
  const negated = chars[i] === '^'
  if (negated) i += 1
  const ranges: [string, string][] = []
  let first = true
  while (i < chars.length && (chars[i] !== ']' || first)) {
    first = false
    let lo = chars[i] ?? ''
    if (lo === '\\') lo = chars[++i] ?? ''
    if (lo === '') return undefined
    let hi = lo
    if (chars[i + 1] === '-' && chars[i + 2] !== undefined && chars[i + 2] !== ']') {
      hi = chars[i + 2] ?? ''
      if (hi === '\\') {
        hi = chars[i + 3] ?? ''
        i += 1
      }
      if (hi === '' || hi < lo) return undefined
      i += 2
    }
    ranges.push([lo, hi])
    i += 1
  }
  if (chars[i] !== ']') return undefined
  return { test: (c) => c !== '/' && ranges.some(([lo, hi]) => lo <= c && c <= hi) !== negated, end: i }
}

/** Wildcard matching with one remembered star (each star only ever moves forward): O(pattern × text). */
function matchTokens(tokens: readonly Token[], text: readonly string[]): boolean {
  let t = 0
  let p = 0
  let starP = -1
  let starT = 0
  while (t < text.length) {
    const token = tokens[p]
    const c = text[t] ?? ''
    if (token !== undefined && token.kind !== 'star' && c !== '/' && (token.kind === 'any' || (token.kind === 'char' ? token.char === c : token.test(c)))) {
      t += 1
      p += 1
    } else if (token?.kind === 'star') {
      starP = p
      starT = t
      p += 1
    } else if (starP >= 0 && text[starT] !== '/') {
      p = starP + 1
      starT += 1
      t = starT
    } else return false
  }
  while (tokens[p]?.kind === 'star') p += 1
  return p === tokens.length
}
