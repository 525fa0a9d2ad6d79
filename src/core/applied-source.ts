// What `apply: true` sends for a planned source: the very document the plan read and digested
// (found again by its line, refused when it no longer parses cleanly or digests differently),
// reduced to an allow-list. Only ConfigMaps and Opaque Secrets, only their data, and only our own
// labels and annotations: a repository may change values, never mint a ServiceAccount token
// (a `kubernetes.io/service-account-token` Secret) or set annotations other controllers act on.

import { LineCounter, parseAllDocuments } from 'yaml'
import { contentOfConfigMap, contentOfSecret, digestOf } from './digest.ts'
import type { Keys } from './keys.ts'
import type { PlannedSource } from './model.ts'
import { duplicateKeyOffsets } from './yaml-keys.ts'

/** The object to server-side apply (apiVersion v1), or one sentence saying why it is not applied. */
export type AppliedSource = { readonly object: AppliedObject } | { readonly refused: string }

export interface AppliedObject {
  readonly apiVersion: 'v1'
  readonly kind: 'ConfigMap' | 'Secret'
  readonly metadata: {
    readonly name: string
    readonly namespace: string
    readonly labels?: Readonly<Record<string, string>>
    readonly annotations?: Readonly<Record<string, string>>
  }
  readonly type?: 'Opaque'
  readonly data?: Readonly<Record<string, string>>
  readonly binaryData?: Readonly<Record<string, string>>
  readonly stringData?: Readonly<Record<string, string>>
}

export interface AppliedSourceOptions {
  readonly keys: Keys
  readonly semanticDigest: boolean
  readonly maxAliasCount: number
}

/** The apply object for `source` from the text of its file at head. */
export function appliedSource(text: string, source: PlannedSource, options: AppliedSourceOptions): AppliedSource {
  const where = `${source.origin.file}:${source.origin.line}`
  const value = documentAt(text, source.origin.line, options.maxAliasCount)
  if (value === undefined) return { refused: `${source.id}: the document the plan read at ${where} no longer parses cleanly; not applied.` }
  return appliedObjectOf(value, source, options)
}

/** The apply object for `source` from the object the plan read (a rendered one, or a parsed document). */
export function appliedObjectOf(
  value: Readonly<Record<string, unknown>>,
  source: PlannedSource,
  options: Omit<AppliedSourceOptions, 'maxAliasCount'>,
): AppliedSource {
  const where = `${source.origin.file}:${source.origin.line}`
  const metadata = record(value['metadata'])
  const namespace = metadata['namespace'] ?? source.namespace
  if (value['kind'] !== source.kind || metadata['name'] !== source.name || namespace !== source.namespace) {
    return { refused: `${source.id}: the document at ${where} is not the one the plan read; not applied.` }
  }
  const type = value['type']
  if (source.kind === 'Secret' && type !== undefined && type !== 'Opaque') {
    return {
      refused:
        `${source.id} (${where}) is a Secret of type ${JSON.stringify(type)}: apply: true applies only ConfigMaps and Opaque Secrets. ` +
        'Let kustomize-controller apply it (apply: false), or remove the type.',
    }
  }
  const data = stringMap(value['data'])
  const object: AppliedObject = {
    apiVersion: 'v1',
    kind: source.kind,
    metadata: {
      name: source.name,
      namespace: source.namespace,
      ...nonEmpty('labels', ours(metadata['labels'], [options.keys.triggerLabel, options.keys.watchLabel])),
      ...nonEmpty('annotations', ours(metadata['annotations'], [options.keys.targetNames, options.keys.targetNamespace])),
    },
    ...(source.kind === 'Secret'
      ? { type: 'Opaque', ...nonEmpty('data', data), ...nonEmpty('stringData', stringMap(value['stringData'])) }
      : { ...nonEmpty('data', data), ...nonEmpty('binaryData', stringMap(value['binaryData'])) }),
  }
  const content = object.kind === 'Secret' ? contentOfSecret(object) : contentOfConfigMap(object)
  // A Secret read back from a fleet plan file carries no digest (never written there): the document
  // at that line of the same head commit, with kind, name and namespace checked above, is the one planned.
  if (source.digest !== undefined && digestOf(content, { semantic: options.semanticDigest }) !== source.digest) {
    return { refused: `${source.id}: the document at ${where} does not hold the content the plan digested; not applied.` }
  }
  return { object }
}

/** The JS value of the document whose content starts on `line`, if it parses without any error. */
function documentAt(text: string, line: number, maxAliasCount: number): Record<string, unknown> | undefined {
  const lines = new LineCounter()
  for (const doc of parseAllDocuments(text, { lineCounter: lines, uniqueKeys: false, prettyErrors: false, logLevel: 'error' })) {
    // The same line the plan recorded for the document (manifest.ts).
    if (Math.max(1, lines.linePos(doc.contents?.range[0] ?? doc.range[0]).line) !== line) continue
    if (doc.errors.length > 0 || duplicateKeyOffsets(doc).length > 0) return undefined
    try {
      const value: unknown = doc.toJS({ maxAliasCount })
      return typeof value === 'object' && value !== null && !Array.isArray(value) ? record(value) : undefined
    } catch {
      return undefined
    }
  }
  return undefined
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : {}
}

function stringMap(value: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(record(value)).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

/** Only the named keys (ours) of a label or annotation map. */
function ours(value: unknown, keys: readonly string[]): Record<string, string> {
  const map = stringMap(value)
  return Object.fromEntries(keys.flatMap((k) => (Object.hasOwn(map, k) ? [[k, map[k] ?? '']] : [])))
}

/** `{ [key]: map }`, or nothing for an empty map (an apply then owns no empty field). */
function nonEmpty(key: string, map: Record<string, string>): Record<string, Record<string, string>> {
  return Object.keys(map).length === 0 ? {} : { [key]: map }
}
