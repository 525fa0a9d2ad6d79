// The discover lint: what in the wiring between ConfigMaps/Secrets and HelmReleases is
// wrong or uncovered. Pure: the same rules run over the repository's manifests
// (`--from-git`) and over what the cluster holds; the caller says which and supplies it.

import type { Keys } from '../../core/keys.ts'
import { releaseKey, sourceId } from '../../core/model.ts'
import type { FileProblem, Origin, ReleaseManifest, Severity, SourceId, SourceKind, SourceManifest, SourceRef } from '../../core/model.ts'
import { untargetedProblem } from '../../core/untargeted-source.ts'
import { compareText } from '../../lib/sort.ts'

export const FindingCode = {
  /** A release reads a source that no trigger covers (no label, not reconcile.fluxcd.io/watch). */
  UncoveredSource: 'UncoveredSource',
  /** `<prefix>/helmreleases-name` names a release that does not exist. */
  MissingRelease: 'MissingRelease',
  /** spec.valuesFrom names an object that does not exist. */
  MissingSource: 'MissingSource',
  /** An annotation targets a release in another namespace that does not read the source. */
  CrossNamespaceUnread: 'CrossNamespaceUnread',
  /** A labelled source that no annotation targets and no release reads: it triggers nothing. */
  UntargetedSource: 'UntargetedSource',
  /** A manifest (or a live object's metadata) we could not read as written. */
  InvalidManifest: 'InvalidManifest',
} as const
export type FindingCode = (typeof FindingCode)[keyof typeof FindingCode]

export interface Finding {
  readonly severity: Severity
  readonly code: FindingCode
  readonly message: string
  /** Repository file and line, for findings from git. */
  readonly file?: string
  readonly line?: number
  readonly release?: string
  readonly source?: SourceId
}

/** A source as the lint needs it: where it is defined (from git) and how it triggers. */
export type LintSource = Pick<SourceManifest, 'kind' | 'namespace' | 'name' | 'labelled' | 'annotatedTargets'> & {
  readonly origin?: Origin
  /** Line of `<prefix>/helmreleases-name`, when known: where a wrong target is fixed. */
  readonly annotationLine?: number
}

export interface LintInput {
  readonly keys: Keys
  /** 'the cluster' or 'the repository': said in the messages. */
  readonly where: 'cluster' | 'repository'
  readonly releases: readonly ReleaseManifest[]
  /** Sources that carry our trigger label (their annotations are checked). */
  readonly annotatedSources: readonly LintSource[]
  /** What is known about a referenced source: 'missing' when it does not exist, 'unknown' when it could not be read. */
  readonly lookup: (ref: SourceRef) => LintSource | 'missing' | 'unknown'
}

export function lint(input: LintInput): Finding[] {
  const releases = new Map(input.releases.map((r) => [releaseKey(r), r]))
  return [...annotationFindings(input, releases), ...referenceFindings(input)].sort(compareFinding)
}

/** Manifest problems become findings, so one list holds everything the user should fix. */
export function problemFindings(problems: readonly FileProblem[]): Finding[] {
  return problems.map((p) => ({
    severity: p.severity,
    code: FindingCode.InvalidManifest,
    message: p.message,
    file: p.file,
    ...(p.line === undefined ? {} : { line: p.line }),
  }))
}

/**
 * Labelled sources in the repository that trigger no HelmRelease: the plan's warning, by its rule
 * (core/untargeted-source.ts), at the same file and line. Sorted as lint's findings are.
 */
export function untargetedFindings(
  keys: Keys,
  sources: readonly (LintSource & { readonly origin: Origin })[],
  releases: readonly ReleaseManifest[],
): Finding[] {
  return sources
    .flatMap((source): Finding[] => {
      const id = sourceId(source)
      const readers = releases.filter((r) => r.namespace === source.namespace && reads(r, source)).length
      const problem = untargetedProblem({ ...source, id }, readers, { keys, discover: true })
      if (problem === undefined) return []
      const { severity, message, file, line } = problem
      return [{ severity, code: FindingCode.UntargetedSource, message, file, ...(line === undefined ? {} : { line }), source: id }]
    })
    .sort(compareFinding)
}

function annotationFindings(input: LintInput, releases: ReadonlyMap<string, ReleaseManifest>): Finding[] {
  const { keys } = input
  return input.annotatedSources.flatMap((source) =>
    source.annotatedTargets.flatMap((target): Finding[] => {
      const id = sourceId(source)
      const at = location(source.origin, source.annotationLine)
      const release = releases.get(releaseKey(target))
      if (release === undefined) {
        const nearby = target.namespace !== source.namespace && releases.has(releaseKey({ namespace: source.namespace, name: target.name }))
        const hint = nearby ? `; HelmRelease ${source.namespace}/${target.name} exists: set ${keys.targetNamespace}: ${source.namespace}` : ''
        const message = `${id}: ${keys.targetNames} names HelmRelease ${releaseKey(target)}, which does not exist in the ${input.where}${hint}`
        return [{ severity: 'error', code: FindingCode.MissingRelease, message, ...at, release: releaseKey(target), source: id }]
      }
      if (target.namespace === source.namespace || reads(release, source)) return []
      const message =
        `${id}: ${keys.targetNames} names HelmRelease ${releaseKey(target)} in another namespace, which does not read it ` +
        `(spec.valuesFrom only reads the release's own namespace), so triggering it on this change does nothing`
      return [{ severity: 'warning', code: FindingCode.CrossNamespaceUnread, message, ...at, release: releaseKey(target), source: id }]
    }),
  )
}

function referenceFindings(input: LintInput): Finding[] {
  const uncovered = new Map<SourceId, { source: LintSource; readers: string[] }>()
  const missing: Finding[] = []
  for (const release of input.releases) {
    for (const ref of release.valuesFrom) {
      const wanted = { kind: ref.kind, namespace: release.namespace, name: ref.name }
      const source = input.lookup(wanted)
      if (source === 'missing') {
        missing.push(missingFinding(input, release, wanted, ref.optional))
      } else if (source !== 'unknown' && !source.labelled) {
        const entry = uncovered.get(sourceId(wanted)) ?? { source, readers: [] }
        entry.readers.push(releaseKey(release))
        uncovered.set(sourceId(wanted), entry)
      }
    }
  }
  const { keys } = input
  const uncoveredFindings = [...uncovered.values()].map(({ source, readers }): Finding => {
    const id = sourceId(source)
    const message =
      `${id} is read by HelmRelease ${readers.sort().join(', ')} through spec.valuesFrom, but nothing triggers on its changes: ` +
      `label it ${keys.triggerLabel}: "true" (or ${keys.watchLabel}: ${keys.watchLabelValue})`
    return { severity: 'warning', code: FindingCode.UncoveredSource, message, ...location(source.origin), source: id }
  })
  return [...missing, ...uncoveredFindings]
}

function missingFinding(input: LintInput, release: ReleaseManifest, ref: SourceRef, optional: boolean): Finding {
  const id = sourceId(ref)
  // helm-controller fails a release whose required source is missing. A repository often
  // lacks Secrets made elsewhere (sealed, external), so from git it is only a warning.
  const severity: Severity = optional ? 'notice' : input.where === 'cluster' ? 'error' : 'warning'
  const what = optional ? 'optional reference' : 'reference'
  const message = `HelmRelease ${releaseKey(release)}: spec.valuesFrom ${what} to ${id}, which does not exist in the ${input.where}`
  return { severity, code: FindingCode.MissingSource, message, ...location(release.origin), release: releaseKey(release), source: id }
}

function reads(release: ReleaseManifest, source: { kind: SourceKind; name: string }): boolean {
  return release.valuesFrom.some((ref) => ref.kind === source.kind && ref.name === source.name)
}

function location(origin: Origin | undefined, line?: number): { file?: string; line?: number } {
  return origin === undefined ? {} : { file: origin.file, line: line ?? origin.line }
}

const SEVERITY_ORDER: Readonly<Record<Severity, number>> = { error: 0, warning: 1, notice: 2 }

function compareFinding(a: Finding, b: Finding): number {
  return (
    SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
    compareText(a.file ?? '', b.file ?? '') ||
    (a.line ?? 0) - (b.line ?? 0) ||
    compareText(a.message, b.message)
  )
}
