// Domain types shared by the planner, the engine and the reports.
// Everything here is plain data: no I/O, no classes.

import { compareText } from '../lib/sort.ts'

/** The two kinds of object whose content feeds HelmRelease values. */
export type SourceKind = 'ConfigMap' | 'Secret'

/** "ConfigMap/<namespace>/<name>": the key used in `<prefix>/config-digest`. */
export type SourceId = `${SourceKind}/${string}/${string}`

export interface SourceRef {
  readonly kind: SourceKind
  readonly namespace: string
  readonly name: string
}

export interface ReleaseRef {
  readonly namespace: string
  readonly name: string
}

/** "sha256:<64 hex>": unkeyed; published only for ConfigMaps (a Secret's stays in memory). */
export type PlainDigest = `sha256:${string}`
/** "hmac-sha256:<64 hex>": a Secret's digest keyed with the cluster's digest key (core/digest.ts). */
export type KeyedDigest = `hmac-sha256:${string}`
export type Digest = PlainDigest | KeyedDigest

export type Severity = 'error' | 'warning' | 'notice'

/** Something wrong (or worth saying) about one file. Reported; never stops the other files. */
export interface FileProblem {
  readonly severity: Severity
  /** Repository-relative path, forward slashes. */
  readonly file: string
  /** 1-based line, when known. */
  readonly line?: number
  readonly message: string
  /** The cluster tree it belongs to, when the repository holds several (`staging` for clusters/staging). */
  readonly cluster?: string
}

/** Where a document was found. */
export interface Origin {
  readonly file: string
  readonly line: number
}

/** Why a source triggers a release. */
export type TargetReason =
  | 'annotation' // <prefix>/helmreleases-name on a labelled source
  | 'valuesFrom' // the release's spec.valuesFrom names the source (discover)

/** A ConfigMap/Secret manifest as parsed from a file. */
export interface SourceManifest extends SourceRef {
  readonly origin: Origin
  /** Carries `<prefix>/helmrelease-trigger-operator: "true"` or `reconcile.fluxcd.io/watch: Enabled`. */
  readonly labelled: boolean
  /** Targets named by `<prefix>/helmreleases-name` (namespace resolved). */
  readonly annotatedTargets: readonly ReleaseRef[]
  /** SOPS-encrypted: the git content never equals the live content. */
  readonly encrypted: boolean
  /** Unkeyed digest of data/binaryData (stringData folded in for Secrets); a Secret's never published. */
  readonly digest: PlainDigest
  /**
   * What the digest covers, kept to tell which keys a commit changed (key-changes.ts). Holds a
   * Secret's values: never published, logged or put in the plan.
   */
  readonly content?: { readonly data?: Readonly<Record<string, string>>; readonly binaryData?: Readonly<Record<string, string>> }
  /**
   * The content as the digest encoded it (digest.ts), kept so the values diff compares keys and
   * reads a changed value's leaves without encoding or parsing it again. Holds a Secret's
   * values, like `content`: never published, logged or put in the plan.
   */
  readonly encoded?: EncodedContent
}

/** Each key's value as the digest encodes it, keys sorted; `semantic` when `data` values were canonicalised. */
export interface EncodedContent {
  readonly semantic: boolean
  /** A value is its text (`text`) or, read as one YAML/JSON collection, its canonical JSON (`yaml`). */
  readonly data: readonly (readonly [key: string, value: readonly ['text' | 'yaml', string]])[]
  /** Canonical base64. */
  readonly binaryData: readonly (readonly [key: string, base64: string])[]
}

/** One key of a source's data that a commit changed; for a YAML value, one changed leaf (`values.yaml` → `image.tag`). */
export interface KeyChange {
  /** The data key. */
  readonly key: string
  /** Inside a YAML/JSON value: the dotted path of the leaf that changed. */
  readonly path?: string
  readonly change: 'added' | 'removed' | 'modified'
  /** ConfigMaps only, shortened: the value before and after. Never set for Secrets. */
  readonly before?: string
  readonly after?: string
}

/** One `spec.valuesFrom` entry of a HelmRelease. */
export interface ValuesReference {
  readonly kind: SourceKind
  readonly name: string
  readonly optional: boolean
}

/** A HelmRelease as seen in a repository manifest or in the cluster. */
export interface ReleaseManifest extends ReleaseRef {
  /** Absent for releases read from the cluster. */
  readonly origin?: Origin
  readonly valuesFrom: readonly ValuesReference[]
}

export type SourceChange = 'added' | 'modified' | 'deleted'

/** A source whose content changed in the range (or every labelled source under full-sync). */
export interface PlannedSource extends SourceRef {
  readonly id: SourceId
  /** The cluster tree it belongs to, when the repository holds several (`staging` for clusters/staging). */
  readonly cluster?: string
  readonly change: SourceChange
  /**
   * Unkeyed digest at head; absent for deleted sources, and for a Secret in a plan read from a
   * file (never written there). A Secret's is kept in memory only: never reported or saved.
   */
  readonly digest?: PlainDigest
  /** Unkeyed digest at base; absent for added sources and under full-sync. Same rule for Secrets. */
  readonly previousDigest?: PlainDigest
  readonly encrypted: boolean
  /** Where the user edited: the first changed key's line when rendered, else the document. */
  readonly origin: Origin
  readonly targets: readonly PlannedTarget[]
  /** Which keys changed (modified sources): values shown for ConfigMaps, key names only for Secrets. */
  readonly keyChanges?: readonly KeyChange[]
  /** Rendered sources: each changed data key and the file:line where it was edited. */
  readonly edits?: readonly KeyEdit[]
  /** A generated source whose hash-suffixed name changed with its content: its name at base. */
  readonly renamedFrom?: SourceId
  /**
   * Rendered plans: the Flux Kustomization applying it is suspended (`spec.suspend: true`), so the
   * change is planned but never reaches the cluster until it is resumed: no targets, no wait.
   */
  readonly suspended?: string
}

/** A changed data key of a rendered source, and where its value was edited. */
export interface KeyEdit extends Origin {
  readonly key: string
}

export interface PlannedTarget extends ReleaseRef {
  readonly reasons: readonly TargetReason[]
}

/** A changed source as one release reads it. */
export interface PlannedRead {
  readonly id: SourceId
  /**
   * What `config-digest` records for it: a ConfigMap's plain digest; a Secret's keyed digest,
   * set only once the run holds the cluster's digest key (absent in a plan).
   */
  readonly digest?: Digest
  /** A Secret's unkeyed digest, in memory only: config-digest written before keying may still hold it. */
  readonly legacyDigest?: PlainDigest
  readonly encrypted: boolean
  /** Where the key this release reads was edited (rendered plans). */
  readonly origin?: Origin
}

/**
 * One entry per HelmRelease: every changed source it consumes, patched once. An entry with
 * `spec` is a release whose own rendered spec changed: helm-controller upgrades it on the new
 * generation, so it needs no patch of its own; the run waits for its outcome and reports it.
 * With sources as well, it is patched once, after the cluster holds both the spec and the sources.
 */
export interface PlannedRelease extends ReleaseRef {
  readonly sources: readonly PlannedRead[]
  /** The cluster tree it belongs to, when the repository holds several (`staging` for clusters/staging). */
  readonly cluster?: string
  readonly spec?: SpecChange
  /** The chart source its spec.chartRef names changed: the new chart is that source's next artifact. */
  readonly chart?: ChartChange
}

/** The chart sources a release's spec.chartRef can name that a commit edits to bump a chart. */
export type ChartSourceKind = 'OCIRepository' | 'HelmChart'

/**
 * An OCIRepository (its ref.tag, most often) or a HelmChart (its version) changed in the range
 * and a release's spec.chartRef names it: helm-controller upgrades the release once
 * source-controller holds the new artifact.
 */
export interface ChartChange extends ChartSourceRef {
  /** Where the change was written: the first changed field, else the document. */
  readonly origin: Origin
  /** Changed fields, dotted (`spec.ref.tag`). */
  readonly fields: readonly string[]
  /** What the live chart source's spec must hold once the commit is applied (as SpecChange.expect). */
  readonly expect: readonly FieldValue[]
}

export interface ChartSourceRef {
  readonly kind: ChartSourceKind
  readonly namespace: string
  readonly name: string
}

/** "OCIRepository/<namespace>/<name>", "HelmChart/<namespace>/<name>". */
export function chartSourceId(ref: ChartSourceRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`
}

/** A HelmRelease whose rendered spec changed in the range (added: new at head). */
export interface SpecChange {
  readonly change: 'added' | 'modified'
  /** The release's document (or the patch that produced it). */
  readonly origin: Origin
  /** Changed fields, dotted (`spec.chart.spec.version`); shortened to their parents past a few. */
  readonly fields: readonly string[]
  /**
   * What the live spec must hold once the new generation is applied: each changed field's head
   * value (undefined: removed). Checked as a subset, so fields the apiserver defaults do not count.
   */
  readonly expect: readonly FieldValue[]
}

export interface FieldValue {
  /** Path under `spec`. */
  readonly path: readonly string[]
  readonly value: unknown
}

export interface Plan {
  readonly sources: readonly PlannedSource[]
  readonly releases: readonly PlannedRelease[]
  readonly problems: readonly FileProblem[]
  /** Worth saying, tied to no file (Kustomizations not rendered and why). */
  readonly notes?: readonly string[]
}

export function sourceId(ref: SourceRef): SourceId {
  return `${ref.kind}/${ref.namespace}/${ref.name}`
}

export function releaseKey(ref: ReleaseRef): string {
  return `${ref.namespace}/${ref.name}`
}

/** Releases by namespace, then name, in code-unit order. */
export function byReleaseKey(a: ReleaseRef, b: ReleaseRef): number {
  return compareText(a.namespace, b.namespace) || compareText(a.name, b.name)
}

/** A file's content at one commit, as the git reader hands it over (never followed, never decoded). */
export type FileContent =
  | { readonly type: 'file'; readonly bytes: Uint8Array }
  | { readonly type: 'symlink'; readonly target: string }
  /** A blob over the reader's size limit: never read, only its size known. */
  | { readonly type: 'oversized'; readonly size: number }
  /** Submodules and anything else that is not a blob. */
  | { readonly type: 'other' }

/** One file changed between base and head (renames are split into delete + add by the reader). */
export interface FileChange {
  readonly path: string
  readonly status: 'added' | 'modified' | 'deleted'
  /** Content at base; absent when added. */
  readonly before?: FileContent
  /** Content at head; absent when deleted. */
  readonly after?: FileContent
}

/** A file present at head (used for HelmRelease discovery and kustomization namespaces). */
export interface HeadFile {
  readonly path: string
  readonly content: FileContent
}

/** A ConfigMap or Secret as the API returned it. */
export interface LiveSource {
  readonly kind: SourceKind
  readonly data: Readonly<Record<string, string>>
  readonly binaryData: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  /** As read; a watch of the object starts from it. */
  readonly resourceVersion?: string
}
