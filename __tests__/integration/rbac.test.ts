// Least privilege, proven against the real kube-apiserver (RBAC on): the manifests in
// deploy/rbac/ are applied as they ship (names and subjects substituted), a ServiceAccount
// token bound to exactly that role runs the bundled action, and each verb the code needs is
// then removed in turn to record what the action does without it.

import { readFileSync } from 'node:fs'
import { AuthorizationV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1PolicyRule } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { isObserved } from '../../test/support/flux.ts'
import { grants, grantsInEffect, shipped, without } from '../../test/support/rbac.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { triggerSecret } from '../../test/support/manifests.ts'
import { FIELD_MANAGER } from '../../src/kube/cluster.ts'

const cluster = useCluster()
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api)
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))

const HR = 'helm.toolkit.fluxcd.io'
const KS = 'kustomize.toolkit.fluxcd.io'

// ---- the manifests as shipped -------------------------------------------------------------

// ---- binding a role to a fresh ServiceAccount ---------------------------------------------

interface Identity {
  readonly namespace: string
  /** kubeconfig text for the ServiceAccount's token. */
  readonly kubeconfig: string
  readonly token: string
}

let serial = 0

/**
 * Applies the ClusterRole + ClusterRoleBinding of `file` (the role renamed uniquely, its rules
 * replaced by `rules` when given) bound to a new ServiceAccount in `namespace`.
 */
async function bindClusterRole(namespace: string, sa: string, file: string, rules?: V1PolicyRule[]): Promise<V1PolicyRule[]> {
  const role = shipped(`rbac/${file}`, 'ClusterRole')
  const binding = shipped(`rbac/${file}`, 'ClusterRoleBinding')
  const name = `${role.metadata.name}-${namespace}-${serial++}`
  const granted = rules ?? role.rules ?? []
  await rbac.createClusterRole({ body: { metadata: { name }, rules: granted } })
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { ...(binding.roleRef ?? { apiGroup: '', kind: '', name: '' }), name },
      subjects: (binding.subjects ?? []).map((s) => ({ ...s, name: sa, namespace })),
    },
  })
  return granted
}

/** Applies the namespaced Role + RoleBinding of a shipped file (trigger-role.yaml) in `namespace`, bound to `sa`. */
async function bindRole(namespace: string, sa: string, rules?: V1PolicyRule[], file = 'trigger-role.yaml'): Promise<V1PolicyRule[]> {
  const role = shipped(`rbac/${file}`, 'Role')
  const binding = shipped(`rbac/${file}`, 'RoleBinding')
  const granted = rules ?? role.rules ?? []
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: role.metadata.name, namespace }, rules: granted } })
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: binding.metadata.name, namespace },
      roleRef: binding.roleRef ?? { apiGroup: '', kind: '', name: '' },
      subjects: (binding.subjects ?? []).map((s) => ({ ...s, name: sa, namespace })),
    },
  })
  return granted
}

async function identity(namespace: string, sa: string, rules: readonly V1PolicyRule[]): Promise<Identity> {
  const token = await cluster.serviceAccountToken(namespace, sa)
  await grantsInEffect(cluster.kubeconfig, namespace, sa, rules)
  return { namespace, token, kubeconfig: readFileSync(await cluster.kubeconfigFor(token, sa), 'utf8') }
}

// ---- the scenario: one labelled ConfigMap changed, one release reading it --------------------

function source(namespace: string, value: string, targetNamespace = namespace): string {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ${namespace}
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: web
    nebius.ai/helmreleases-namespace: ${targetNamespace}
data:
  values.yaml: |
    level: ${value}
`
}

interface Scenario {
  readonly namespace: string
  readonly repo: Repo
  readonly before: string
  readonly after: string
}

/** The release points at a HelmRepository that does not exist, so helm-controller leaves its metadata alone. */
async function scenario(prefix: string, options: { targetNamespace?: string; liveConfigMap?: boolean } = {}): Promise<Scenario> {
  const namespace = await cluster.createNamespace(prefix)
  const target = options.targetNamespace ?? namespace
  await cluster.applyHelmRelease({ namespace: target, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: 'settings' }] })
  if (options.liveConfigMap !== false) {
    await cluster.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'settings', namespace }, data: { 'values.yaml': 'level: two\n' } } })
  }
  const repo = createRepo()
  repos.push(repo)
  repo.write({ 'cm.yaml': source(namespace, 'one', target) })
  const before = repo.commit('first')
  repo.write({ 'cm.yaml': source(namespace, 'two', target) })
  return { namespace, repo, before, after: repo.commit('second') }
}

function act(s: Scenario, id: Identity, inputs: Record<string, string> = {}): Promise<ActionRun> {
  return runAction({
    workspace: s.repo.dir,
    eventName: 'push',
    event: { before: s.before, after: s.after },
    sha: s.after,
    inputs: { kubeconfig: id.kubeconfig, wait: 'false', timeout: '20s', ...inputs },
  })
}

type Entry = { namespace: string; name: string; status: string; reason: string; message: string }
const outputs = (run: ActionRun, name: string): Entry[] => JSON.parse(run.outputs[name] ?? '[]')
const log = (run: ActionRun): string => `${run.stdout}\n${run.stderr}`

async function requestedAt(namespace: string): Promise<string | undefined> {
  return (await cluster.getHelmRelease(namespace, 'web')).metadata.annotations?.['reconcile.fluxcd.io/requestedAt']
}

async function events(namespace: string, reason: string): Promise<string[]> {
  const list = await cluster.core.listNamespacedEvent({ namespace })
  return list.items.filter((e) => e.involvedObject.name === 'web' && e.reason === reason).map((e) => e.message ?? '')
}

const SA = 'helmrelease-trigger'

describe('deploy/rbac manifests', () => {
  it('grant exactly the calls trigger mode makes, and apply adds only patch and create on the sources', () => {
    const trigger = grants(shipped('rbac/trigger-clusterrole.yaml', 'ClusterRole').rules ?? [])
    expect(trigger).toEqual(
      [
        `${HR}/helmreleases:get`,
        `${HR}/helmreleases:list`,
        `${HR}/helmreleases:watch`,
        `${HR}/helmreleases:patch`,
        'core/configmaps:get',
        'core/secrets:get',
        `${KS}/kustomizations:get`,
        'source.toolkit.fluxcd.io/ocirepositories:get',
        'source.toolkit.fluxcd.io/helmcharts:get',
        'source.toolkit.fluxcd.io/gitrepositories:get',
        'core/events:create',
      ].sort(),
    )
    expect(grants(shipped('rbac/trigger-role.yaml', 'Role').rules ?? [])).toEqual(trigger)
    expect(grants(shipped('rbac/trigger-apply-role.yaml', 'Role').rules ?? [])).toEqual([
      'core/configmaps:create',
      'core/configmaps:patch',
      'core/secrets:create',
      'core/secrets:patch',
    ])
    expect(grants(shipped('rbac/discover-clusterrole.yaml', 'ClusterRole').rules ?? [])).toEqual(
      [
        `${HR}/helmreleases:get`,
        `${HR}/helmreleases:list`,
        `${HR}/helmreleases:patch`,
        'core/configmaps:get',
        'core/configmaps:list',
        'core/secrets:get',
        'core/secrets:list',
      ].sort(),
    )
    expect(grants(shipped('rbac/recover-clusterrole.yaml', 'ClusterRole').rules ?? [])).toEqual(
      [`${HR}/helmreleases:get`, `${HR}/helmreleases:list`, `${HR}/helmreleases:watch`, `${HR}/helmreleases:patch`, 'core/events:create'].sort(),
    )
    // The key Role reads that one Secret and nothing else; create (not limitable to a name by RBAC,
    // and with get secrets it mints a ServiceAccount token) is only in the opt-in create Role.
    const key = shipped('rbac/digest-key-role.yaml', 'Role').rules ?? []
    expect(key).toEqual([{ apiGroups: [''], resources: ['secrets'], resourceNames: ['helmrelease-trigger-digest-key'], verbs: ['get'] }])
    expect(grants(shipped('rbac/digest-key-create-role.yaml', 'Role').rules ?? [])).toEqual(['core/secrets:create'])
    for (const file of [
      'trigger-clusterrole.yaml',
      'trigger-apply-role.yaml',
      'trigger-role.yaml',
      'digest-key-role.yaml',
      'digest-key-create-role.yaml',
      'discover-clusterrole.yaml',
      'recover-clusterrole.yaml',
    ]) {
      const namespaced = file.endsWith('-role.yaml')
      const role = shipped(`rbac/${file}`, namespaced ? 'Role' : 'ClusterRole')
      const binding = shipped(`rbac/${file}`, namespaced ? 'RoleBinding' : 'ClusterRoleBinding')
      expect(binding?.roleRef).toMatchObject({ kind: role?.kind, name: role?.metadata.name })
      expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: SA, namespace: 'flux-system' }])
      // No wildcard, no write verb beyond the ones named above.
      expect(JSON.stringify(role?.rules)).not.toContain('*')
    }
  })
})

describe('trigger with exactly trigger-clusterrole.yaml', () => {
  it('triggers the release and records the Event', async () => {
    const s = await scenario('rbac-ok')
    const id = await identity(s.namespace, SA, await bindClusterRole(s.namespace, SA, 'trigger-clusterrole.yaml'))
    const run = await act(s, id)
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ namespace: s.namespace, name: 'web', status: 'Triggered' }])
    expect(log(run)).not.toContain('Forbidden')
    expect(await requestedAt(s.namespace)).toBeDefined()
    const [event] = await events(s.namespace, 'ConfigChanged')
    expect(event).toContain(`Reconcile requested for commit ${s.after.slice(0, 12)}`)
    expect(event).toContain('https://github.example/acme/fleet/actions/runs/4242')
  })

  it('watches helm-controller to the outcome (wait: true) with the same role', async () => {
    const namespace = await cluster.createNamespace('rbac-wait')
    await cluster.applyHelmRepository(namespace)
    await cluster.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'settings', namespace }, data: { 'values.yaml': 'level: one\n' } } })
    await cluster.applyHelmRelease({ namespace, name: 'web', valuesFrom: [{ kind: 'ConfigMap', name: 'settings' }] })
    await cluster.waitForHelmReleaseReady(namespace, 'web')
    const repo = createRepo()
    repos.push(repo)
    repo.write({ 'cm.yaml': source(namespace, 'one') })
    const before = repo.commit('first')
    repo.write({ 'cm.yaml': source(namespace, 'two') })
    const s = { namespace, repo, before, after: repo.commit('second') }
    await cluster.core.replaceNamespacedConfigMap({
      namespace,
      name: 'settings',
      body: { metadata: { name: 'settings', namespace }, data: { 'values.yaml': 'level: two\n' } },
    })

    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'trigger-clusterrole.yaml'))
    const run = await act(s, id, { wait: 'true', timeout: '90s' })
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: expect.stringMatching(/^(Upgraded|Unchanged)$/) }])
    expect(log(run)).not.toContain('Forbidden')
  })
})

describe('trigger with one verb removed from trigger-clusterrole.yaml', () => {
  const base = (): V1PolicyRule[] => shipped('rbac/trigger-clusterrole.yaml', 'ClusterRole').rules ?? []

  async function runWithout(
    prefix: string,
    group: string,
    resource: string,
    verb: string,
    inputs: Record<string, string> = {},
  ): Promise<{ s: Scenario; run: ActionRun }> {
    const s = await scenario(prefix)
    const rules = without(base(), group, resource, verb)
    expect(grants(rules)).not.toContain(`${group || 'core'}/${resource}:${verb}`)
    const id = await identity(s.namespace, SA, await bindClusterRole(s.namespace, SA, 'trigger-clusterrole.yaml', rules))
    return { s, run: await act(s, id, inputs) }
  }

  it('patch helmreleases: the release fails with Forbidden naming the verb and the rule; nothing written', async () => {
    const { s, run } = await runWithout('rbac-nopatch', HR, 'helmreleases', 'patch')
    expect(run.exitCode).toBe(1)
    const [failed] = outputs(run, 'failed')
    expect(failed).toMatchObject({ namespace: s.namespace, name: 'web', status: 'Failed', reason: 'Forbidden' })
    expect(failed?.message).toBe(
      `Forbidden: cannot patch helmreleases.${HR} web in namespace ${s.namespace}. Grant the identity this RBAC rule: apiGroups: ["${HR}"], resources: ["helmreleases"], verbs: ["patch"] in a Role in namespace ${s.namespace} (or a ClusterRole).`,
    )
    expect(await requestedAt(s.namespace)).toBeUndefined()
    expect(await events(s.namespace, 'ConfigChanged')).toEqual([])
  })

  it('get helmreleases: the release fails with Forbidden naming get', async () => {
    const { s, run } = await runWithout('rbac-noget', HR, 'helmreleases', 'get')
    expect(run.exitCode).toBe(1)
    const [failed] = outputs(run, 'failed')
    expect(failed).toMatchObject({ name: 'web', status: 'Failed', reason: 'Forbidden' })
    expect(failed?.message).toContain(`Forbidden: cannot get helmreleases.${HR} web in namespace ${s.namespace}`)
    expect(failed?.message).toContain('verbs: ["get"]')
    expect(await requestedAt(s.namespace)).toBeUndefined()
  })

  it('get configmaps: wait-for-apply cannot read the source; the run fails before any patch', async () => {
    const { s, run } = await runWithout('rbac-nocm', '', 'configmaps', 'get')
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain(
      `::error::Forbidden: cannot get configmaps settings in namespace ${s.namespace}. Grant the identity this RBAC rule: apiGroups: [""], resources: ["configmaps"], verbs: ["get"]`,
    )
    expect(await requestedAt(s.namespace)).toBeUndefined()
  })

  it('create events: a warning naming the rule; the trigger itself succeeds', async () => {
    const { s, run } = await runWithout('rbac-noevents', '', 'events', 'create')
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'Triggered' }])
    expect(run.stdout).toContain(`::warning::${s.namespace}/web: could not record the Event: Forbidden: cannot create events in namespace ${s.namespace}.`)
    expect(run.stdout).toContain('resources: ["events"], verbs: ["create"]')
    expect(await requestedAt(s.namespace)).toBeDefined()
    expect(await events(s.namespace, 'ConfigChanged')).toEqual([])
  })

  it('list helmreleases: discovery degrades with a warning naming the rule; annotated targets still trigger', async () => {
    const { s, run } = await runWithout('rbac-nolist', HR, 'helmreleases', 'list')
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'Triggered' }])
    expect(run.stdout).toContain(
      `::warning::Discovery could not list HelmReleases in namespace ${s.namespace} (Forbidden: cannot list helmreleases.${HR} in namespace ${s.namespace}.`,
    )
    expect(run.stdout).toContain('verbs: ["list"]')
    // with discover: false nothing is listed, so nothing is denied
    const quiet = await act(s, { namespace: s.namespace, token: '', kubeconfig: await kubeconfigOf(s.namespace) }, { discover: 'false', force: 'true' })
    expect(quiet.exitCode, log(quiet)).toBe(0)
    expect(log(quiet)).not.toContain('Forbidden')
  })

  // Recorded as the code behaves today: the watch's 403 reaches the log as a bare
  // "Forbidden" (client-node's Watch throws a plain Error with statusCode, which classify()
  // does not recognise), so the message names no rule and the watch is retried until the
  // timeout instead of failing at once. Reported as a bug; the release itself was patched.
  it('watch helmreleases (wait: true): named once, then the wait polls with GETs until the timeout', async () => {
    const { s, run } = await runWithout('rbac-nowatch', HR, 'helmreleases', 'watch', { wait: 'true', timeout: '8s' })
    expect(run.exitCode).toBe(1)
    expect(await requestedAt(s.namespace)).toBeDefined()
    expect(outputs(run, 'failed')).toMatchObject([{ name: 'web', status: 'TimedOut' }])
    expect(run.stdout).toContain(`::warning::Forbidden: cannot watch helmreleases.helm.toolkit.fluxcd.io in namespace ${s.namespace}.`)
    expect(run.stdout).toContain('verbs: ["watch"]')
    expect(run.stdout).toContain(`Polling the releases in ${s.namespace} instead.`)
    expect(run.stdout).not.toContain('failed (Forbidden); retrying')
  })
})

/** The kubeconfig of the ServiceAccount SA of a namespace bound earlier (a fresh token). */
async function kubeconfigOf(namespace: string): Promise<string> {
  return readFileSync(await cluster.kubeconfigFor(await cluster.serviceAccountToken(namespace, SA), SA), 'utf8')
}

describe('apply: true', () => {
  it('without trigger-apply-role.yaml: the server-side apply is refused, naming patch and create', async () => {
    const s = await scenario('rbac-apply-no', { liveConfigMap: false })
    const id = await identity(s.namespace, SA, await bindClusterRole(s.namespace, SA, 'trigger-clusterrole.yaml'))
    const run = await act(s, id, { apply: 'true' })
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain(`::error::Forbidden: cannot patch configmaps settings in namespace ${s.namespace}.`)
    expect(run.stdout).toContain('resources: ["configmaps"], verbs: ["patch", "create"]')
    expect(await requestedAt(s.namespace)).toBeUndefined()
  })

  it('with it bound too: creates the missing ConfigMap and triggers', async () => {
    const s = await scenario('rbac-apply', { liveConfigMap: false })
    const rules = [
      ...(await bindClusterRole(s.namespace, SA, 'trigger-clusterrole.yaml')),
      ...(await bindRole(s.namespace, SA, undefined, 'trigger-apply-role.yaml')),
    ]
    const id = await identity(s.namespace, SA, rules)
    const run = await act(s, id, { apply: 'true' })
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'Triggered' }])
    const cm = await cluster.core.readNamespacedConfigMap({ namespace: s.namespace, name: 'settings' })
    expect(cm.data?.['values.yaml']).toBe('level: two\n')
  })

  it('patch alone updates an existing ConfigMap; creating a missing one also needs create', async () => {
    const applyRules = shipped('rbac/trigger-apply-role.yaml', 'Role').rules ?? []
    const patchOnly = without(without(applyRules, '', 'configmaps', 'create'), '', 'secrets', 'create')

    const existing = await scenario('rbac-apply-upd', { liveConfigMap: false })
    // As a previous apply run left it: apply never forces, so the fields must be ours to update.
    await cluster.core.patchNamespacedConfigMap(
      {
        namespace: existing.namespace,
        name: 'settings',
        fieldManager: FIELD_MANAGER,
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: existing.namespace }, data: { 'values.yaml': 'level: one\n' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )
    const updater = await identity(existing.namespace, SA, [
      ...(await bindClusterRole(existing.namespace, SA, 'trigger-clusterrole.yaml')),
      ...(await bindRole(existing.namespace, SA, patchOnly, 'trigger-apply-role.yaml')),
    ])
    const updated = await act(existing, updater, { apply: 'true' })
    expect(updated.exitCode, log(updated)).toBe(0)
    expect((await cluster.core.readNamespacedConfigMap({ namespace: existing.namespace, name: 'settings' })).data?.['values.yaml']).toBe('level: two\n')

    // The apiserver checks `create` for an apply that would create the object. Our message
    // names the request's verb (patch) although the missing grant is create: reported as a bug,
    // so only the refusal itself is asserted here.
    const missing = await scenario('rbac-apply-new', { liveConfigMap: false })
    const creator = await identity(missing.namespace, SA, [
      ...(await bindClusterRole(missing.namespace, SA, 'trigger-clusterrole.yaml')),
      ...(await bindRole(missing.namespace, SA, patchOnly, 'trigger-apply-role.yaml')),
    ])
    const refused = await act(missing, creator, { apply: 'true' })
    expect(refused.exitCode).toBe(1)
    expect(refused.stdout).toMatch(/::error::Forbidden: cannot \w+ configmaps settings in namespace /)
    await expect(cluster.core.readNamespacedConfigMap({ namespace: missing.namespace, name: 'settings' })).rejects.toThrow()
    expect(await requestedAt(missing.namespace)).toBeUndefined()
  })
})

describe('the namespaced trigger-role.yaml', () => {
  let configNs: string
  beforeAll(async () => {
    configNs = await cluster.createNamespace('rbac-role')
  })

  it('is enough for releases in its own namespace', async () => {
    const s = await scenario('rbac-role-ok')
    const id = await identity(s.namespace, SA, await bindRole(s.namespace, SA))
    const run = await act(s, id)
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'Triggered' }])
    expect(await events(s.namespace, 'ConfigChanged')).toHaveLength(1)
  })

  it('denies a target in another namespace, naming that namespace', async () => {
    const s = await scenario('rbac-role-x', { targetNamespace: configNs })
    const id = await identity(s.namespace, SA, await bindRole(s.namespace, SA))
    // Allowed by cross-namespace-targets, so the Role is what refuses it.
    const run = await act(s, id, { 'cross-namespace-targets': `${s.namespace}=${configNs}` })
    expect(run.exitCode).toBe(1)
    const [failed] = outputs(run, 'failed')
    expect(failed).toMatchObject({ namespace: configNs, name: 'web', reason: 'Forbidden' })
    expect(failed?.message).toContain(`Forbidden: cannot get helmreleases.${HR} web in namespace ${configNs}`)
    expect(await requestedAt(configNs)).toBeUndefined()
  })
})

// ---- a Secret source: the digest key Role ---------------------------------------------------

/** A labelled Secret changed in the repository (pin), live with the new value, read by release `web`. */
async function secretScenario(prefix: string): Promise<Scenario & { keyNamespace: string }> {
  const namespace = await cluster.createNamespace(prefix)
  const keyNamespace = await cluster.createNamespace(`${prefix}-key`)
  await cluster.applyHelmRelease({ namespace, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'Secret', name: 'creds' }] })
  await cluster.core.createNamespacedSecret({ namespace, body: { metadata: { name: 'creds', namespace }, stringData: { pin: '483920' } } })
  const manifest = (pin: string) => triggerSecret({ name: 'creds', namespace, releases: 'web', stringData: { pin } })
  const repo = createRepo()
  repos.push(repo)
  repo.write({ 'secret.yaml': manifest('105733') })
  const before = repo.commit('first')
  repo.write({ 'secret.yaml': manifest('483920') })
  return { namespace, keyNamespace, repo, before, after: repo.commit('second') }
}

/** digest-key-role.yaml (or `file`) in `keyNamespace`, bound to the ServiceAccount of `namespace`. */
async function bindKeyRole(keyNamespace: string, namespace: string, file = 'digest-key-role.yaml'): Promise<V1PolicyRule[]> {
  const role = shipped(`rbac/${file}`, 'Role')
  const binding = shipped(`rbac/${file}`, 'RoleBinding')
  const granted = role.rules ?? []
  await rbac.createNamespacedRole({ namespace: keyNamespace, body: { metadata: { name: role.metadata.name, namespace: keyNamespace }, rules: granted } })
  await rbac.createNamespacedRoleBinding({
    namespace: keyNamespace,
    body: {
      metadata: { name: binding.metadata.name, namespace: keyNamespace },
      roleRef: binding.roleRef ?? { apiGroup: '', kind: '', name: '' },
      subjects: (binding.subjects ?? []).map((x) => ({ ...x, name: SA, namespace })),
    },
  })
  return granted
}

async function configDigest(namespace: string): Promise<Record<string, string>> {
  return JSON.parse((await cluster.getHelmRelease(namespace, 'web')).metadata.annotations?.['nebius.ai/config-digest'] ?? '{}') as Record<string, string>
}

const KEY_SECRET = 'helmrelease-trigger-digest-key'

async function keySecret(namespace: string): Promise<Buffer | undefined> {
  const secret = await cluster.core.readNamespacedSecret({ namespace, name: KEY_SECRET }).catch(() => undefined)
  return secret === undefined ? undefined : Buffer.from(secret.data?.['key'] ?? '', 'base64')
}

describe('a Secret source: trigger-role.yaml plus digest-key-role.yaml', () => {
  it('no key yet and only the shipped get Role: the run fails in one sentence saying how to create the key, and writes nothing', async () => {
    const s = await secretScenario('rbac-keyget')
    await bindRole(s.namespace, SA)
    const key = await bindKeyRole(s.keyNamespace, s.namespace)
    const id = await identity(s.namespace, SA, shipped('rbac/trigger-role.yaml', 'Role').rules ?? [])
    await waitForKeyGrant(s.keyNamespace, s.namespace, key)
    const run = await act(s, id, { 'digest-key-namespace': s.keyNamespace })
    expect(run.exitCode).toBe(1)
    expect(log(run)).toContain(
      `The digest key Secret ${s.keyNamespace}/${KEY_SECRET} does not exist and this identity may not create it; create it once with \`kubectl -n ${s.keyNamespace} create secret generic ${KEY_SECRET} --from-literal=key="$(head -c 32 /dev/urandom | base64)"\`, or bind digest-key-create-role.yaml (deploy/rbac/, deploy/watch/) for the first run only and delete it afterwards.`,
    )
    // Never the generic advice to grant create secrets.
    expect(log(run)).not.toContain('Grant the identity this RBAC rule')
    expect(await keySecret(s.keyNamespace)).toBeUndefined()
    expect(await requestedAt(s.namespace)).toBeUndefined()
    expect(await configDigest(s.namespace)).toEqual({})
    expect(await events(s.namespace, 'ConfigChanged')).toEqual([])
  })

  it('with digest-key-create-role.yaml bound for the first run: creates the key and records the Secret keyed; its digest is nowhere in the run', async () => {
    const s = await secretScenario('rbac-key')
    await bindRole(s.namespace, SA)
    const key = [...(await bindKeyRole(s.keyNamespace, s.namespace)), ...(await bindKeyRole(s.keyNamespace, s.namespace, 'digest-key-create-role.yaml'))]
    const id = await identity(s.namespace, SA, shipped('rbac/trigger-role.yaml', 'Role').rules ?? [])
    await waitForKeyGrant(s.keyNamespace, s.namespace, key)
    const run = await act(s, id, { 'digest-key-namespace': s.keyNamespace })
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ namespace: s.namespace, name: 'web', status: 'Triggered' }])
    expect(await keySecret(s.keyNamespace)).toHaveLength(32)
    expect(await configDigest(s.namespace)).toEqual({ [`Secret/${s.namespace}/creds`]: expect.stringMatching(/^hmac-sha256:[0-9a-f]{64}$/) })
    const [event] = await events(s.namespace, 'ConfigChanged')
    expect(event).toContain(`Secret/${s.namespace}/creds (changed)`)
  })

  it('the key created once by the operator and only the shipped get Role: records the Secret keyed with that key', async () => {
    const s = await secretScenario('rbac-keymade')
    const bytes = Buffer.alloc(32, 7).toString('base64')
    await cluster.core.createNamespacedSecret({
      namespace: s.keyNamespace,
      body: { metadata: { name: KEY_SECRET, namespace: s.keyNamespace }, data: { key: bytes } },
    })
    await bindRole(s.namespace, SA)
    const key = await bindKeyRole(s.keyNamespace, s.namespace)
    const id = await identity(s.namespace, SA, shipped('rbac/trigger-role.yaml', 'Role').rules ?? [])
    await waitForKeyGrant(s.keyNamespace, s.namespace, key)
    const run = await act(s, id, { 'digest-key-namespace': s.keyNamespace })
    expect(run.exitCode, log(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ namespace: s.namespace, name: 'web', status: 'Triggered' }])
    expect(log(run)).not.toContain('Forbidden')
    expect((await keySecret(s.keyNamespace))?.toString('base64')).toBe(bytes)
    expect(await configDigest(s.namespace)).toEqual({ [`Secret/${s.namespace}/creds`]: expect.stringMatching(/^hmac-sha256:[0-9a-f]{64}$/) })
  })

  it('without it: the run fails before any patch, naming the rule', async () => {
    const s = await secretScenario('rbac-nokey')
    const id = await identity(s.namespace, SA, await bindRole(s.namespace, SA))
    const run = await act(s, id, { 'digest-key-namespace': s.keyNamespace })
    expect(run.exitCode).toBe(1)
    expect(log(run)).toContain(`Forbidden: cannot get secrets helmrelease-trigger-digest-key in namespace ${s.keyNamespace}`)
    expect(await requestedAt(s.namespace)).toBeUndefined()
  })
})

/** The key Role's grants in `keyNamespace` for the ServiceAccount of `namespace`, in effect. */
async function waitForKeyGrant(keyNamespace: string, namespace: string, rules: readonly V1PolicyRule[]): Promise<void> {
  const authz = cluster.kubeconfig.makeApiClient(AuthorizationV1Api)
  await cluster.waitFor(
    async () => {
      for (const r of rules) {
        for (const verb of r.verbs) {
          const review = await authz.createSubjectAccessReview({
            body: {
              spec: {
                user: `system:serviceaccount:${namespace}:${SA}`,
                groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
                resourceAttributes: {
                  namespace: keyNamespace,
                  group: '',
                  resource: 'secrets',
                  verb,
                  ...(r.resourceNames?.[0] === undefined ? {} : { name: r.resourceNames[0] }),
                },
              },
            },
          })
          if (review.status?.allowed !== true) return undefined
        }
      }
      return true
    },
    { message: `the digest key grants in ${keyNamespace}` },
  )
}

// ---- discover and recover, each with exactly its own role ----------------------------------

const LABEL = 'nebius.ai/helmrelease-trigger-operator'

async function labelOf(namespace: string, name = 'web'): Promise<string | undefined> {
  return (await cluster.getHelmRelease(namespace, name)).metadata.labels?.[LABEL]
}

function runMode(mode: 'discover' | 'recover', id: Identity, inputs: Record<string, string>): Promise<ActionRun> {
  const repo = createRepo()
  repos.push(repo)
  const sha = repo.commit('empty')
  return runAction({
    workspace: repo.dir,
    eventName: 'workflow_dispatch',
    event: {},
    sha,
    inputs: { mode, kubeconfig: id.kubeconfig, namespaces: id.namespace, wait: 'false', ...inputs },
  })
}

/**
 * An unlabelled release reading a labelled ConfigMap (discover labels it), and a second
 * labelled ConfigMap naming a release in another namespace (looked up with `get`).
 * Both are suspended and left only once helm-controller has observed them: a status write
 * between discover's list and its patch would make it re-read the release, which a role
 * without `get` refuses.
 */
async function discoverScenario(prefix: string): Promise<{ namespace: string; other: string }> {
  const namespace = await cluster.createNamespace(prefix)
  const other = await cluster.createNamespace(`${prefix}-x`)
  const suspended = { suspend: true }
  await cluster.applyHelmRelease({ namespace, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: 'settings' }], spec: suspended })
  await cluster.applyHelmRelease({ namespace: other, name: 'api', repository: 'absent', spec: suspended })
  for (const [ns, name] of [
    [namespace, 'web'],
    [other, 'api'],
  ] as const) {
    await cluster.waitFor(async () => isObserved(await cluster.getHelmRelease(ns, name)), {
      timeoutMs: 60_000,
      message: `helm-controller to observe ${ns}/${name}`,
    })
  }
  const labelled = (name: string, target: string, targetNamespace: string) => ({
    metadata: {
      name,
      namespace,
      labels: { [LABEL]: 'true' },
      annotations: { 'nebius.ai/helmreleases-name': target, 'nebius.ai/helmreleases-namespace': targetNamespace },
    },
    data: { 'values.yaml': 'level: one\n' },
  })
  await cluster.core.createNamespacedConfigMap({ namespace, body: labelled('settings', 'web', namespace) })
  await cluster.core.createNamespacedConfigMap({ namespace, body: labelled('elsewhere', 'api', other) })
  return { namespace, other }
}

describe('discover with exactly discover-clusterrole.yaml', () => {
  const base = (): V1PolicyRule[] => shipped('rbac/discover-clusterrole.yaml', 'ClusterRole').rules ?? []

  it('labels the release that uses valuesFrom, with no Forbidden anywhere', async () => {
    const { namespace } = await discoverScenario('rbac-disc')
    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'discover-clusterrole.yaml'))
    const run = await runMode('discover', id, {})
    expect(run.exitCode, log(run)).toBe(0)
    expect(log(run)).not.toContain('Forbidden')
    expect(await labelOf(namespace)).toBe('true')
  })

  it.each([
    ['helmreleases', 'list', 'fails', HR, (ns: string) => `::error::Forbidden: cannot list helmreleases.${HR} in namespace ${ns}.`],
    ['helmreleases', 'patch', 'fails', HR, (ns: string) => `Forbidden: cannot patch helmreleases.${HR} web in namespace ${ns}.`],
    ['helmreleases', 'get', 'fails', HR, (_: string, other: string) => `Forbidden: cannot get helmreleases.${HR} api in namespace ${other}.`],
    ['configmaps', 'list', 'warns', '', (ns: string) => `::warning::Could not list ConfigMaps in ${ns} (Forbidden: cannot list configmaps in namespace ${ns}.`],
    [
      'configmaps',
      'get',
      'warns',
      '',
      (ns: string) => `::warning::Could not read ConfigMap/${ns}/settings (Forbidden: cannot get configmaps settings in namespace ${ns}.`,
    ],
    ['secrets', 'list', 'warns', '', (ns: string) => `::warning::Could not list Secrets in ${ns} (Forbidden: cannot list secrets in namespace ${ns}.`],
  ] as const)('without %s %s: it %s, naming the rule', async (resource, verb, effect, group, expected) => {
    const { namespace, other } = await discoverScenario(`rbac-disc-no${verb}`)
    const rules = without(base(), group, resource, verb)
    expect(grants(rules)).not.toContain(`${group || 'core'}/${resource}:${verb}`)
    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'discover-clusterrole.yaml', rules))
    const run = await runMode('discover', id, {})
    expect(run.exitCode, log(run)).toBe(effect === 'fails' ? 1 : 0)
    expect(run.stdout).toContain(expected(namespace, other))
    expect(run.stdout).toContain(`resources: ["${resource}"], verbs: ["${verb}"]`)
    // Only a denied list or patch keeps the label from being written.
    expect(await labelOf(namespace)).toBe(verb === 'patch' || (resource === 'helmreleases' && verb === 'list') ? undefined : 'true')
  })
})

describe('recover with exactly recover-clusterrole.yaml', () => {
  const base = (): V1PolicyRule[] => shipped('rbac/recover-clusterrole.yaml', 'ClusterRole').rules ?? []

  /** A release helm-controller has marked Ready=False (its chart source does not exist). */
  async function failing(prefix: string): Promise<string> {
    const namespace = await cluster.createNamespace(prefix)
    await cluster.applyHelmRelease({ namespace, name: 'web', repository: 'absent' })
    await cluster.waitFor(
      async () => (await cluster.getHelmRelease(namespace, 'web')).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'False') ?? false,
      {
        timeoutMs: 60_000,
        message: 'helm-controller to mark the release Ready=False',
      },
    )
    return namespace
  }
  // Every failure counts as transient here: the role, not the pattern, is under test.
  const inputs = { 'recover-patterns': '.' }

  it('re-triggers the failed release with requestedAt + resetAt and records the Event', async () => {
    const namespace = await failing('rbac-rec')
    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'recover-clusterrole.yaml'))
    const run = await runMode('recover', id, inputs)
    expect(run.exitCode, log(run)).toBe(0)
    expect(log(run)).not.toContain('Forbidden')
    expect(outputs(run, 'triggered')).toMatchObject([{ namespace, name: 'web', status: 'Triggered' }])
    const annotations = (await cluster.getHelmRelease(namespace, 'web')).metadata.annotations ?? {}
    expect(annotations['reconcile.fluxcd.io/resetAt']).toBe(annotations['reconcile.fluxcd.io/requestedAt'])
    expect(await events(namespace, 'RecoveryRequested')).toHaveLength(1)
  })

  it('without list helmreleases: the run fails naming the rule; nothing written', async () => {
    const namespace = await failing('rbac-rec-nolist')
    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'recover-clusterrole.yaml', without(base(), HR, 'helmreleases', 'list')))
    const run = await runMode('recover', id, inputs)
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain(`::error::Forbidden: cannot list helmreleases.${HR} in namespace ${namespace}.`)
    expect(run.stdout).toContain('resources: ["helmreleases"], verbs: ["list"]')
    expect(await requestedAt(namespace)).toBeUndefined()
  })

  it('without patch helmreleases: the release fails with Forbidden naming patch; nothing written', async () => {
    const namespace = await failing('rbac-rec-nopatch')
    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'recover-clusterrole.yaml', without(base(), HR, 'helmreleases', 'patch')))
    const run = await runMode('recover', id, inputs)
    expect(run.exitCode).toBe(1)
    const [failed] = outputs(run, 'failed')
    expect(failed).toMatchObject({ namespace, name: 'web', status: 'Failed', reason: 'Forbidden' })
    expect(failed?.message).toContain(`Forbidden: cannot patch helmreleases.${HR} web in namespace ${namespace}.`)
    expect(failed?.message).toContain('verbs: ["patch"]')
    expect(await requestedAt(namespace)).toBeUndefined()
  })

  it('without create events: a warning naming the rule; the recovery stands', async () => {
    const namespace = await failing('rbac-rec-noevents')
    const id = await identity(namespace, SA, await bindClusterRole(namespace, SA, 'recover-clusterrole.yaml', without(base(), '', 'events', 'create')))
    const run = await runMode('recover', id, inputs)
    expect(run.exitCode, log(run)).toBe(0)
    expect(run.stdout).toContain(`::warning::${namespace}/web: could not record the Event: Forbidden: cannot create events in namespace ${namespace}.`)
    expect(await requestedAt(namespace)).toBeDefined()
  })
})
