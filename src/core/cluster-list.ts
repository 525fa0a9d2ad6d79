// The fleet's clusters as the `clusters` input names them: each a name and the root of its Flux
// tree in the repository. Pure; parsed once by the settings.

import { posix } from 'node:path'
import { ConfigurationError } from '../lib/errors.ts'

export interface ClusterSpec {
  readonly name: string
  /** Repository-relative directory, no leading `./`, no trailing `/`. */
  readonly root: string
}

/** What the `clusters` input asks for: the listed clusters, or every `clusters/*` bootstrap tree. */
export type ClusterList = { readonly kind: 'listed'; readonly clusters: readonly ClusterSpec[] } | { readonly kind: 'discover' }

// Usable as an artifact name, a concurrency group and (upper-cased) a secret name.
const CLUSTER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/

export function isClusterName(name: string): boolean {
  return CLUSTER_NAME.test(name)
}

/**
 * The `clusters` input: `discover`, or one cluster per item, `name=path` or a path (named after
 * its last directory).
 */
export function parseClusterList(items: readonly string[]): ClusterList | undefined {
  if (items.length === 0) return undefined
  if (items.length === 1 && items[0] === 'discover') return { kind: 'discover' }
  const clusters = items.map((item): ClusterSpec => {
    const eq = item.indexOf('=')
    const root = normalDir(eq === -1 ? item : item.slice(eq + 1))
    const name = eq === -1 ? posix.basename(root) : item.slice(0, eq).trim()
    if (root === '' || root.split('/').includes('..')) {
      throw new ConfigurationError(`Input 'clusters' has '${item}': give a directory inside the repository, such as prod-eu=clusters/prod-eu.`)
    }
    if (!isClusterName(name)) {
      throw new ConfigurationError(
        `Input 'clusters' has the cluster name '${name}': use letters, digits, '-', '_' and '.' (at most 63, starting and ending with a letter or digit), as in prod-eu=clusters/prod-eu.`,
      )
    }
    return { name, root }
  })
  const seen = new Map<string, string>()
  for (const c of clusters) {
    const secret = secretName(c.name)
    const other = seen.get(secret)
    if (other !== undefined) {
      throw new ConfigurationError(`Input 'clusters' names '${other}' and '${c.name}', which would read the same secret ${secret}: rename one of them.`)
    }
    seen.set(secret, c.name)
  }
  return { kind: 'listed', clusters }
}

/** Secret names allow only letters, digits and `_`: prod-eu → KUBECONFIG_PROD_EU. */
export function secretName(cluster: string): string {
  return `KUBECONFIG_${cluster.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`
}

export function normalDir(path: string): string {
  return posix.normalize(path.trim().replace(/^\.\//, '').replace(/^\/+/, '')).replace(/\/+$/, '').replace(/^\.$/, '')
}
