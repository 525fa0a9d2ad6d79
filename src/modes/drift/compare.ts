// Compares what the chart rendered with the live object: only the fields the chart sets.
// Pure. What the server or other controllers add (status, managedFields, defaults, extra
// labels) is not drift; a field the chart sets with another value, or that is gone, is.
//
// The rules follow what a Helm upgrade (three-way merge) would put back, so `correct`
// never chases a difference it cannot fix:
// - maps: every key the chart sets is compared; keys only the live object has are ignored;
// - lists whose items all carry a `name` (containers, env, volumes, ports): matched by
//   name, items only the live object has are ignored;
// - other lists: compared item by item, a different length is drift of the whole list;
// - null, {} and [] in the chart equal an absent field (the server drops them);
// - a number equals the same number written as a string; resource quantities compare by
//   value (1000m = 1, 1024Mi = 1Gi), as the server canonicalises them;
// - a Secret's stringData is compared as the data it becomes; Secret values are never
//   reported, only their paths.

import { parseIgnoreRule, type FieldPath, type IgnoreRule, formatPath, ruleMatches } from '../../core/field-path.ts'

export const ABSENT = '(absent)'
export const REDACTED = '(redacted)'

export interface FieldChange {
  readonly path: string
  /** Compact JSON of what the chart set, REDACTED for Secret values. */
  readonly desired: string
  /** Compact JSON of the live value, ABSENT when missing, REDACTED for Secret values. */
  readonly live: string
}

export interface CompareOptions {
  /** Rules from drift-ignore plus the built-in ones; matched against Kind, name and path. */
  readonly ignore: readonly IgnoreRule[]
  /** An HPA scales this object: spec.replicas is the HPA's. */
  readonly scaledByHpa: boolean
}

/** Server-owned or set by other controllers: never drift, even when the chart writes them. */
export const BUILTIN_IGNORES: readonly IgnoreRule[] = [
  'status',
  'metadata.managedFields',
  'metadata.resourceVersion',
  'metadata.uid',
  'metadata.generation',
  'metadata.creationTimestamp',
  'metadata.selfLink',
  'metadata.deletionTimestamp',
  'metadata.deletionGracePeriodSeconds',
  'metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]',
  'metadata.annotations[deployment.kubernetes.io/revision]',
].map(parseIgnoreRule)

const REPLICAS = parseIgnoreRule('spec.replicas')
const MAX_VALUE = 200

type Json = Readonly<Record<string, unknown>>

function isMap(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Nothing but nulls, empty maps and empty lists: the server stores no field for it. */
function vacuous(v: unknown): boolean {
  return v === null || v === undefined || (Array.isArray(v) && v.length === 0) || (isMap(v) && Object.values(v).every(vacuous))
}

/** Field changes from `desired` to `live` (both whole objects of the same kind and name). */
export function compareObject(desired: Json, live: Json, options: CompareOptions): FieldChange[] {
  const kind = typeof desired['kind'] === 'string' ? desired['kind'] : ''
  const metadata = desired['metadata']
  const name = isMap(metadata) && typeof metadata['name'] === 'string' ? metadata['name'] : ''
  const secret = kind === 'Secret' && (desired['apiVersion'] === 'v1' || desired['apiVersion'] === undefined)
  const rules = [...BUILTIN_IGNORES, ...(options.scaledByHpa ? [REPLICAS] : []), ...options.ignore]
  const changes: FieldChange[] = []
  const scope: Scope = {
    ignored: (path) => rules.some((r) => ruleMatches(r, kind, name, path)),
    redacted: (path) => secret && (path[0]?.key === 'data' || path[0]?.key === 'stringData'),
    push: (path, d, l) => changes.push({ path: formatPath(path), desired: d, live: l }),
  }
  walk(secret ? secretAsData(desired) : desired, live, [], scope)
  return changes
}

interface Scope {
  ignored(path: FieldPath): boolean
  redacted(path: FieldPath): boolean
  push(path: FieldPath, desired: string, live: string): void
}

function walk(desired: unknown, live: unknown, path: FieldPath, scope: Scope): void {
  if (path.length > 0 && scope.ignored(path)) return
  if (desired === null || desired === undefined) return
  const change = (): void => {
    const hide = scope.redacted(path)
    scope.push(path, hide ? REDACTED : show(desired), live === undefined || live === null ? ABSENT : hide ? REDACTED : show(live))
  }
  if (live === undefined || live === null) return vacuous(desired) ? undefined : change()
  if (isMap(desired)) {
    if (!isMap(live)) return change()
    for (const key of Object.keys(desired)) walk(desired[key], live[key], [...path, { key }], scope)
    return
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) return change()
    if (desired.length > 0 && desired.every(named)) {
      desired.forEach((item, index) => {
        const id = String(item['name'])
        walk(
          item,
          live.find((l) => named(l) && String(l['name']) === id),
          [...path, { key: `name=${id}`, item: true, index }],
          scope,
        )
      })
      return
    }
    if (desired.length !== live.length) return change()
    desired.forEach((item, i) => walk(item, live[i], [...path, { key: String(i), item: true }], scope))
    return
  }
  if (!sameScalar(desired, live, path)) change()
}

function named(v: unknown): v is Json {
  return isMap(v) && (typeof v['name'] === 'string' || typeof v['name'] === 'number')
}

/** The API turns stringData into base64 data: compare that. */
function secretAsData(desired: Json): Json {
  const stringData = desired['stringData']
  if (!isMap(stringData)) return desired
  const data = isMap(desired['data']) ? { ...desired['data'] } : {}
  for (const [k, v] of Object.entries(stringData)) data[k] = Buffer.from(typeof v === 'string' ? v : String(v)).toString('base64')
  const { stringData: _dropped, ...rest } = desired
  return { ...rest, data }
}

// Keys whose values are resource.Quantity in the core API.
const QUANTITY_PARENTS = new Set(['limits', 'requests', 'hard', 'capacity', 'allocatable', 'overhead'])
const QUANTITY_KEYS = new Set(['storage', 'sizeLimit'])

function sameScalar(desired: unknown, live: unknown, path: FieldPath): boolean {
  if (desired === live) return true
  const d = scalarText(desired)
  const l = scalarText(live)
  if (d === undefined || l === undefined) return false
  if (d === l && (typeof desired === 'number' || typeof live === 'number')) return true
  const key = path[path.length - 1]?.key ?? ''
  const parent = path[path.length - 2]?.key ?? ''
  if (QUANTITY_PARENTS.has(parent) || QUANTITY_KEYS.has(key)) {
    const a = quantity(d)
    const b = quantity(l)
    if (a !== undefined && b !== undefined) return a === b || Math.abs(a - b) <= Math.abs(a) * 1e-12
  }
  if (typeof desired === 'number' || typeof live === 'number') {
    const a = Number(d)
    const b = Number(l)
    return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(d) && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(l) && a === b
  }
  return false
}

function scalarText(v: unknown): string | undefined {
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  return undefined
}

const SUFFIX: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
}

/** A Kubernetes resource.Quantity as a number, or undefined when the text is not one. */
/** Longer text is no quantity (Kubernetes' own are far shorter): the regex then never sees a 1 MiB value. */
const MAX_QUANTITY = 64

export function quantity(text: string): number | undefined {
  const trimmed = text.trim()
  if (trimmed.length > MAX_QUANTITY) return undefined
  // One way to match each digit (`\d+(?:\.\d*)?`, not `\d+\.?\d*`): linear, no backtracking blow-up.
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(trimmed)
  if (m === null) return undefined
  const [, mantissa = '', exponent, suffix = ''] = m
  const base = Number(mantissa)
  if (exponent !== undefined) return base * 10 ** Number(exponent.slice(1))
  const factor = SUFFIX[suffix]
  return factor === undefined ? undefined : base * factor
}

function show(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value)
  return json.length > MAX_VALUE ? `${json.slice(0, MAX_VALUE - 1)}…` : json
}
