// Label and annotation keys: ours (under the configurable prefix) and Flux's.
// One place builds them so no other file spells a key by hand.

import { quoted } from '../lib/untrusted.ts'

/** Drop-in default: the keys nebius/helmrelease-trigger-operator reads. */
export const DEFAULT_PREFIX = 'nebius.ai'

/** Namespace of annotated targets when `<prefix>/helmreleases-namespace` is absent. */
export const DEFAULT_TARGET_NAMESPACE = 'flux-system'

/** Flux reconcile-request annotations and the Flux ≥ 2.7 watch label. */
export const FLUX_KEYS = {
  requestedAt: 'reconcile.fluxcd.io/requestedAt',
  forceAt: 'reconcile.fluxcd.io/forceAt',
  resetAt: 'reconcile.fluxcd.io/resetAt',
  watchLabel: 'reconcile.fluxcd.io/watch',
  watchLabelValue: 'Enabled',
} as const

/**
 * Flux's event metadata annotations: helm-controller copies annotations under this prefix into
 * its events, and notification-controller's commit-status and pull-request-comment providers
 * act on a release that carries them.
 */
export const FLUX_EVENT_KEYS = {
  commit: 'event.toolkit.fluxcd.io/commit',
  changeRequest: 'event.toolkit.fluxcd.io/change_request',
} as const

export interface Keys {
  readonly prefix: string
  /** Label on ConfigMaps/Secrets that trigger, and (written by discovery) on HelmReleases. */
  readonly triggerLabel: string
  readonly triggerLabelValue: 'true'
  /** Annotation: comma-separated target HelmRelease names. */
  readonly targetNames: string
  /** Annotation: namespace of every named target. */
  readonly targetNamespace: string
  /** Annotation on HelmReleases: compact JSON `{ SourceId: Digest }` of the last trigger. */
  readonly configDigest: string
  /** Annotation on HelmReleases (recover mode): attempts made since it was last Ready. */
  readonly recoverAttempts: string
  /** Annotation on HelmReleases (recover mode): the token of the last attempt, the start of its backoff. */
  readonly recoverAt: string
  readonly requestedAt: typeof FLUX_KEYS.requestedAt
  readonly forceAt: typeof FLUX_KEYS.forceAt
  readonly resetAt: typeof FLUX_KEYS.resetAt
  readonly watchLabel: typeof FLUX_KEYS.watchLabel
  readonly watchLabelValue: typeof FLUX_KEYS.watchLabelValue
}

const DNS_LABEL = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$/
const MAX_LABEL = 63
const MAX_SUBDOMAIN = 253

/** RFC 1123 label, as Kubernetes checks namespace names. */
export function isDnsLabel(text: string): boolean {
  return text.length <= MAX_LABEL && DNS_LABEL.test(text)
}

/** RFC 1123 subdomain, as Kubernetes checks most object names and key prefixes. */
export function isDnsSubdomain(text: string): boolean {
  return text.length > 0 && text.length <= MAX_SUBDOMAIN && text.split('.').every(isDnsLabel)
}

/** Kinds whose names Kubernetes checks as path segments only (RBAC); every other kind's as a DNS-1123 subdomain. */
const PATH_SEGMENT_NAMES = new Set(['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'])

/** Why Kubernetes would refuse `name` for an object of `kind` (the name quoted, bounded); undefined when it would not. */
export function objectNameProblem(kind: string, name: string): string | undefined {
  if (PATH_SEGMENT_NAMES.has(kind)) {
    // eslint-disable-next-line no-control-regex -- control characters are what we refuse
    const bad = name === '' || name === '.' || name === '..' || name.length > MAX_SUBDOMAIN || /[/%\u0000-\u001f\u007f]/.test(name)
    return bad ? `name ${quoted(name)} is not a valid ${kind} name` : undefined
  }
  return isDnsSubdomain(name) ? undefined : `name ${quoted(name)} is not a valid object name (DNS-1123 subdomain)`
}

/** Why Kubernetes would refuse `namespace` (quoted, bounded); undefined when it would not. */
export function namespaceProblem(namespace: unknown): string | undefined {
  if (typeof namespace === 'string' && isDnsLabel(namespace)) return undefined
  const shown = typeof namespace === 'string' ? quoted(namespace) : `a ${namespace === null ? 'null' : typeof namespace}`
  return `namespace ${shown} is not a valid namespace name (DNS-1123 label)`
}

/** The keys for one prefix. Throws on a prefix Kubernetes would reject in a key. */
export function keysFor(prefix: string): Keys {
  if (!isDnsSubdomain(prefix)) {
    throw new Error(
      `Invalid annotation prefix '${prefix}'. Expected a DNS subdomain such as '${DEFAULT_PREFIX}' ` +
        `(lowercase letters, digits, '-' and '.', at most ${MAX_SUBDOMAIN} characters).`,
    )
  }
  return {
    prefix,
    triggerLabel: `${prefix}/helmrelease-trigger-operator`,
    triggerLabelValue: 'true',
    targetNames: `${prefix}/helmreleases-name`,
    targetNamespace: `${prefix}/helmreleases-namespace`,
    configDigest: `${prefix}/config-digest`,
    recoverAttempts: `${prefix}/recover-attempts`,
    recoverAt: `${prefix}/recover-at`,
    ...FLUX_KEYS,
  }
}
