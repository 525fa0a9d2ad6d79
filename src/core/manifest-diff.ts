// What an upgrade changes in Kubernetes: two renders of one release (two revisions in Helm's
// storage) compared object by object and, inside each object, path by path. List entries are
// matched by name (containers, env, ports, volumes), multi-line strings line by line, chart-label
// churn folded into one count, and no Secret value ever shown (its keys only). Pure.

import { parseAllDocuments } from 'yaml'

export type Change = 'added' | 'removed' | 'changed'

export interface PathChange {
  /** `spec.template.spec.containers[name=web].image` */
  readonly path: string
  readonly change: Change
  /** Shown values, shortened; absent for a Secret's data (never shown) and for a side that has none. */
  readonly before?: string
  readonly after?: string
  /** A multi-line string's changed lines, `- old` / `+ new`. */
  readonly lines?: readonly string[]
}

export interface ObjectChange {
  /** `Deployment web/api` (`Kind namespace/name`; cluster-scoped: `Kind name`). */
  readonly object: string
  readonly kind: string
  readonly change: Change
  /** Path changes of a changed object; an added or removed one has none. */
  readonly paths: readonly PathChange[]
}

export interface ManifestDiff {
  readonly objects: readonly ObjectChange[]
  /** Label changes that only follow the chart's version (helm.sh/chart, app.kubernetes.io/version), counted, not listed. */
  readonly folded: number
}

/** Values shown at most this long; the rest is cut with an ellipsis. */
const SHOWN = 120
/** A multi-line string past this many lines on a side is compared whole, not line by line. */
const MAX_LINES = 400
/** Labels every chart bump rewrites. */
const CHART_LABELS = new Set(['helm.sh/chart', 'app.kubernetes.io/version'])

type Json = Readonly<Record<string, unknown>>

/** Built-in kinds that live in no namespace: a chart's object of one of these never takes the release's. */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'CSIDriver',
  'PriorityClass',
  'RuntimeClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'APIService',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'IngressClass',
])

/**
 * Two manifests (YAML documents, as Helm stores them) compared; `namespace` is the release's, for
 * objects that name none. `hidden`: paths only, no value (a chart can write any value it was given,
 * one read from a Secret too, into any object).
 */
export function diffManifests(before: string, after: string, namespace: string, hidden = false): ManifestDiff {
  const a = objectsOf(before, namespace)
  const b = objectsOf(after, namespace)
  const objects: ObjectChange[] = []
  let folded = 0
  for (const id of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const was = a.get(id)
    const is = b.get(id)
    const kind = typeof (is ?? was)?.['kind'] === 'string' ? String((is ?? was)?.['kind']) : ''
    if (was === undefined) objects.push({ object: id, kind, change: 'added', paths: [] })
    else if (is === undefined) objects.push({ object: id, kind, change: 'removed', paths: [] })
    else {
      const paths: PathChange[] = []
      compare(was, is, '', paths, hidden)
      const shown = paths.filter((p) => !isChartLabel(p.path))
      folded += paths.length - shown.length
      if (shown.length > 0) objects.push({ object: id, kind, change: 'changed', paths: shown })
    }
  }
  return { objects, folded }
}

/** Two values documents (a release's merged values) compared; `hidden` shows paths only (values read from a Secret). */
export function diffValues(before: Json, after: Json, hidden: boolean): PathChange[] {
  const paths: PathChange[] = []
  compare(before, after, '', paths, hidden)
  return paths
}

function objectsOf(manifest: string, namespace: string): Map<string, Json> {
  const out = new Map<string, Json>()
  let docs: ReturnType<typeof parseAllDocuments>
  try {
    docs = parseAllDocuments(manifest, { uniqueKeys: false })
  } catch {
    return out
  }
  for (const doc of docs) {
    if (!('contents' in doc) || doc.errors.length > 0) continue
    const value: unknown = doc.toJS({ maxAliasCount: 100 })
    if (!isRecord(value) || typeof value['kind'] !== 'string') continue
    const metadata = isRecord(value['metadata']) ? value['metadata'] : {}
    const name = typeof metadata['name'] === 'string' ? metadata['name'] : ''
    const ns = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : CLUSTER_SCOPED.has(value['kind']) ? '' : namespace
    out.set(`${value['kind']} ${ns === '' ? '' : `${ns}/`}${name}`, value)
  }
  return out
}

function compare(a: unknown, b: unknown, path: string, out: PathChange[], hidden: boolean): void {
  if (same(a, b)) return
  if (a === undefined) return void out.push(leaf(path, 'added', undefined, b, hidden))
  if (b === undefined) return void out.push(leaf(path, 'removed', a, undefined, hidden))
  if (isRecord(a) && isRecord(b)) {
    const secretData = !hidden && (a['kind'] === 'Secret' || b['kind'] === 'Secret')
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const hide = hidden || (secretData && (key === 'data' || key === 'stringData'))
      compare(a[key], b[key], join(path, key), out, hide)
    }
    return
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const names = (list: unknown[]): string[] | undefined => {
      const found = list.map((e) => (isRecord(e) && typeof e['name'] === 'string' ? e['name'] : undefined))
      return found.every((n): n is string => n !== undefined) && new Set(found).size === found.length ? found : undefined
    }
    const na = names(a)
    const nb = names(b)
    if (na !== undefined && nb !== undefined) {
      const byName = (list: unknown[], n: string[]): Map<string, unknown> => new Map(n.map((name, i) => [name, list[i]]))
      const ma = byName(a, na)
      const mb = byName(b, nb)
      for (const name of [...new Set([...na, ...nb])]) compare(ma.get(name), mb.get(name), `${path}[name=${name}]`, out, hidden)
      return
    }
    for (let i = 0; i < Math.max(a.length, b.length); i++) compare(a[i], b[i], `${path}[${i}]`, out, hidden)
    return
  }
  out.push(leaf(path, 'changed', a, b, hidden))
}

function leaf(path: string, change: Change, before: unknown, after: unknown, hidden: boolean): PathChange {
  if (hidden) return { path, change }
  if (typeof before === 'string' && typeof after === 'string' && (before.includes('\n') || after.includes('\n'))) {
    const lines = lineChanges(before, after)
    if (lines !== undefined) return { path, change, lines }
  }
  return {
    path,
    change,
    ...(before === undefined ? {} : { before: shown(before) }),
    ...(after === undefined ? {} : { after: shown(after) }),
  }
}

/** The lines of `after` not in `before` and the reverse, in order (a longest common subsequence). */
function lineChanges(before: string, after: string): string[] | undefined {
  const a = before.split('\n')
  const b = after.split('\n')
  if (a.length > MAX_LINES || b.length > MAX_LINES) return undefined
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
  const out: string[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++
      j++
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! > lcs[i + 1]![j]!)) out.push(`+ ${shownLine(b[j++]!)}`)
    else out.push(`- ${shownLine(a[i++]!)}`)
  }
  return out
}

function isChartLabel(path: string): boolean {
  return [...CHART_LABELS].some((label) => path.endsWith(`labels[${JSON.stringify(label)}]`))
}

/** `spec.replicas`; a key that is not a plain word in brackets: `labels["helm.sh/chart"]`. */
function join(path: string, key: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return path === '' ? key : `${path}.${key}`
  return `${path}[${JSON.stringify(key)}]`
}

function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  return text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text
}

function shownLine(line: string): string {
  return line.length > SHOWN ? `${line.slice(0, SHOWN)}…` : line
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  return JSON.stringify(a) === JSON.stringify(b)
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet'])
const RBAC = new Set(['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding', 'ServiceAccount'])
/** Fields Kubernetes refuses to change in place: the upgrade fails unless the object is replaced. */
const IMMUTABLE = [/^spec\.selector(\.|\[|$)/, /^spec\.clusterIP$/, /^spec\.volumeClaimTemplates/, /^spec\.serviceName$/]

/** One line per kind of risk, the riskiest first: what a reviewer looks at before the details. */
export function headlineOf(diff: ManifestDiff): string[] {
  const out: string[] = []
  const removed = diff.objects.filter((o) => o.change === 'removed')
  if (removed.length > 0) out.push(`deletes ${list(removed.map((o) => o.object))}`)
  const immutable = diff.objects.flatMap((o) => o.paths.filter((p) => IMMUTABLE.some((re) => re.test(p.path))).map((p) => `${o.object} ${p.path}`))
  if (immutable.length > 0) out.push(`changes immutable fields: ${list(immutable)}`)
  const images = diff.objects.flatMap((o) =>
    o.paths.filter((p) => /containers\[name=[^\]]*\]\.image$/.test(p.path)).map((p) => `${containerOf(p.path)} ${fromTo(p)}`),
  )
  if (images.length > 0) out.push(`images: ${list(images)}`)
  const replicas = diff.objects.flatMap((o) => o.paths.filter((p) => p.path === 'spec.replicas').map((p) => `${o.object} ${fromTo(p)}`))
  if (replicas.length > 0) out.push(`replicas: ${list(replicas)}`)
  const rolls = diff.objects.filter((o) => WORKLOADS.has(o.kind) && o.paths.some((p) => p.path.startsWith('spec.template.')))
  if (rolls.length > 0) out.push(`rolls out ${list(rolls.map((o) => o.object))}`)
  const rbac = diff.objects.filter((o) => RBAC.has(o.kind))
  if (rbac.length > 0) out.push(`RBAC: ${list(rbac.map((o) => `${o.object} ${o.change}`))}`)
  const added = diff.objects.filter((o) => o.change === 'added')
  if (added.length > 0) out.push(`adds ${list(added.map((o) => o.object))}`)
  // An object whose every changed path a line above already names (its replicas, an immutable field) is not named again.
  const named = (o: ObjectChange): boolean => o.paths.every((p) => p.path === 'spec.replicas' || IMMUTABLE.some((re) => re.test(p.path)))
  const other = diff.objects.filter((o) => o.change === 'changed' && !rolls.includes(o) && !RBAC.has(o.kind) && !named(o))
  if (other.length > 0) out.push(`changes ${list(other.map((o) => o.object))}`)
  return out
}

/** `a → b`, or the change alone when the values are hidden. */
function fromTo(p: PathChange): string {
  return p.before === undefined && p.after === undefined ? p.change : `${p.before ?? '—'} → ${p.after ?? '—'}`
}

function containerOf(path: string): string {
  return /containers\[name=([^\]]*)\]/.exec(path)?.[1] ?? path
}

/** At most three named, the rest counted. */
function list(items: readonly string[]): string {
  return items.length <= 3 ? items.join(', ') : `${items.slice(0, 3).join(', ')} and ${items.length - 3} more`
}
