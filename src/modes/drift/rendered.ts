// The rendered manifest of a Helm release: YAML documents separated by `---` lines, each
// preceded by Helm's `# Source: <chart>/templates/<file>` comment. Documents are parsed one
// at a time (a generator), so a large release is never held as one parsed tree.

import { parseDocument } from 'yaml'

/** An object the chart rendered: what the cluster should hold. */
export interface DesiredObject {
  readonly apiVersion: string
  readonly kind: string
  readonly name: string
  /** As rendered; undefined when the template sets none (the release namespace applies if the kind is namespaced). */
  readonly namespace: string | undefined
  /** The template it came from, when Helm named it. */
  readonly source: string | undefined
  readonly object: Readonly<Record<string, unknown>>
}

/** A document that is not an object Kubernetes could hold. Says where, never what it contains. */
export interface RenderedProblem {
  readonly index: number
  readonly source: string | undefined
  readonly message: string
}

export type RenderedEntry = { readonly object: DesiredObject } | { readonly problem: RenderedProblem }

const SEPARATOR = /^---[ \t]*(?:#.*)?$/

/** Splits at `---` lines without parsing (Helm joins templates this way). */
export function* documents(manifest: string): Generator<{ text: string; source: string | undefined }> {
  let lines: string[] = []
  const flush = function* (): Generator<{ text: string; source: string | undefined }> {
    const text = lines.join('\n')
    lines = []
    if (text.trim() === '') return
    const source = /^#\s*Source:\s*(.+?)\s*$/m.exec(text)?.[1]
    yield { text, source }
  }
  for (const line of manifest.split(/\r?\n/)) {
    if (SEPARATOR.test(line)) yield* flush()
    else lines.push(line)
  }
  yield* flush()
}

/**
 * Each object of the manifest, or the problem with its document; empty documents are skipped.
 * `only` picks the documents worth parsing by their text (the others are not parsed at all).
 */
export function* renderedObjects(manifest: string, only?: (text: string) => boolean): Generator<RenderedEntry> {
  let index = 0
  for (const doc of documents(manifest)) {
    index++
    if (only !== undefined && !only(doc.text)) continue
    const problem = (message: string): RenderedEntry => ({ problem: { index, source: doc.source, message } })
    const parsed = parseDocument(doc.text, { uniqueKeys: false, logLevel: 'silent', version: '1.1' })
    if (parsed.errors.length > 0) {
      // The parser's message may quote the document (a Secret's value): keep only the line.
      const line = parsed.errors[0]?.linePos?.[0]?.line
      yield problem(`is not valid YAML${line === undefined ? '' : ` (line ${line})`}`)
      continue
    }
    const value: unknown = parsed.toJS({ maxAliasCount: 1000 })
    if (value === null || value === undefined) continue
    if (typeof value !== 'object' || Array.isArray(value)) {
      yield problem('is not a Kubernetes object')
      continue
    }
    const object = value as Readonly<Record<string, unknown>>
    const metadata = object['metadata']
    const meta = typeof metadata === 'object' && metadata !== null ? (metadata as Readonly<Record<string, unknown>>) : {}
    const apiVersion = object['apiVersion']
    const kind = object['kind']
    const name = meta['name']
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string' || apiVersion === '' || kind === '' || name === '') {
      yield problem('has no apiVersion, kind or metadata.name')
      continue
    }
    const namespace = meta['namespace']
    yield {
      object: { apiVersion, kind, name, namespace: typeof namespace === 'string' && namespace !== '' ? namespace : undefined, source: doc.source, object },
    }
  }
}
