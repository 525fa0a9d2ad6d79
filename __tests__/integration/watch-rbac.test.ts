// Least privilege for watch mode, proven against the real kube-apiserver (RBAC on): the rules
// of deploy/watch/clusterrole.yaml and leader-election-role.yaml as they ship are bound to a
// fresh ServiceAccount, and each verb is removed in turn to record what watch mode does
// without it: exit with one sentence naming the rule where it cannot serve, or go on with a
// warning naming it where it can. watch-deploy.test.ts runs the shipped files unchanged.

import { CoordinationV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node'
import { afterEach, describe, expect, it } from 'vitest'
import { messageOf } from '../../src/lib/errors.ts'
import { useCluster } from '../../test/support/context.ts'
import { grants, grantsInEffect, shipped, without } from '../../test/support/rbac.ts'
import { startWatch, type LogLine, type WatchHandle } from '../../test/support/watch.ts'

const cluster = useCluster()
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api)
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api)

const HR = 'helm.toolkit.fluxcd.io'
const LEASES = 'coordination.k8s.io'
const SA = 'helmrelease-trigger-watch'
const LEASE = 'helmrelease-trigger-watch'
const PREFIX = 'nebius.ai'
const DIGEST = `${PREFIX}/config-digest`
const ELECTION = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 300 }

const running: WatchHandle[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop().catch(() => undefined)))
})

// ---- the roles as shipped -------------------------------------------------------------------

const clusterRules = (): V1PolicyRule[] => shipped('watch/clusterrole.yaml', 'ClusterRole').rules ?? []
const leaseRules = (): V1PolicyRule[] => shipped('watch/leader-election-role.yaml', 'Role').rules ?? []
const keyRules = (): V1PolicyRule[] => shipped('watch/digest-key-role.yaml', 'Role').rules ?? []
const keyCreateRules = (): V1PolicyRule[] => shipped('watch/digest-key-create-role.yaml', 'Role').rules ?? []

/** Our one sentence for a refused request in `namespace`. */
function forbidden(verb: string, resource: string, group: string, namespace: string, name?: string): string {
  const what = `${group === '' ? resource : `${resource}.${group}`}${name === undefined ? '' : ` ${name}`}`
  return `Forbidden: cannot ${verb} ${what} in namespace ${namespace}. Grant the identity this RBAC rule: apiGroups: ["${group}"], resources: ["${resource}"], verbs: ["${verb}"] in a Role in namespace ${namespace} (or a ClusterRole).`
}

// ---- binding the rules to a fresh ServiceAccount ---------------------------------------------

/**
 * The ClusterRole (and, with leader election, the namespaced leader-election Role) of the
 * shipped files with `rules`, bound to a new ServiceAccount in `namespace`; returns the path of
 * a kubeconfig for its token once every grant is in effect.
 */
async function identity(
  namespace: string,
  rules: { cluster: V1PolicyRule[]; leases?: V1PolicyRule[]; key?: V1PolicyRule[]; keyCreate?: V1PolicyRule[] },
): Promise<string> {
  const role = shipped('watch/clusterrole.yaml', 'ClusterRole')
  const binding = shipped('watch/clusterrole.yaml', 'ClusterRoleBinding')
  const name = `${role.metadata.name}-${namespace}`
  const subjects = (binding.subjects ?? []).map((s) => ({ ...s, namespace }))
  await rbac.createClusterRole({ body: { metadata: { name }, rules: rules.cluster } })
  await rbac.createClusterRoleBinding({
    body: { metadata: { name }, roleRef: { ...(binding.roleRef ?? { apiGroup: '', kind: '', name: '' }), name }, subjects },
  })
  if (rules.leases !== undefined) {
    const leaseRole = shipped('watch/leader-election-role.yaml', 'Role')
    const leaseBinding = shipped('watch/leader-election-role.yaml', 'RoleBinding')
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name: leaseRole.metadata.name, namespace }, rules: rules.leases } })
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: leaseBinding.metadata.name, namespace },
        roleRef: leaseBinding.roleRef ?? { apiGroup: '', kind: '', name: '' },
        subjects: (leaseBinding.subjects ?? []).map((s) => ({ ...s, namespace })),
      },
    })
  }
  // The digest key Roles, in the namespace the scenario keeps the key in (digest-key-namespace):
  // the shipped get Role, and the opt-in create Role for the first start (unless keyCreate is []).
  const key = rules.key ?? keyRules()
  const keyCreate = rules.keyCreate ?? keyCreateRules()
  await bindKeyRole(namespace, 'watch/digest-key-role.yaml', key)
  if (keyCreate.length > 0) await bindKeyRole(namespace, 'watch/digest-key-create-role.yaml', keyCreate)
  const token = await cluster.serviceAccountToken(namespace, SA)
  await grantsInEffect(cluster.kubeconfig, namespace, SA, [...rules.cluster, ...(rules.leases ?? []), ...key, ...keyCreate])
  return cluster.kubeconfigFor(token, `watch-rbac-${namespace}`)
}

async function bindKeyRole(namespace: string, file: string, rules: V1PolicyRule[]): Promise<void> {
  const role = shipped(file, 'Role')
  const binding = shipped(file, 'RoleBinding')
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: role.metadata.name, namespace }, rules } })
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: binding.metadata.name, namespace },
      roleRef: binding.roleRef ?? { apiGroup: '', kind: '', name: '' },
      subjects: (binding.subjects ?? []).map((s) => ({ ...s, namespace })),
    },
  })
}

// ---- the scenario: a labelled source read by a release in view, and naming one out of view ----

type Kind = 'ConfigMap' | 'Secret'

interface Scenario {
  readonly namespace: string
  /** Not watched: its release `web` is reached with a GET, as the source's annotation names it. */
  readonly other: string
  readonly kind: Kind
}

async function writeSource(s: Scenario, level: string): Promise<void> {
  const metadata = {
    name: 'values',
    namespace: s.namespace,
    labels: { [`${PREFIX}/helmrelease-trigger-operator`]: 'true' },
    annotations: { [`${PREFIX}/helmreleases-name`]: 'web', [`${PREFIX}/helmreleases-namespace`]: s.other },
  }
  const data = { 'values.yaml': `level: ${level}\n` }
  const { namespace } = s
  if (s.kind === 'ConfigMap') {
    const body = { metadata, data }
    await cluster.core.replaceNamespacedConfigMap({ namespace, name: 'values', body }).catch(() => cluster.core.createNamespacedConfigMap({ namespace, body }))
  } else {
    const body = { metadata, stringData: data }
    await cluster.core.replaceNamespacedSecret({ namespace, name: 'values', body }).catch(() => cluster.core.createNamespacedSecret({ namespace, body }))
  }
}

async function deleteSource(s: Scenario): Promise<void> {
  if (s.kind === 'ConfigMap') await cluster.core.deleteNamespacedConfigMap({ namespace: s.namespace, name: 'values' })
  else await cluster.core.deleteNamespacedSecret({ namespace: s.namespace, name: 'values' })
}

/** Releases point at a HelmRepository that does not exist, so helm-controller leaves their metadata alone. */
async function scenario(prefix: string, kind: Kind = 'ConfigMap'): Promise<Scenario> {
  const s = { namespace: await cluster.createNamespace(prefix), other: await cluster.createNamespace(`${prefix}-x`), kind }
  await writeSource(s, 'one')
  await cluster.applyHelmRelease({ namespace: s.namespace, name: 'app', repository: 'absent', valuesFrom: [{ kind, name: 'values' }] })
  await cluster.applyHelmRelease({ namespace: s.other, name: 'web', repository: 'absent' })
  return s
}

function watchAs(s: Scenario, kubeconfigPath: string, election = false): WatchHandle {
  const w = startWatch({
    kubeconfigPath,
    inputs: {
      namespaces: s.namespace,
      'digest-key-namespace': s.namespace,
      // The source names a release in another namespace: allowed explicitly, as an operator would.
      'cross-namespace-targets': `${s.namespace}=${s.other}`,
      ...(election ? { 'leader-election': 'true', 'leader-election-namespace': s.namespace } : {}),
    },
    identity: 'watch-rbac',
    election: ELECTION,
  })
  running.push(w)
  return w
}

async function digestOf(namespace: string, name: string): Promise<string | undefined> {
  return (await cluster.getHelmRelease(namespace, name)).metadata.annotations?.[DIGEST]
}

async function events(namespace: string, reason: string): Promise<number> {
  return (await cluster.core.listNamespacedEvent({ namespace })).items.filter((e) => e.reason === reason).length
}

/** Waits for `count` Events of `reason` in `namespace` (each is written after its patch). */
async function eventually(namespace: string, reason: string, count: number): Promise<void> {
  await cluster.waitFor(async () => (await events(namespace, reason)) === count, { message: `${count} ${reason} Event(s) in ${namespace}` })
}

/** The run's error, once it ended. */
async function failure(w: WatchHandle): Promise<string> {
  return w.done.then(
    (report) => `ended without an error: ${JSON.stringify(report)}`,
    (error: unknown) => messageOf(error),
  )
}

const refusals = (w: WatchHandle): LogLine[] => w.lines.filter((l) => JSON.stringify(l).includes('Forbidden'))

/** Waits until `namespace/name` records a digest other than `before`; returns it. */
async function triggered(namespace: string, name: string, before: string | undefined, message: string): Promise<string> {
  return cluster.waitFor(
    async () => {
      const digest = await digestOf(namespace, name)
      return digest !== undefined && digest !== before ? digest : undefined
    },
    { message },
  )
}

// ---------------------------------------------------------------------------------------------

describe('deploy/watch roles', () => {
  it('grant exactly the calls watch mode makes; role.yaml the same as the ClusterRole; no wildcard', () => {
    expect(grants(clusterRules())).toEqual(
      [
        'core/configmaps:get',
        'core/configmaps:list',
        'core/configmaps:watch',
        'core/secrets:get',
        'core/secrets:list',
        'core/secrets:watch',
        `${HR}/helmreleases:get`,
        `${HR}/helmreleases:list`,
        `${HR}/helmreleases:watch`,
        `${HR}/helmreleases:patch`,
        'core/events:create',
      ].sort(),
    )
    expect(grants(shipped('watch/role.yaml', 'Role').rules ?? [])).toEqual(grants(clusterRules()))
    expect(grants(leaseRules())).toEqual([`${LEASES}/leases:create`, `${LEASES}/leases:get`, `${LEASES}/leases:update`])
    expect(keyRules()).toEqual([{ apiGroups: [''], resources: ['secrets'], resourceNames: ['helmrelease-trigger-digest-key'], verbs: ['get'] }])
    expect(grants(keyCreateRules())).toEqual(['core/secrets:create'])
    expect(JSON.stringify([clusterRules(), leaseRules(), keyRules(), keyCreateRules()])).not.toContain('*')
  })

  it('the scenario uses every granted verb: both releases triggered with their Events, the deletion reported', async () => {
    const s = await scenario('watch-rbac-ok')
    const w = watchAs(s, await identity(s.namespace, { cluster: clusterRules(), leases: leaseRules() }), true)
    await w.synced()
    const first = await triggered(s.namespace, 'app', undefined, 'the catch-up trigger of the release in view')
    const out = await triggered(s.other, 'web', undefined, 'the catch-up trigger of the release out of view (GET, then patch)')
    await writeSource(s, 'two')
    await triggered(s.namespace, 'app', first, 'the trigger after the change')
    await triggered(s.other, 'web', out, 'the trigger after the change, out of view')
    await deleteSource(s)
    await w.line('source deleted', { source: `ConfigMap/${s.namespace}/values` })
    await eventually(s.namespace, 'SourceDeleted', 1)
    await eventually(s.other, 'SourceDeleted', 1)
    await eventually(s.namespace, 'ConfigChanged', 2)
    await eventually(s.other, 'ConfigChanged', 2)
    expect((await w.readyz()).body).toBe('ok: synced; leading')
    expect(refusals(w)).toEqual([])
  })
})

describe('watch with one verb removed from clusterrole.yaml', () => {
  it.each([
    ['list', 'configmaps', '', 'ConfigMap'],
    ['list', 'secrets', '', 'Secret'],
    ['list', 'helmreleases', HR, 'ConfigMap'],
    ['watch', 'configmaps', '', 'ConfigMap'],
    ['watch', 'secrets', '', 'Secret'],
    ['watch', 'helmreleases', HR, 'ConfigMap'],
  ] as const)('without %s on %s: it exits at start with the rule to grant', async (verb, resource, group, kind) => {
    const s = await scenario(`watch-rbac-no${verb}`, kind)
    const rules = without(clusterRules(), group, resource, verb)
    expect(grants(rules)).not.toContain(`${group || 'core'}/${resource}:${verb}`)
    const w = watchAs(s, await identity(s.namespace, { cluster: rules }))
    expect(await failure(w)).toBe(forbidden(verb, resource, group, s.namespace))
    expect(w.lines.find((l) => l.msg === 'stopping: draining in-flight patches')).toMatchObject({ reason: 'error' })
    // Without a list nothing is in view, so nothing is patched. A refused watch comes right
    // after its own list, possibly after the other lists completed the sync: the start's
    // catch-up trigger (a granted patch) may then have happened, so it is not asserted.
    if (verb === 'list') {
      expect(await digestOf(s.namespace, 'app')).toBeUndefined()
      expect(await events(s.namespace, 'ConfigChanged')).toBe(0)
    }
  })

  it.each(['ConfigMap', 'Secret'] as const)('without get on %ss: a deletion is not reported, with a warning naming the rule; triggers go on', async (kind) => {
    const resource = kind === 'ConfigMap' ? 'configmaps' : 'secrets'
    const s = await scenario('watch-rbac-noget', kind)
    const w = watchAs(s, await identity(s.namespace, { cluster: without(clusterRules(), '', resource, 'get') }))
    await w.synced()
    const first = await triggered(s.namespace, 'app', undefined, 'the catch-up trigger at start')
    await deleteSource(s)
    const warning = await w.line('could not check a removed source', { source: `${kind}/${s.namespace}/values` })
    expect(warning).toMatchObject({ level: 'warning', error: forbidden('get', resource, '', s.namespace, 'values') })
    expect(w.lines.some((l) => l.msg === 'source deleted')).toBe(false)
    expect(await events(s.namespace, 'SourceDeleted')).toBe(0)
    // Still watching: the source back with new content triggers.
    await writeSource(s, 'three')
    await triggered(s.namespace, 'app', first, 'the trigger after the source came back')
    expect((await w.readyz()).body).toBe('ok: synced')
    expect(refusals(w)).toEqual([warning])
  })

  it('without get on helmreleases: a release out of view fails naming the rule, unpatched; the release in view is triggered', async () => {
    const s = await scenario('watch-rbac-nogethr')
    const w = watchAs(s, await identity(s.namespace, { cluster: without(clusterRules(), HR, 'helmreleases', 'get') }))
    await w.synced()
    const first = await triggered(s.namespace, 'app', undefined, 'the catch-up trigger of the release in view (from the list, no GET)')
    const failed = await w.line('release trigger failed', { release: `${s.other}/web` })
    expect(failed).toMatchObject({ level: 'error', reason: 'Forbidden', detail: forbidden('get', 'helmreleases', HR, s.other, 'web') })
    expect(await digestOf(s.other, 'web')).toBeUndefined()
    await writeSource(s, 'two')
    await triggered(s.namespace, 'app', first, 'the trigger after the change')
    expect((await w.metrics()).value('helmrelease_trigger_watch_triggers_total', { result: 'failed', reason: 'Forbidden' })).toBeGreaterThanOrEqual(1)
    await eventually(s.namespace, 'ConfigChanged', 2)
    expect(await events(s.other, 'ConfigChanged')).toBe(0)
  })

  it('without patch on helmreleases: each release run fails naming the rule; nothing written; it goes on', async () => {
    const s = await scenario('watch-rbac-nopatch')
    const w = watchAs(s, await identity(s.namespace, { cluster: without(clusterRules(), HR, 'helmreleases', 'patch') }))
    await w.synced()
    const failed = await w.line('release trigger failed', { release: `${s.namespace}/app` })
    expect(failed).toMatchObject({ level: 'error', reason: 'Forbidden', detail: forbidden('patch', 'helmreleases', HR, s.namespace, 'app') })
    await w.line('release trigger failed', { release: `${s.other}/web` })
    // The next change is tried again (and refused again): never stuck, never silent.
    const before = w.lines.filter((l) => l.msg === 'release trigger failed').length
    await writeSource(s, 'two')
    await cluster.waitFor(() => w.lines.filter((l) => l.msg === 'release trigger failed').length > before, { message: 'a second refused run' })
    expect(await digestOf(s.namespace, 'app')).toBeUndefined()
    expect(await digestOf(s.other, 'web')).toBeUndefined()
    expect(await events(s.namespace, 'ConfigChanged')).toBe(0)
    expect((await w.readyz()).body).toBe('ok: synced')
  })

  it('without create on events: a warning naming the rule; the triggers and the deletion report stand', async () => {
    const s = await scenario('watch-rbac-noevents')
    const w = watchAs(s, await identity(s.namespace, { cluster: without(clusterRules(), '', 'events', 'create') }))
    await w.synced()
    await triggered(s.namespace, 'app', undefined, 'the catch-up trigger at start')
    const warning = await w.line('could not record the Event', { release: `${s.namespace}/app` })
    expect(warning).toMatchObject({ level: 'warning', error: forbidden('create', 'events', '', s.namespace) })
    await triggered(s.other, 'web', undefined, 'the release out of view')
    await deleteSource(s)
    await w.line('source deleted', { source: `ConfigMap/${s.namespace}/values` })
    await cluster.waitFor(() => w.lines.filter((l) => l.msg === 'could not record the Event').length >= 3, {
      message: 'the warnings for both ConfigChanged Events and the SourceDeleted one',
    })
    expect(await events(s.namespace, 'ConfigChanged')).toBe(0)
    expect(await events(s.namespace, 'SourceDeleted')).toBe(0)
    expect(refusals(w).every((l) => l.msg === 'could not record the Event')).toBe(true)
  })
})

describe('watch --leader-election with one verb removed from leader-election-role.yaml', () => {
  it.each(['get', 'create'] as const)('without %s on leases: it exits without ever leading, naming the rule; nothing patched', async (verb) => {
    const s = await scenario(`watch-rbac-nolease${verb}`)
    const w = watchAs(s, await identity(s.namespace, { cluster: clusterRules(), leases: without(leaseRules(), LEASES, 'leases', verb) }), true)
    expect(await failure(w)).toBe(forbidden(verb, 'leases', LEASES, s.namespace, verb === 'create' ? undefined : LEASE))
    expect(w.lines.some((l) => String(l.msg).includes('now holds'))).toBe(false)
    await expect(coordination.readNamespacedLease({ namespace: s.namespace, name: LEASE })).rejects.toThrow()
    expect(await digestOf(s.namespace, 'app')).toBeUndefined()
  })

  it('without update on leases: it leads until the first renewal, then stops leading and exits naming the rule', async () => {
    const s = await scenario('watch-rbac-noleaseupdate')
    const w = watchAs(s, await identity(s.namespace, { cluster: clusterRules(), leases: without(leaseRules(), LEASES, 'leases', 'update') }), true)
    expect(await failure(w)).toBe(forbidden('update', 'leases', LEASES, s.namespace, LEASE))
    expect(w.lines.some((l) => l.msg === `leader election: watch-rbac now holds Lease ${s.namespace}/${LEASE}`)).toBe(true)
    // Created, never renewed nor released: the record is the one create wrote.
    const lease = await coordination.readNamespacedLease({ namespace: s.namespace, name: LEASE })
    expect(lease.spec).toMatchObject({ holderIdentity: 'watch-rbac', leaseTransitions: 0 })
    expect(lease.spec?.renewTime).toEqual(lease.spec?.acquireTime)
  })
})

describe('watch with only the shipped digest-key-role.yaml (digest-key-create-role.yaml not bound)', () => {
  it('no key yet: it exits at start in one sentence saying how to create the key; nothing written', async () => {
    const s = await scenario('watch-rbac-nokeycreate', 'Secret')
    const w = watchAs(s, await identity(s.namespace, { cluster: clusterRules(), keyCreate: [] }))
    const message = await failure(w)
    expect(message).toBe(
      `The digest key Secret ${s.namespace}/helmrelease-trigger-digest-key does not exist and this identity may not create it; create it once with \`kubectl -n ${s.namespace} create secret generic helmrelease-trigger-digest-key --from-literal=key="$(head -c 32 /dev/urandom | base64)"\`, or bind digest-key-create-role.yaml (deploy/rbac/, deploy/watch/) for the first run only and delete it afterwards.`,
    )
    expect(await digestOf(s.namespace, 'app')).toBeUndefined()
    await expect(cluster.core.readNamespacedSecret({ namespace: s.namespace, name: 'helmrelease-trigger-digest-key' })).rejects.toThrow()
  })

  it('the key created once by the operator: it only reads the key, and records the Secret keyed', async () => {
    const s = await scenario('watch-rbac-keyexists', 'Secret')
    const key = Buffer.alloc(32, 9).toString('base64')
    await cluster.core.createNamespacedSecret({
      namespace: s.namespace,
      body: { metadata: { name: 'helmrelease-trigger-digest-key', namespace: s.namespace }, data: { key } },
    })
    const w = watchAs(s, await identity(s.namespace, { cluster: clusterRules(), keyCreate: [] }))
    await w.synced()
    const recorded = await triggered(s.namespace, 'app', undefined, 'the catch-up trigger of the Secret source')
    expect(JSON.parse(recorded)).toEqual({ [`Secret/${s.namespace}/values`]: expect.stringMatching(/^hmac-sha256:[0-9a-f]{64}$/) })
    expect(refusals(w).filter((l) => JSON.stringify(l).includes('secrets'))).toEqual([])
  })
})
