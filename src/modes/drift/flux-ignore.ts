// A HelmRelease's own `spec.driftDetection.ignore` rules, honoured by drift too: a team that
// told helm-controller a field is expected to differ should not see it reported here.
// Each rule has JSON pointers (RFC 6901) and an optional kustomize-style target: group,
// version, kind, name and namespace as anchored regular expressions, label and annotation
// selectors. Pure.

import type { IgnoreRule } from '../../core/field-path.ts'

type Json = Readonly<Record<string, unknown>>

export interface FluxIgnore {
  readonly rule: IgnoreRule
  readonly target: Target | undefined
}

interface Target {
  readonly group?: RegExp
  readonly version?: RegExp
  readonly kind?: RegExp
  readonly name?: RegExp
  readonly namespace?: RegExp
  readonly labelSelector?: string
  readonly annotationSelector?: string
}

function record(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
}

/** `/spec/template/containers/0/image` → segments; `~1` is '/', `~0` is '~'. */
export function pointerSegments(pointer: string): string[] | undefined {
  if (!pointer.startsWith('/')) return undefined
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

function anchored(v: unknown): RegExp | undefined {
  if (typeof v !== 'string' || v === '') return undefined
  try {
    return new RegExp(`^(?:${v})$`)
  } catch {
    // Not a regular expression: match it literally.
    return new RegExp(`^${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)
  }
}

export function fluxIgnoreRules(helmRelease: unknown): FluxIgnore[] {
  const spec = record(record(helmRelease)['spec'])
  const ignore = record(spec['driftDetection'])['ignore']
  if (!Array.isArray(ignore)) return []
  return ignore.flatMap((entry): FluxIgnore[] => {
    const e = record(entry)
    const paths = Array.isArray(e['paths']) ? e['paths'].filter((p): p is string => typeof p === 'string') : []
    const t = e['target'] === undefined ? undefined : record(e['target'])
    const target: Target | undefined =
      t === undefined
        ? undefined
        : {
            group: anchored(t['group']),
            version: anchored(t['version']),
            kind: anchored(t['kind']),
            name: anchored(t['name']),
            namespace: anchored(t['namespace']),
            labelSelector: typeof t['labelSelector'] === 'string' && t['labelSelector'] !== '' ? t['labelSelector'] : undefined,
            annotationSelector: typeof t['annotationSelector'] === 'string' && t['annotationSelector'] !== '' ? t['annotationSelector'] : undefined,
          }
    return paths.flatMap((p) => {
      const path = pointerSegments(p)
      return path === undefined || path.length === 0 ? [] : [{ rule: { kind: undefined, name: undefined, path, text: p }, target }]
    })
  })
}

export interface TargetObject {
  readonly apiVersion: string
  readonly kind: string
  readonly name: string
  readonly namespace: string | undefined
  readonly object: Json
}

/** Whether a rule's target selects the object (no target selects every object). */
export function selects(target: Target | undefined, o: TargetObject): boolean {
  if (target === undefined) return true
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/', 2) : ['', o.apiVersion]
  const metadata = record(o.object['metadata'])
  const test = (re: RegExp | undefined, v: string): boolean => re === undefined || re.test(v)
  return (
    test(target.group, group ?? '') &&
    test(target.version, version ?? '') &&
    test(target.kind, o.kind) &&
    test(target.name, o.name) &&
    test(target.namespace, o.namespace ?? '') &&
    (target.labelSelector === undefined || matchesSelector(target.labelSelector, strings(metadata['labels']))) &&
    (target.annotationSelector === undefined || matchesSelector(target.annotationSelector, strings(metadata['annotations'])))
  )
}

function strings(v: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(record(v)).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

/** A Kubernetes label selector (equality and set-based) against a map; a term it cannot read matches nothing. */
export function matchesSelector(selector: string, labels: Readonly<Record<string, string>>): boolean {
  const terms = selector.match(/[^,(]+(?:\([^)]*\))?/g) ?? []
  return terms.every((raw) => {
    const term = raw.trim()
    if (term === '') return true
    let m = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term)
    if (m !== null) {
      const values = (m[3] ?? '').split(',').map((v) => v.trim())
      const has = labels[m[1] ?? ''] !== undefined && values.includes(labels[m[1] ?? ''] ?? '')
      return m[2] === 'in' ? has : !has
    }
    m = /^([^\s!=]+)\s*(==|=|!=)\s*(\S*)$/.exec(term)
    if (m !== null) {
      const value = labels[m[1] ?? '']
      return m[2] === '!=' ? value !== m[3] : value === m[3]
    }
    if (/^![^\s!=]+$/.test(term)) return labels[term.slice(1)] === undefined
    if (/^[^\s!=]+$/.test(term)) return labels[term] !== undefined
    return false
  })
}
