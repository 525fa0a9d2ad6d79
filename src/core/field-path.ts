// Field paths as drift reports them, and the `drift-ignore` rules that match them.
//
//   path  := segment ( '.' key | '[' bracket ']' )*
//   key   := letters, digits, '_' and '-' (starting with a letter or '_')
//   bracket := any key (`[values.yaml]`, `[app.kubernetes.io/name]`), a list index (`[0]`),
//              a named list item (`[name=app]`) or `*`
//   rule  := [ Kind '/' name '/' ] path      Kind and name may be `*`; `*` as a segment
//                                            matches any one key, index or item
//
// A rule matches a field path it is a prefix of: `spec.template` ignores everything under
// it. Examples: `Deployment/*/spec.replicas`, `*/*/metadata.annotations[example.com/sync]`,
// `ConfigMap/app/data[values.yaml]`, `spec.template.spec.containers[*].image`.

import { ConfigurationError } from '../lib/errors.ts'

export interface Segment {
  /** Map key, list index as text, or `name=<value>` for a named list item. */
  readonly key: string
  /** A list index or a named item, written in brackets. */
  readonly item?: boolean
  /** A named item's position in the chart's list: a rule may name it by index too (JSON pointers do). */
  readonly index?: number
}

export type FieldPath = readonly Segment[]

export interface IgnoreRule {
  /** undefined or `*`: any kind. */
  readonly kind: string | undefined
  readonly name: string | undefined
  /** Segment texts; `*` matches any one segment. */
  readonly path: readonly string[]
  /** As written, for messages. */
  readonly text: string
}

const PLAIN = /^[A-Za-z_][A-Za-z0-9_-]*$/

export function formatPath(path: FieldPath): string {
  return path.map((s, i) => (s.item === true || !PLAIN.test(s.key) ? `[${s.key}]` : i === 0 ? s.key : `.${s.key}`)).join('')
}

/** Segment texts of a path written as formatPath writes it; undefined when malformed. */
export function parsePath(text: string): string[] | undefined {
  const out: string[] = []
  let i = 0
  while (i < text.length) {
    const c = text.charAt(i)
    if (c === '[') {
      const end = text.indexOf(']', i + 1)
      if (end === -1 || end === i + 1) return undefined
      out.push(text.slice(i + 1, end))
      i = end + 1
      continue
    }
    if (c === '.') {
      const next = text.charAt(i + 1)
      if (out.length === 0 || next === '' || next === '.' || next === '[') return undefined
      i++
      continue
    }
    let end = i
    while (end < text.length && text.charAt(end) !== '.' && text.charAt(end) !== '[') end++
    const key = text.slice(i, end)
    if (key !== '*' && !PLAIN.test(key)) return undefined
    // A key follows the start or a '.', never directly a ']'.
    if (out.length > 0 && text.charAt(i - 1) !== '.') return undefined
    out.push(key)
    i = end
  }
  return out.length === 0 ? undefined : out
}

const KIND = /^(?:\*|[A-Za-z][A-Za-z0-9]*)$/
const NAME = /^(?:\*|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/

/** One drift-ignore line. Throws a ConfigurationError that shows the expected format. */
export function parseIgnoreRule(text: string): IgnoreRule {
  const trimmed = text.trim()
  const scoped = /^([^/.[\]]+)\/([^/[\]]+)\/(.+)$/.exec(trimmed)
  const [kind, name, pathText] = scoped === null ? [undefined, undefined, trimmed] : [scoped[1] ?? '', scoped[2] ?? '', scoped[3] ?? '']
  const path = parsePath(pathText)
  if (path === undefined || (kind !== undefined && !KIND.test(kind)) || (name !== undefined && !NAME.test(name))) {
    throw new ConfigurationError(
      `Input 'drift-ignore' has an invalid rule '${trimmed}'. Expected [Kind/name/]path, e.g. Deployment/*/spec.replicas or metadata.annotations[example.com/key] (see docs/modes.md).`,
    )
  }
  return { kind: kind === '*' ? undefined : kind, name: name === '*' ? undefined : name, path, text: trimmed }
}

export function ruleMatches(rule: IgnoreRule, kind: string, name: string, path: FieldPath): boolean {
  if (rule.kind !== undefined && rule.kind !== kind) return false
  if (rule.name !== undefined && rule.name !== name) return false
  if (rule.path.length > path.length) return false
  return rule.path.every((p, i) => {
    const segment = path[i]
    return p === '*' || p === segment?.key || (segment?.index !== undefined && p === String(segment.index))
  })
}
