// RBAC helpers for the least-privilege tests: take one verb away from a role, and wait until
// new grants are in effect before an identity is used.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AuthorizationV1Api, type KubeConfig, type V1PolicyRule } from '@kubernetes/client-node'
import { parseAllDocuments } from 'yaml'
import { REPO_ROOT } from './cluster.ts'
import { waitFor } from './kube.ts'

/** A Role, ClusterRole or binding as the repository ships it. */
export interface RbacObject {
  readonly kind: string
  readonly metadata: { name: string; namespace?: string }
  readonly rules?: V1PolicyRule[]
  readonly roleRef?: { apiGroup: string; kind: string; name: string }
  readonly subjects?: { kind: string; name: string; namespace?: string }[]
}

/** The one object of `kind` in a shipped file under deploy/, e.g. shipped('rbac/drift-clusterrole.yaml', 'ClusterRole'). */
export function shipped(file: string, kind: string): RbacObject {
  const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', file), 'utf8'))
  const objects = docs.map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`)
    return d.toJS() as RbacObject
  })
  const found = objects.filter((o) => o.kind === kind)
  if (found.length !== 1) throw new Error(`${file}: expected one ${kind}, found ${found.length}`)
  return found[0] as RbacObject
}

/** (group, resource, verb) triples, sorted: what a role grants, comparable as a list. */
export function grants(rules: readonly V1PolicyRule[]): string[] {
  return rules.flatMap((r) => (r.apiGroups ?? []).flatMap((g) => (r.resources ?? []).flatMap((res) => r.verbs.map((v) => `${g || 'core'}/${res}:${v}`)))).sort()
}

/** The rules with one verb on one resource taken away (a rule naming several resources is split). */
export function without(rules: readonly V1PolicyRule[], group: string, resource: string, verb: string): V1PolicyRule[] {
  return rules.flatMap((r) => {
    if (!(r.apiGroups ?? []).includes(group) || !(r.resources ?? []).includes(resource)) return [r]
    const others = (r.resources ?? []).filter((x) => x !== resource)
    const kept = r.verbs.filter((v) => v !== verb)
    return [...(others.length > 0 ? [{ ...r, resources: others }] : []), ...(kept.length > 0 ? [{ ...r, resources: [resource], verbs: kept }] : [])]
  })
}

/**
 * The RBAC authorizer learns new bindings through an informer: waits until a ServiceAccount of
 * `namespace` is allowed every verb of `rules` there (asked with SubjectAccessReviews as admin).
 */
export async function grantsInEffect(admin: KubeConfig, namespace: string, serviceAccount: string, rules: readonly V1PolicyRule[]): Promise<void> {
  const authz = admin.makeApiClient(AuthorizationV1Api)
  const checks = rules.flatMap((r) =>
    (r.apiGroups ?? []).flatMap((group) =>
      (r.resources ?? []).flatMap((resource) =>
        r.verbs.map((verb) => ({ group, resource, verb, ...(r.resourceNames?.[0] === undefined ? {} : { name: r.resourceNames[0] }) })),
      ),
    ),
  )
  await waitFor(
    async () => {
      for (const c of checks) {
        const review = await authz.createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${namespace}:${serviceAccount}`,
              groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
              resourceAttributes: { namespace, group: c.group, resource: c.resource, verb: c.verb, ...('name' in c ? { name: c.name } : {}) },
            },
          },
        })
        if (review.status?.allowed !== true) return false
      }
      return true
    },
    { timeoutMs: 20_000, message: `the grants of ${namespace}/${serviceAccount} to take effect` },
  )
}
