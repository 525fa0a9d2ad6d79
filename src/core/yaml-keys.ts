// Duplicate mapping keys, found in one pass. The yaml library's own check (uniqueKeys: true)
// compares each new key with every earlier key of its map: quadratic, so a 1 MiB manifest of
// short keys took minutes to parse. Parse with uniqueKeys: false and check here instead.

import { isMap, isPair, isScalar, isSeq, YAMLParseError, type Document } from 'yaml'

/** Offsets of the keys that repeat an earlier key of the same mapping (scalar keys compared by value, as the library does). */
export function duplicateKeyOffsets(doc: Document.Parsed): number[] {
  const found: number[] = []
  // Iterative: a deeply nested document must not exhaust the stack here.
  const pending: unknown[] = [doc.contents]
  while (pending.length > 0) {
    const node = pending.pop()
    if (isMap(node)) {
      const seen = new Set<unknown>()
      for (const pair of node.items) {
        if (isScalar(pair.key)) {
          if (seen.has(pair.key.value)) found.push(pair.key.range?.[0] ?? 0)
          seen.add(pair.key.value)
        }
        pending.push(pair.key, pair.value)
      }
    } else if (isSeq(node)) {
      for (const item of node.items) pending.push(item)
    } else if (isPair(node)) {
      pending.push(node.key, node.value)
    }
  }
  return found.sort((a, b) => a - b)
}

/** The document with a DUPLICATE_KEY error per repeated key, as uniqueKeys: true would have reported it. */
export function withUniqueKeys(doc: Document.Parsed): Document.Parsed {
  if (doc.errors.length > 0) return doc
  for (const offset of duplicateKeyOffsets(doc)) doc.errors.push(new YAMLParseError([offset, offset + 1], 'DUPLICATE_KEY', 'Map keys must be unique'))
  return doc
}
