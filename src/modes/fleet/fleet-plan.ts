// The fleet's plan: one commit planned once for every cluster, what the matrix and the CLI's
// rollout execute, and its file form (JSON, versioned) that later jobs read instead of
// planning again. Pure: no git, no cluster, no file system.

import { ConfigurationError } from '../../lib/errors.ts'
import type {
  PlainDigest,
  FieldValue,
  FileProblem,
  KeyChange,
  KeyEdit,
  Origin,
  Plan,
  PlannedRead,
  PlannedRelease,
  PlannedSource,
  PlannedTarget,
  SourceId,
  SpecChange,
  ChartChange,
} from '../../core/model.ts'
import type { PlanOptions } from '../../core/plan.ts'
import type { Range } from '../../git/range.ts'
import type { ClusterTarget } from './clusters.ts'

// 2: rendered parts (where each key was edited, renamed generated sources, releases whose spec changed).
// 3: releases whose chart source (an OCIRepository or HelmChart) changed.
export const PLAN_FILE_VERSION = 4
const PLAN_FILE_KIND = 'helmrelease-trigger/fleet-plan'

export interface ClusterPlan extends ClusterTarget {
  /** The globs of the cluster's tree (what `apply: true` reads for a part planned file by file). */
  readonly paths: readonly string[]
  readonly plan: Plan
  /** Planned on the cluster's root rendered as Flux applies it; absent: file by file over its tree. */
  readonly rendered?: boolean
  /**
   * Rendered parts: the HelmReleases (`namespace/name`) the rendered commit holds. They were
   * planned with the read-key rule, so discovery in the cluster adds only other releases.
   */
  readonly renderedReleases?: readonly string[]
}

export interface FleetPlan {
  readonly range: Range
  readonly options: PlanOptions
  /** How many waves (1 without waves). */
  readonly waves: number
  readonly clusters: readonly ClusterPlan[]
}

/** A cluster has work when its part triggers at least one release. */
export function hasWork(cluster: ClusterPlan): boolean {
  return cluster.plan.releases.length > 0
}

/** One entry of the matrix: what a matrix job needs to run its cluster's part. */
export interface MatrixEntry {
  readonly cluster: string
  /** Name of the repository secret with its kubeconfig (`secrets[matrix.secret]`). */
  readonly secret: string
  readonly wave: number
  readonly releases: number
}

/** For `strategy.matrix: ${{ fromJSON(…) }}`: only the clusters with work (of one wave, when given). */
export function matrixOf(plan: FleetPlan, wave?: number): { readonly include: readonly MatrixEntry[] } {
  return {
    include: plan.clusters
      .filter((c) => hasWork(c) && (wave === undefined || c.wave === wave))
      .map((c) => ({ cluster: c.name, secret: c.secret, wave: c.wave, releases: c.plan.releases.length })),
  }
}

/** Per cluster, the releases the commit changes there: `{ "prod-eu": ["apps/web", …] }`. */
export function releasesByCluster(plan: FleetPlan): Record<string, string[]> {
  return Object.fromEntries(plan.clusters.map((c) => [c.name, c.plan.releases.map((r) => `${r.namespace}/${r.name}`)]))
}

/** The part of the plan one cluster executes. */
export function clusterPart(plan: FleetPlan, name: string): ClusterPlan {
  const part = plan.clusters.find((c) => c.name === name)
  if (part === undefined) {
    const known = plan.clusters.map((c) => c.name).join(', ') || 'none'
    throw new ConfigurationError(`The plan file has no cluster '${name}' (it has: ${known}); pass one of those to --cluster.`)
  }
  return part
}

// ---- the file ---------------------------------------------------------------------------

export function writePlanFile(plan: FleetPlan): string {
  const { range, options } = plan
  return `${JSON.stringify(
    {
      kind: PLAN_FILE_KIND,
      version: PLAN_FILE_VERSION,
      range: { base: range.base ?? null, head: range.head, fullSync: range.fullSync, notes: range.notes },
      options,
      waves: plan.waves,
      clusters: plan.clusters.map(withoutSecretDigests),
    },
    null,
    1,
  )}\n`
}

/**
 * A plan file is an artifact many can read: a Secret's digest is never in it (an unkeyed one
 * lets a reader test guesses of its value). The cluster's part waits for such a Secret like an
 * encrypted one and records its keyed digest from the live object.
 */
function withoutSecretDigests(cluster: ClusterPlan): ClusterPlan {
  const sources = cluster.plan.sources.map((s) => {
    if (s.kind !== 'Secret') return s
    const { digest: _digest, previousDigest: _previous, ...rest } = s
    return rest
  })
  const releases = cluster.plan.releases.map((r) => ({
    ...r,
    sources: r.sources.map((read) => {
      if (!read.id.startsWith('Secret/')) return read
      const { digest: _digest, legacyDigest: _legacy, ...rest } = read
      return rest
    }),
  }))
  return { ...cluster, plan: { ...cluster.plan, sources, releases } }
}

/** Reads a plan file back; anything malformed is one sentence naming the file and the field. */
export function readPlanFile(text: string, file: string): FleetPlan {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new ConfigurationError(`${file} is not JSON: pass the file the plan step wrote (plan --plan FILE, or the action's plan-file).`)
  }
  const at = (field: string) => new Reader(file, field)
  const root = at('').record(json)
  if (root['kind'] !== PLAN_FILE_KIND) throw new ConfigurationError(`${file} is not a helmrelease-trigger fleet plan (kind is not ${PLAN_FILE_KIND}).`)
  if (root['version'] !== PLAN_FILE_VERSION) {
    throw new ConfigurationError(
      `${file} is plan file version ${String(root['version'])}; this helmrelease-trigger reads version ${PLAN_FILE_VERSION}: plan and trigger with the same release.`,
    )
  }
  const range = at('range').record(root['range'])
  const options = at('options').record(root['options'])
  return {
    range: {
      ...(range['base'] === null ? {} : { base: at('range.base').sha(range['base']) }),
      head: at('range.head').sha(range['head']),
      fullSync: at('range.fullSync').bool(range['fullSync']),
      notes: at('range.notes').strings(range['notes']),
    },
    options: {
      prefix: at('options.prefix').string(options['prefix']),
      defaultNamespace: at('options.defaultNamespace').string(options['defaultNamespace']),
      semanticDigest: at('options.semanticDigest').bool(options['semanticDigest']),
      discover: at('options.discover').bool(options['discover']),
      paths: at('options.paths').strings(options['paths']),
      crossNamespaceTargets: at('options.crossNamespaceTargets').strings(options['crossNamespaceTargets']),
    },
    waves: at('waves').count(root['waves']),
    clusters: at('clusters')
      .list(root['clusters'])
      .map((c, i) => readCluster(c, new Reader(file, `clusters[${i}]`))),
  }
}

function readCluster(value: unknown, r: Reader): ClusterPlan {
  const c = r.record(value)
  const plan = r.in('plan').record(c['plan'])
  return {
    name: r.in('name').string(c['name']),
    root: r.in('root').string(c['root']),
    secret: r.in('secret').string(c['secret']),
    wave: r.in('wave').count(c['wave']),
    paths: r.in('paths').strings(c['paths']),
    ...(c['rendered'] === undefined ? {} : { rendered: r.in('rendered').bool(c['rendered']) }),
    ...(c['renderedReleases'] === undefined ? {} : { renderedReleases: r.in('renderedReleases').strings(c['renderedReleases']) }),
    plan: {
      sources: r
        .in('plan.sources')
        .list(plan['sources'])
        .map((s, i) => readSource(s, r.in(`plan.sources[${i}]`))),
      releases: r
        .in('plan.releases')
        .list(plan['releases'])
        .map((s, i) => readRelease(s, r.in(`plan.releases[${i}]`))),
      problems: r
        .in('plan.problems')
        .list(plan['problems'])
        .map((p, i) => readProblem(p, r.in(`plan.problems[${i}]`))),
      ...(plan['notes'] === undefined ? {} : { notes: r.in('plan.notes').strings(plan['notes']) }),
    },
  }
}

function readOrigin(value: unknown, r: Reader): Origin {
  const o = r.record(value)
  return { file: r.in('file').string(o['file']), line: r.in('line').count(o['line']) }
}

function readSource(value: unknown, r: Reader): PlannedSource {
  const s = r.record(value)
  const kind = r.in('kind').kind(s['kind'])
  const change = s['change']
  if (change !== 'added' && change !== 'modified' && change !== 'deleted') throw r.in('change').bad('added, modified or deleted')
  return {
    kind,
    namespace: r.in('namespace').string(s['namespace']),
    name: r.in('name').string(s['name']),
    id: r.in('id').sourceId(s['id']),
    change,
    ...(s['digest'] === undefined ? {} : { digest: r.in('digest').digest(s['digest']) }),
    ...(s['previousDigest'] === undefined ? {} : { previousDigest: r.in('previousDigest').digest(s['previousDigest']) }),
    encrypted: r.in('encrypted').bool(s['encrypted']),
    origin: readOrigin(s['origin'], r.in('origin')),
    targets: r
      .in('targets')
      .list(s['targets'])
      .map((t, i): PlannedTarget => {
        const tr = r.in(`targets[${i}]`)
        const target = tr.record(t)
        const reasons = tr.in('reasons').strings(target['reasons'])
        return {
          namespace: tr.in('namespace').string(target['namespace']),
          name: tr.in('name').string(target['name']),
          reasons: reasons.map((reason) => {
            if (reason !== 'annotation' && reason !== 'valuesFrom') throw tr.in('reasons').bad('annotation or valuesFrom')
            return reason
          }),
        }
      }),
    ...(s['keyChanges'] === undefined
      ? {}
      : {
          keyChanges: r
            .in('keyChanges')
            .list(s['keyChanges'])
            .map((k, i) => readKeyChange(k, r.in(`keyChanges[${i}]`))),
        }),
    ...(s['edits'] === undefined
      ? {}
      : {
          edits: r
            .in('edits')
            .list(s['edits'])
            .map((e, i): KeyEdit => {
              const er = r.in(`edits[${i}]`)
              return { key: er.in('key').string(er.record(e)['key']), ...readOrigin(e, er) }
            }),
        }),
    ...(s['renamedFrom'] === undefined ? {} : { renamedFrom: r.in('renamedFrom').sourceId(s['renamedFrom']) }),
  }
}

function readKeyChange(value: unknown, r: Reader): KeyChange {
  const k = r.record(value)
  const change = k['change']
  if (change !== 'added' && change !== 'removed' && change !== 'modified') throw r.in('change').bad('added, removed or modified')
  const optional = (field: 'path' | 'before' | 'after') => (k[field] === undefined ? {} : { [field]: r.in(field).string(k[field]) })
  return { key: r.in('key').string(k['key']), change, ...optional('path'), ...optional('before'), ...optional('after') }
}

function readRelease(value: unknown, r: Reader): PlannedRelease {
  const p = r.record(value)
  return {
    namespace: r.in('namespace').string(p['namespace']),
    name: r.in('name').string(p['name']),
    sources: r
      .in('sources')
      .list(p['sources'])
      .map((s, i): PlannedRead => {
        const sr = r.in(`sources[${i}]`)
        const source = sr.record(s)
        return {
          id: sr.in('id').sourceId(source['id']),
          // A Secret's digest is never in the file (keyed once the cluster's part holds the key).
          ...(source['digest'] === undefined ? {} : { digest: sr.in('digest').digest(source['digest']) }),
          encrypted: sr.in('encrypted').bool(source['encrypted']),
          ...(source['origin'] === undefined ? {} : { origin: readOrigin(source['origin'], sr.in('origin')) }),
        }
      }),
    ...(p['spec'] === undefined ? {} : { spec: readSpec(p['spec'], r.in('spec')) }),
    ...(p['chart'] === undefined ? {} : { chart: readChart(p['chart'], r.in('chart')) }),
  }
}

/** A release whose rendered spec changed: what the cluster part waits for (never patched for it alone). */
function readSpec(value: unknown, r: Reader): SpecChange {
  const s = r.record(value)
  const change = s['change']
  if (change !== 'added' && change !== 'modified') throw r.in('change').bad('added or modified')
  return { change, origin: readOrigin(s['origin'], r.in('origin')), fields: r.in('fields').strings(s['fields']), expect: readExpect(s['expect'], r) }
}

/** A release whose chart source changed: the OCIRepository or HelmChart and what its live spec must hold. */
function readChart(value: unknown, r: Reader): ChartChange {
  const c = r.record(value)
  if (c['kind'] !== 'OCIRepository' && c['kind'] !== 'HelmChart') throw r.in('kind').bad('OCIRepository or HelmChart')
  return {
    kind: c['kind'],
    namespace: r.in('namespace').string(c['namespace']),
    name: r.in('name').string(c['name']),
    origin: readOrigin(c['origin'], r.in('origin')),
    fields: r.in('fields').strings(c['fields']),
    expect: readExpect(c['expect'], r),
  }
}

/** `expect` of a spec or chart change (`r` reads the change). */
function readExpect(value: unknown, r: Reader): FieldValue[] {
  return r
    .in('expect')
    .list(value)
    .map((e, i): FieldValue => {
      const er = r.in(`expect[${i}]`)
      const entry = er.record(e)
      // A removed field is written without `value` (JSON has no undefined).
      return { path: er.in('path').strings(entry['path']), value: entry['value'] }
    })
}

function readProblem(value: unknown, r: Reader): FileProblem {
  const p = r.record(value)
  const severity = p['severity']
  if (severity !== 'error' && severity !== 'warning' && severity !== 'notice') throw r.in('severity').bad('error, warning or notice')
  return {
    severity,
    file: r.in('file').string(p['file']),
    ...(p['line'] === undefined ? {} : { line: r.in('line').count(p['line']) }),
    message: r.in('message').string(p['message']),
  }
}

/** Reads one field of the file; a wrong value is a ConfigurationError naming the file and field. */
class Reader {
  private readonly file: string
  private readonly field: string

  constructor(file: string, field: string) {
    this.file = file
    this.field = field
  }

  in(field: string): Reader {
    return new Reader(this.file, this.field === '' ? field : `${this.field}.${field}`)
  }

  bad(expected: string): ConfigurationError {
    return new ConfigurationError(`${this.file}: ${this.field || 'the file'} must be ${expected}; the plan file is damaged, plan again.`)
  }

  record(value: unknown): Record<string, unknown> {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.bad('an object')
    return { ...value }
  }

  list(value: unknown): unknown[] {
    if (!Array.isArray(value)) throw this.bad('a list')
    return value
  }

  string(value: unknown): string {
    if (typeof value !== 'string') throw this.bad('a string')
    return value
  }

  strings(value: unknown): string[] {
    return this.list(value).map((v) => this.string(v))
  }

  bool(value: unknown): boolean {
    if (typeof value !== 'boolean') throw this.bad('true or false')
    return value
  }

  count(value: unknown): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw this.bad('a whole number from 1')
    return value
  }

  sha(value: unknown): string {
    if (typeof value !== 'string' || !/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(value)) throw this.bad('a full commit SHA')
    return value
  }

  digest(value: unknown): PlainDigest {
    if (typeof value !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(value)) throw this.bad('a digest sha256:<64 hex>')
    return `sha256:${value.slice(7)}`
  }

  kind(value: unknown): 'ConfigMap' | 'Secret' {
    if (value !== 'ConfigMap' && value !== 'Secret') throw this.bad('ConfigMap or Secret')
    return value
  }

  sourceId(value: unknown): SourceId {
    const text = this.string(value)
    const [kind, namespace, name, ...rest] = text.split('/')
    if ((kind !== 'ConfigMap' && kind !== 'Secret') || !namespace || !name || rest.length > 0) throw this.bad('Kind/namespace/name')
    return `${kind}/${namespace}/${name}`
  }
}
