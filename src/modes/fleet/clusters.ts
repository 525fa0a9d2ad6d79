// The fleet's clusters found in the repository, and each one's wave and secret. Pure: settings
// and head files in, targets out.

import { posix } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { isClusterName, normalDir, secretName, type ClusterSpec } from '../../core/cluster-list.ts'
import { ConfigurationError } from '../../lib/errors.ts'
import type { HeadFile } from '../../core/model.ts'
import { compileGlob } from '../../core/plan.ts'

export interface ClusterTarget extends ClusterSpec {
  /** Repository secret holding its kubeconfig: KUBECONFIG_<NAME>, upper case, `-` and `.` as `_`. */
  readonly secret: string
  /** 1-based; every cluster is in wave 1 when no waves are configured. */
  readonly wave: number
}

/**
 * The `clusters/<name>` directories that hold a Flux Kustomization (what `flux bootstrap`
 * writes under `clusters/<name>/flux-system`), sorted by name.
 */
export function discoverClusters(headFiles: readonly HeadFile[]): ClusterSpec[] {
  const roots = new Set<string>()
  for (const file of headFiles) {
    const [top, name, ...rest] = file.path.split('/')
    if (top !== 'clusters' || name === undefined || rest.length === 0) continue
    const root = `clusters/${name}`
    if (!roots.has(root) && fluxKustomizations(file).length > 0) roots.add(root)
  }
  return [...roots].sort().flatMap((root) => {
    const name = posix.basename(root)
    return isClusterName(name) ? [{ name, root }] : []
  })
}

/** A Flux Kustomization in a file: its name and its spec.path (repository-relative). */
export interface FluxKustomization {
  readonly name: string
  readonly path: string
}

/** The Flux Kustomizations a file declares; a file that does not parse declares none. */
export function fluxKustomizations(file: HeadFile): FluxKustomization[] {
  if (file.content.type !== 'file' || !/\.ya?ml$/.test(file.path)) return []
  const text = Buffer.from(file.content.bytes).toString('utf8')
  if (!text.includes('kustomize.toolkit.fluxcd.io')) return []
  return documents(text).flatMap((doc) => {
    if (!isRecord(doc) || doc['kind'] !== 'Kustomization' || typeof doc['apiVersion'] !== 'string') return []
    if (!doc['apiVersion'].startsWith('kustomize.toolkit.fluxcd.io/')) return []
    const metadata = isRecord(doc['metadata']) ? doc['metadata'] : {}
    const spec = isRecord(doc['spec']) ? doc['spec'] : {}
    const name = typeof metadata['name'] === 'string' ? metadata['name'] : ''
    return [{ name, path: normalDir(typeof spec['path'] === 'string' ? spec['path'] : '') }]
  })
}

/** Waves: each item a line of cluster-name globs (`staging`, `prod-*`); a cluster joins the first that matches. */
export function assignWaves(clusters: readonly ClusterSpec[], waves: readonly (readonly string[])[]): ClusterTarget[] {
  const matchers = waves.map((globs) => globs.map(compileGlob))
  return clusters.map((c) => {
    const index = matchers.length === 0 ? 0 : matchers.findIndex((wave) => wave.some((re) => re.test(c.name)))
    if (index === -1) {
      throw new ConfigurationError(`Cluster '${c.name}' matches no line of input 'waves': add it to a wave, or end 'waves' with a line '*'.`)
    }
    return { ...c, secret: secretName(c.name), wave: index + 1 }
  })
}

function documents(text: string): unknown[] {
  try {
    return parseAllDocuments(text, { logLevel: 'silent', uniqueKeys: false }).map((d) => {
      try {
        return d.errors.length > 0 ? undefined : d.toJS({ maxAliasCount: 100 })
      } catch {
        return undefined
      }
    })
  } catch {
    return []
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
