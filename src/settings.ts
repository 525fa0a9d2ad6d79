// The one place inputs are read and validated. The action passes core.getInput, the CLI
// passes its flags under the same names; both get the same typed, readonly Settings.

import { homedir } from 'node:os'
import { join } from 'node:path'
import { parseDuration } from './lib/duration.ts'
import { ConfigurationError } from './lib/errors.ts'
import { isDnsLabel, isDnsSubdomain } from './core/keys.ts'
import { parseIgnoreRule, type IgnoreRule } from './core/field-path.ts'
import { KUBECONFIG_ENCODINGS, type KubeconfigEncoding } from './kube/kubeconfig.ts'
import { isClusterName, parseClusterList, type ClusterList } from './core/cluster-list.ts'

export const MODES = ['trigger', 'watch', 'discover', 'recover', 'drift', 'plan', 'fleet', 'fleet-summary'] as const
export type Mode = (typeof MODES)[number]

export const FAIL_ON = ['error', 'warning', 'never'] as const
export type FailOn = (typeof FAIL_ON)[number]

export const DRIFT_ACTIONS = ['report', 'fail', 'correct'] as const
export type DriftAction = (typeof DRIFT_ACTIONS)[number]

// The kubeconfig adapter owns its encodings; the settings read them as an input.
export { KUBECONFIG_ENCODINGS, type KubeconfigEncoding }

/** What the GitHub report writes: the check run (a commit status where checks cannot be written) and the pull-request comment. */
export const GITHUB_REPORTS = ['check', 'comment'] as const
export type GitHubReportPart = (typeof GITHUB_REPORTS)[number]

export const LOG_FORMATS = ['text', 'json'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/** Where the watch mode serves /healthz, /readyz and /metrics. */
export interface ListenAddress {
  /** '' listens on every interface. */
  readonly host: string
  /** 0 picks a free port (it is logged). */
  readonly port: number
}

export interface Settings {
  /** What to run. */
  readonly mode: Mode
  /** Kubeconfig content from the input (plain or base64); undefined → $KUBECONFIG, ~/.kube/config, in-cluster. */
  readonly kubeconfig: string | undefined
  /** How `kubeconfig` is encoded; auto tells YAML from base64. */
  readonly kubeconfigEncoding: KubeconfigEncoding
  /** Kubeconfig context to use instead of its current-context. */
  readonly context: string | undefined
  /** Commit to diff from (overrides the event's). */
  readonly base: string | undefined
  /** Commit to diff to (overrides the event's). */
  readonly head: string | undefined
  /** Trigger from every labelled source at head instead of a diff. */
  readonly fullSync: boolean
  /** Globs of manifest files to read, relative to the repository root. */
  readonly paths: readonly string[]
  /** Prefix of our labels and annotations (drop-in with the operator's `nebius.ai`). */
  readonly annotationPrefix: string
  /** Namespace of annotated targets when `<prefix>/helmreleases-namespace` is absent. */
  readonly defaultNamespace: string
  /** `source=target` namespace pairs (`*` for any) a source may target besides its own namespace (core/namespace-rule.ts). */
  readonly crossNamespaceTargets: readonly string[]
  /** Also send reconcile.fluxcd.io/forceAt (one-off helm upgrade even without changes). */
  readonly force: boolean
  /** Also send reconcile.fluxcd.io/resetAt (reset the retry counter). */
  readonly reset: boolean
  /** Trigger releases whose spec.valuesFrom names a changed source, labelled or not. */
  readonly discover: boolean
  /** Wait until the cluster holds the planned content of each source before patching. */
  readonly waitForApply: boolean
  /** Server-side apply the changed sources ourselves first (no kustomize-controller). */
  readonly apply: boolean
  /** Wait for helm-controller's outcome after patching. */
  readonly wait: boolean
  /** Plan-only runs: render each planned release at base and head (Helm's engine, sandboxed) and show the Kubernetes diff. */
  readonly diff: boolean
  /** Where fetched chart archives are kept between runs (keep it with actions/cache). */
  readonly chartCache: string
  /** The Kubernetes version chart templates see in the diff (Capabilities.KubeVersion); undefined: Helm's default. */
  readonly kubeVersion: string | undefined
  /** Bound of each wait (apply, outcome, an outage of an apiserver that answered earlier in the run), in milliseconds. */
  readonly timeoutMs: number
  /** Concurrent API calls at most. */
  readonly maxConcurrency: number
  /** Plan and send every write as a server-side dry run. */
  readonly dryRun: boolean
  /** Write to the cluster on pull_request events too (otherwise plan only). */
  readonly allowPullRequests: boolean
  /** Which findings make the run fail. */
  readonly failOn: FailOn
  /** Canonicalise YAML/JSON values before digesting (comment-only edits trigger nothing). */
  readonly semanticDigest: boolean
  /** Namespace of the Secret holding the key of Secret digests (created on first use). */
  readonly digestKeyNamespace: string
  /** discover/recover: namespaces to scan; empty means every namespace. */
  readonly namespaces: readonly string[]
  /** discover: lint the repository's manifests at head alone, no cluster (a pull-request check). */
  readonly fromGit: boolean
  /** Path Flux syncs for this cluster (`clusters/production`): Flux Kustomizations are followed from there; undefined: every one found. */
  readonly clusterRoot: string | undefined
  /** `<namespace>/<name>` of the GitRepository that fetches this repository, when its URL does not say. */
  readonly gitRepository: string | undefined
  /** One sentence per deprecated input that was set: what replaces it. The entries print them as warnings. */
  readonly deprecations: readonly string[]
  /** recover: a Ready=False message matching any of these is transient (one pattern per line, case-insensitive, multiline). */
  readonly recoverPatterns: readonly RegExp[]
  /** recover: attempts per release until it is Ready again. */
  readonly recoverMaxAttempts: number
  /** recover: wait after the first attempt, doubled after each further one, in milliseconds. */
  readonly recoverBackoffMs: number
  /** drift: report only, fail when anything drifted, or force an upgrade of each drifted release and check again. */
  readonly driftAction: DriftAction
  /** drift: fields never reported, as [Kind/name/]path rules (see src/core/field-path.ts). */
  readonly driftIgnore: readonly IgnoreRule[]
  /** drift: label selector of the HelmReleases to check; undefined checks all (in `namespaces`). */
  readonly selector: string | undefined
  /** watch: wait this long after a source changes for more changes before patching its releases (0: at once). */
  readonly debounceMs: number
  /** watch: stop (exit 0) after this long; undefined runs until SIGTERM/SIGINT. */
  readonly watchDurationMs: number | undefined
  /** watch: serve /healthz, /readyz and /metrics here; undefined serves nothing. */
  readonly metricsAddress: ListenAddress | undefined
  /** watch: plain lines, or one JSON object per line. */
  readonly logFormat: LogFormat
  /** watch: patch only while holding a coordination.k8s.io Lease (for more than one replica). */
  readonly leaderElection: boolean
  /** watch: namespace of the leader-election Lease. */
  readonly leaderElectionNamespace: string
  /** watch: name of the leader-election Lease. */
  readonly leaderElectionName: string
  /** watch: run recover this often in the same process (while leading); undefined never. */
  readonly recoverIntervalMs: number | undefined
  /** trigger: token for the GitHub report; undefined writes nothing to GitHub. A secret: mask it. */
  readonly githubToken: string | undefined
  /** trigger: the parts of the GitHub report to write (empty: none). */
  readonly githubReport: ReadonlySet<GitHubReportPart>
  /** trigger: name of the check run and context of the commit status; keys the sticky comment. */
  readonly checkName: string
  /** trigger: create a GitHub Deployment per run in this environment; undefined creates none. */
  readonly deploymentEnvironment: string | undefined
  /** Stamp event.toolkit.fluxcd.io/commit (and change_request) on each patched release, for Flux's notification-controller. */
  readonly fluxAttribution: boolean
  /** plan/fleet: the fleet's clusters (name=root lines, or `discover` for clusters/*); undefined plans one cluster. */
  readonly clusters: ClusterList | undefined
  /** trigger: execute only this cluster's part of the plan file. */
  readonly cluster: string | undefined
  /** plan: where to write the fleet plan; trigger/fleet/fleet-summary: the plan file to read (never planned again). */
  readonly planFile: string | undefined
  /** plan/fleet: ordered waves, each a list of cluster-name globs; empty: one wave. */
  readonly waves: readonly (readonly string[])[]
  /** fleet: clusters triggered at once at most. */
  readonly maxParallel: number
  /** fleet: kubeconfig context of each cluster (default: the context named like the cluster). */
  readonly clusterContexts: ReadonlyMap<string, string>
  /** trigger with a plan file: where to write this cluster's result for fleet-summary. */
  readonly resultFile: string | undefined
  /** fleet-summary: directory holding the clusters' result files. */
  readonly resultsDir: string | undefined
}

/** Reads one named input; returns '' when it is not set (like @actions/core's getInput). */
export type InputReader = (name: string) => string

export const DEFAULT_PATHS: readonly string[] = ['**/*.yaml', '**/*.yml']

/** Inputs still accepted but no longer used. */
function deprecations(read: InputReader): string[] {
  const out: string[] = []
  if (read('kustomize-path').trim() !== '')
    out.push(
      "Input 'kustomize-path' is deprecated and ignored: Flux Kustomizations are rendered by Flux's own kustomize code, built into helmrelease-trigger and sandboxed; remove the input.",
    )
  return out
}

export function parseSettings(read: InputReader): Settings {
  const kubeconfig = read('kubeconfig').trim()
  return {
    mode: oneOf(read, 'mode', MODES, 'trigger'),
    kubeconfig: kubeconfig === '' ? undefined : kubeconfig,
    kubeconfigEncoding: oneOf(read, 'kubeconfig-encoding', KUBECONFIG_ENCODINGS, 'auto'),
    context: optional(read, 'context'),
    base: optional(read, 'base'),
    head: optional(read, 'head'),
    fullSync: bool(read, 'full-sync', false),
    paths: lines(read, 'paths', DEFAULT_PATHS),
    annotationPrefix: prefix(read),
    defaultNamespace: namespace(read, 'default-namespace', 'flux-system'),
    crossNamespaceTargets: crossNamespaceTargets(read),
    force: bool(read, 'force', false),
    reset: bool(read, 'reset', false),
    discover: bool(read, 'discover', true),
    waitForApply: bool(read, 'wait-for-apply', true),
    apply: bool(read, 'apply', false),
    wait: bool(read, 'wait', true),
    diff: bool(read, 'diff', true),
    chartCache: read('chart-cache').trim() || join(homedir(), '.cache', 'helmrelease-trigger', 'charts'),
    kubeVersion: kubeVersion(read),
    timeoutMs: duration(read, 'timeout', '5m'),
    maxConcurrency: integer(read, 'max-concurrency', 10, { min: 1, max: 1000 }),
    dryRun: bool(read, 'dry-run', false),
    allowPullRequests: bool(read, 'allow-pull-requests', false),
    failOn: oneOf(read, 'fail-on', FAIL_ON, 'error'),
    semanticDigest: bool(read, 'semantic-digest', true),
    digestKeyNamespace: namespace(read, 'digest-key-namespace', 'flux-system'),
    namespaces: namespaces(read),
    fromGit: bool(read, 'from-git', false),
    clusterRoot: clusterRoot(read),
    gitRepository: gitRepository(read),
    deprecations: deprecations(read),
    recoverPatterns: patterns(read),
    recoverMaxAttempts: integer(read, 'recover-max-attempts', 3, { min: 1, max: 100 }),
    recoverBackoffMs: duration(read, 'recover-backoff', '5m'),
    driftAction: oneOf(read, 'drift-action', DRIFT_ACTIONS, 'report'),
    driftIgnore: driftIgnore(read),
    selector: selector(read),
    debounceMs: duration(read, 'debounce', '2s', { zero: true }),
    watchDurationMs: optionalDuration(read, 'watch-duration'),
    metricsAddress: listenAddress(read, 'metrics-address'),
    logFormat: oneOf(read, 'log-format', LOG_FORMATS, 'text'),
    leaderElection: bool(read, 'leader-election', false),
    leaderElectionNamespace: namespace(read, 'leader-election-namespace', 'flux-system'),
    leaderElectionName: objectName(read, 'leader-election-name', 'helmrelease-trigger-watch'),
    recoverIntervalMs: optionalDuration(read, 'recover-interval'),
    githubToken: optional(read, 'github-token'),
    githubReport: githubReport(read),
    checkName: singleLine(read, 'check-name', 'helmrelease-trigger', 100),
    deploymentEnvironment: optionalSingleLine(read, 'deployment-environment', 255),
    fluxAttribution: bool(read, 'flux-attribution', true),
    clusters: parseClusterList(lines(read, 'clusters', [])),
    cluster: clusterName(read),
    planFile: optional(read, 'plan-file'),
    waves: waves(read),
    maxParallel: integer(read, 'max-parallel', 4, { min: 1, max: 256 }),
    clusterContexts: clusterContexts(read),
    resultFile: optional(read, 'result-file'),
    resultsDir: optional(read, 'results'),
  }
}

function kubeVersion(read: InputReader): string | undefined {
  const v = optional(read, 'kube-version')
  if (v !== undefined && !/^v?\d+\.\d+(\.\d+)?$/.test(v))
    throw new ConfigurationError(`Input 'kube-version' must be a Kubernetes version such as v1.36.0; got '${v}'.`)
  return v
}

function clusterName(read: InputReader): string | undefined {
  const v = optional(read, 'cluster')
  if (v !== undefined && !isClusterName(v)) {
    throw new ConfigurationError(`Input 'cluster' must be a cluster name of the plan (letters, digits, '-', '_' and '.'); got '${v}'.`)
  }
  return v
}

/** One wave per line, its cluster-name globs separated by commas or spaces; '#' lines are comments. */
function waves(read: InputReader): readonly (readonly string[])[] {
  return read('waves')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(/[\s,]+/).filter((g) => g !== ''))
}

/** `name=context` per item. */
function clusterContexts(read: InputReader): ReadonlyMap<string, string> {
  return new Map(
    lines(read, 'cluster-contexts', []).map((item) => {
      const eq = item.indexOf('=')
      const name = item.slice(0, eq).trim()
      const context = item.slice(eq + 1).trim()
      if (eq < 1 || context === '' || !isClusterName(name)) {
        throw new ConfigurationError(`Input 'cluster-contexts' must list cluster=context items, such as prod-eu=gke_acme_europe-west1_prod; got '${item}'.`)
      }
      return [name, context] as const
    }),
  )
}

/**
 * Transient failures worth a retry: timeouts, dropped connections, rate limits and 5xx from a
 * registry or the apiserver. A chart or values mistake matches none of them.
 */
export const DEFAULT_RECOVER_PATTERNS: readonly string[] = [
  'context deadline exceeded',
  'i/o timeout',
  'TLS handshake timeout',
  'connection reset by peer',
  'connection refused',
  'timeout awaiting response headers',
  'unexpected EOF',
  '\\b429\\b|too many requests|rate limit',
  '\\b50[0234]\\b|internal server error|bad gateway|service unavailable|gateway timeout',
  'the server is currently unable to handle the request',
  'etcdserver: (request timed out|leader changed)',
]

function namespaces(read: InputReader): readonly string[] {
  const items = lines(read, 'namespaces', [])
  const bad = items.find((n) => !isDnsLabel(n))
  if (bad !== undefined) {
    throw new ConfigurationError(
      `Input 'namespaces' must list namespace names (lowercase letters, digits and '-'), one per line or comma-separated; got '${bad}'.`,
    )
  }
  return [...new Set(items)].sort()
}

/** `source=target` pairs of namespaces (either side `*`), or `*` alone; one per line or comma-separated. */
function crossNamespaceTargets(read: InputReader): readonly string[] {
  const items = lines(read, 'cross-namespace-targets', [])
  const part = (p: string): boolean => p === '*' || isDnsLabel(p)
  const bad = items.find((item) => item !== '*' && !(item.split('=').length === 2 && item.split('=').every(part)))
  if (bad !== undefined) {
    throw new ConfigurationError(
      `Input 'cross-namespace-targets' takes source=target namespace pairs (either side * for any), or * alone, one per line; got '${bad}'. Example: apps=flux-system.`,
    )
  }
  return [...new Set(items)].sort()
}

/** One regular expression per line (commas belong to the expression); '#' lines are comments. */
function patterns(read: InputReader): readonly RegExp[] {
  const given = read('recover-patterns')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  return (given.length === 0 ? DEFAULT_RECOVER_PATTERNS : given).map((source) => {
    try {
      return new RegExp(source, 'im')
    } catch (error) {
      throw new ConfigurationError(
        `Input 'recover-patterns' has an invalid regular expression '${source}': ${error instanceof Error ? error.message : String(error)}.`,
      )
    }
  })
}

/** One rule per line; '#' lines are comments (commas may appear inside brackets, so no splitting). */
function driftIgnore(read: InputReader): readonly IgnoreRule[] {
  return read('drift-ignore')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map(parseIgnoreRule)
}

/** A Kubernetes label selector; the apiserver validates it fully, this catches what is surely wrong. */
function selector(read: InputReader): string | undefined {
  const v = read('selector').trim()
  if (v === '') return undefined
  if (/[\r\n]/.test(v) || !/^[A-Za-z0-9_./!=,() -]+$/.test(v)) {
    throw new ConfigurationError(`Input 'selector' must be a label selector such as app=web or tier in (backend),!canary; got '${v}'.`)
  }
  return v
}

/** `check, comment` (the default), either one, or none / false. */
function githubReport(read: InputReader): ReadonlySet<GitHubReportPart> {
  const items = lines(read, 'github-report', GITHUB_REPORTS).map((i) => i.toLowerCase())
  if (items.length === 1 && (items[0] === 'none' || items[0] === 'false')) return new Set()
  if (items.length === 1 && items[0] === 'true') return new Set(GITHUB_REPORTS)
  const bad = items.find((i) => !(GITHUB_REPORTS as readonly string[]).includes(i))
  if (bad !== undefined) throw new ConfigurationError(`Input 'github-report' must list check and/or comment, or be none; got '${bad}'.`)
  return new Set(items as GitHubReportPart[])
}

function singleLine(read: InputReader, name: string, fallback: string, max: number): string {
  return optionalSingleLine(read, name, max) ?? fallback
}

function optionalSingleLine(read: InputReader, name: string, max: number): string | undefined {
  const v = read(name).trim()
  if (v === '') return undefined
  if (/[\r\n]/.test(v) || v.length > max)
    throw new ConfigurationError(`Input '${name}' must be one line of at most ${max} characters; got ${v.length} characters.`)
  return v
}

/** A repository-relative directory: `clusters/production`, `./clusters/production/`. */
function clusterRoot(read: InputReader): string | undefined {
  const v = read('cluster-root').trim()
  if (v === '') return undefined
  const path = v.replace(/\\/g, '/').replace(/^\.\//, '').replace(/\/+$/, '')
  if (path.startsWith('/') || path.split('/').includes('..')) {
    throw new ConfigurationError(`Input 'cluster-root' must be a directory inside the repository, such as clusters/production; got '${v}'.`)
  }
  return path === '.' ? '' : path
}

/** `<namespace>/<name>`, or a name in flux-system. */
function gitRepository(read: InputReader): string | undefined {
  const v = read('git-repository').trim()
  if (v === '') return undefined
  const [namespace, name, extra] = v.includes('/') ? v.split('/') : ['flux-system', v]
  if (extra !== undefined || !namespace || !name || !isDnsLabel(namespace) || !isDnsSubdomain(name)) {
    throw new ConfigurationError(`Input 'git-repository' must be <namespace>/<name> of a Flux GitRepository, such as flux-system/flux-system; got '${v}'.`)
  }
  return `${namespace}/${name}`
}

function optional(read: InputReader, name: string): string | undefined {
  const v = read(name).trim()
  return v === '' ? undefined : v
}

function oneOf<T extends string>(read: InputReader, name: string, allowed: readonly T[], fallback: T): T {
  const v = read(name).trim()
  if (v === '') return fallback
  const found = allowed.find((a) => a === v.toLowerCase())
  if (found === undefined) {
    throw new ConfigurationError(`Input '${name}' must be one of ${allowed.join(', ')}; got '${v}'.`)
  }
  return found
}

// The YAML 1.2 core schema booleans, as @actions/core's getBooleanInput accepts.
const TRUE = new Set(['true', 'True', 'TRUE'])
const FALSE = new Set(['false', 'False', 'FALSE'])

function bool(read: InputReader, name: string, fallback: boolean): boolean {
  const v = read(name).trim()
  if (v === '') return fallback
  if (TRUE.has(v)) return true
  if (FALSE.has(v)) return false
  throw new ConfigurationError(`Input '${name}' must be true or false; got '${v}'.`)
}

function lines(read: InputReader, name: string, fallback: readonly string[]): readonly string[] {
  const items = read(name)
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .flatMap(splitCommas)
    .map((l) => l.trim())
    .filter((l) => l !== '')
  return items.length === 0 ? fallback : items
}

/** Commas separate items, except inside a glob's `{a,b}` alternatives. */
function splitCommas(line: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < line.length; i++) {
    const c = line.charAt(i)
    if (c === '\\') i++
    else if (c === '{') depth++
    else if (c === '}' && depth > 0) depth--
    else if (c === ',' && depth === 0) {
      parts.push(line.slice(start, i))
      start = i + 1
    }
  }
  parts.push(line.slice(start))
  return parts
}

function duration(read: InputReader, name: string, fallback: string, options: { zero?: boolean } = {}): number {
  const v = read(name).trim() || fallback
  const ms = parseDuration(v)
  if (ms === undefined || ms < 0 || (ms === 0 && options.zero !== true)) {
    throw new ConfigurationError(`Input '${name}' must be a duration like 5m, 90s or 1h30m${options.zero === true ? ' (0 for none)' : ''}; got '${v}'.`)
  }
  return ms
}

/** Empty means never / unbounded. */
function optionalDuration(read: InputReader, name: string): number | undefined {
  const v = read(name).trim()
  return v === '' ? undefined : duration(() => v, name, '')
}

/** `host:port` or `:port` (every interface); empty means off. */
function listenAddress(read: InputReader, name: string): ListenAddress | undefined {
  const v = read(name).trim()
  if (v === '') return undefined
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/.exec(v)
  const port = Number(m?.[2])
  if (m === null || port > 65535) {
    throw new ConfigurationError(`Input '${name}' must be host:port or :port, such as :8080 or 127.0.0.1:9090; got '${v}'.`)
  }
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port }
}

function objectName(read: InputReader, name: string, fallback: string): string {
  const v = read(name).trim() || fallback
  if (!isDnsSubdomain(v)) {
    throw new ConfigurationError(`Input '${name}' must be a Kubernetes object name (lowercase letters, digits, '-' and '.'); got '${v}'.`)
  }
  return v
}

function integer(read: InputReader, name: string, fallback: number, range: { min: number; max: number }): number {
  const v = read(name).trim()
  if (v === '') return fallback
  const n = Number(v)
  if (!/^\d+$/.test(v) || n < range.min || n > range.max) {
    throw new ConfigurationError(`Input '${name}' must be a whole number from ${range.min} to ${range.max}; got '${v}'.`)
  }
  return n
}

function namespace(read: InputReader, name: string, fallback: string): string {
  const v = read(name).trim() || fallback
  if (!isDnsLabel(v)) {
    throw new ConfigurationError(`Input '${name}' must be a Kubernetes namespace name (lowercase letters, digits and '-'); got '${v}'.`)
  }
  return v
}

function prefix(read: InputReader): string {
  const v = read('annotation-prefix').trim() || 'nebius.ai'
  if (!isDnsSubdomain(v)) {
    throw new ConfigurationError(`Input 'annotation-prefix' must be a DNS subdomain such as nebius.ai or example.com; got '${v}'.`)
  }
  return v
}

// ---- Per-mode projections: the fields each mode reads, and nothing else -------------------------

const PLAN_FIELDS = ['paths', 'annotationPrefix', 'defaultNamespace', 'crossNamespaceTargets', 'semanticDigest', 'discover'] as const
/** What the planner reads. */
export type PlanSettings = Pick<Settings, (typeof PLAN_FIELDS)[number]>

const TRIGGER_FIELDS = [
  ...PLAN_FIELDS,
  ...([
    'base',
    'head',
    'fullSync',
    'force',
    'reset',
    'waitForApply',
    'apply',
    'wait',
    'dryRun',
    'fluxAttribution',
    'timeoutMs',
    'maxConcurrency',
    'digestKeyNamespace',
  ] as const),
]
/** What the trigger pipeline (plan, wait for apply, patch, outcome) reads. */
export type TriggerRunOptions = Pick<Settings, (typeof TRIGGER_FIELDS)[number]>

export function triggerRunOptionsOf(settings: Settings): TriggerRunOptions {
  return pick(settings, TRIGGER_FIELDS)
}

const DISCOVER_FIELDS = [...PLAN_FIELDS, ...(['fromGit', 'head', 'namespaces', 'dryRun', 'maxConcurrency'] as const)]
/** What discover (relabel and lint, in the cluster or from git) reads. */
export type DiscoverOptions = Pick<Settings, (typeof DISCOVER_FIELDS)[number]>

export function discoverOptionsOf(settings: Settings): DiscoverOptions {
  return pick(settings, DISCOVER_FIELDS)
}

function pick<K extends keyof Settings>(settings: Settings, keys: readonly K[]): Pick<Settings, K> {
  return Object.fromEntries(keys.map((k) => [k, settings[k]])) as Pick<Settings, K>
}
