// Which files of the repository a cluster reads, from its root: the root itself, the path of
// every Flux Kustomization found there (and in what those paths hold, to a fixed point), and the
// local directories and files each kustomization.yaml on the way names in resources/components.
// It only scopes the file-by-file planner to one cluster's tree; rendering each cluster's
// Kustomizations as Flux does (src/render, cluster-root) replaces it where that is available.

import { posix } from 'node:path'
import { parseDocument } from 'yaml'
import { isKustomizationFile } from '../../core/manifest.ts'
import type { HeadFile } from '../../core/model.ts'
import { normalDir } from '../../core/cluster-list.ts'
import { fluxKustomizations } from './clusters.ts'

/** Globs (for PlanOptions.paths) of the files the cluster rooted at `root` reads. */
export function clusterPaths(root: string, headFiles: readonly HeadFile[]): string[] {
  const dirs = new Set<string>()
  const files = new Set<string>()
  const queue = [normalDir(root)]
  while (queue.length > 0) {
    const dir = queue.pop() ?? ''
    if (dirs.has(dir) || [...dirs].some((d) => within(dir, d))) continue
    dirs.add(dir)
    for (const file of headFiles) {
      if (!within(file.path, dir)) continue
      for (const k of fluxKustomizations(file)) queue.push(k.path)
      if (isKustomizationFile(file.path)) {
        for (const ref of kustomizationRefs(file)) {
          const target = normalDir(posix.join(posix.dirname(file.path), ref))
          if (target.startsWith('..')) continue
          if (headFiles.some((f) => f.path === target)) files.add(target)
          else queue.push(target)
        }
      }
    }
  }
  const outer = [...dirs].filter((d) => ![...dirs].some((o) => o !== d && within(d, o))).sort()
  return [...outer.map((d) => (d === '' ? '**' : `${d}/**`)), ...[...files].filter((f) => !outer.some((d) => within(f, d))).sort()]
}

/** `path` is `dir` or below it ('' is the repository root). */
export function within(path: string, dir: string): boolean {
  return dir === '' || path === dir || path.startsWith(`${dir}/`)
}

/** Local entries of a kustomization.yaml's resources and components (remote ones are not in the repository). */
function kustomizationRefs(file: HeadFile): string[] {
  if (file.content.type !== 'file') return []
  let doc: unknown
  try {
    doc = parseDocument(Buffer.from(file.content.bytes).toString('utf8'), { logLevel: 'silent', uniqueKeys: false }).toJS({ maxAliasCount: 100 })
  } catch {
    return []
  }
  if (typeof doc !== 'object' || doc === null) return []
  const record: Record<string, unknown> = { ...doc }
  return ['resources', 'components', 'bases'].flatMap((field) => {
    const list = record[field]
    return Array.isArray(list) ? list.filter((e): e is string => typeof e === 'string' && !/^[a-z][a-z0-9+.-]*:\/\/|^(github\.com|git@)/.test(e)) : []
  })
}
