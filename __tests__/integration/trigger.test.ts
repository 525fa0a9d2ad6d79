// The bundled action against the real kube-apiserver (RBAC on), over real git commits:
// merge-patch semantics, idempotence, dry run, suspend, missing and cross-namespace
// releases, RBAC denials and bad input. wait: false — outcomes are the e2e tests' job.

import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO_ROOT } from '../../test/support/cluster.ts'
import { afterAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { render } from '../../test/support/markdown.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))

function source(opts: { namespace: string; targets: string; targetNamespace?: string; value: string; name?: string }): string {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${opts.name ?? 'settings'}
  namespace: ${opts.namespace}
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: "${opts.targets}"
${opts.targetNamespace === undefined ? '' : `    nebius.ai/helmreleases-namespace: ${opts.targetNamespace}\n`}data:
  values.yaml: |
    level: ${opts.value}
`
}

async function liveConfigMap(namespace: string, value: string, name = 'settings'): Promise<void> {
  await cluster.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, namespace }, data: { 'values.yaml': `level: ${value}\n` } } })
}

/** A release helm-controller cannot act on (its chart source does not exist): we only look at what we wrote. */
async function release(namespace: string, name: string, extra: { suspend?: boolean; annotations?: Record<string, string>; valuesFrom?: boolean } = {}) {
  await cluster.applyHelmRelease({
    namespace,
    name,
    repository: 'absent',
    annotations: extra.annotations,
    ...(extra.valuesFrom ? { valuesFrom: [{ kind: 'ConfigMap' as const, name: 'settings' }] } : {}),
    ...(extra.suspend ? { spec: { suspend: true } } : {}),
  })
}

interface Push {
  readonly repo: Repo
  readonly before: string
  readonly after: string
}

function commitPair(files1: Record<string, string>, files2: Record<string, string>): Push {
  const repo = createRepo()
  repos.push(repo)
  repo.write(files1)
  const before = repo.commit('first')
  repo.write(files2)
  const after = repo.commit('second')
  return { repo, before, after }
}

function act(p: Push, inputs: Record<string, string> = {}): Promise<ActionRun> {
  return runAction({
    workspace: p.repo.dir,
    eventName: 'push',
    event: { before: p.before, after: p.after },
    sha: p.after,
    inputs: { kubeconfig, wait: 'false', timeout: '20s', ...inputs },
  })
}

/** What the runner shows: its log without the ::add-mask:: commands it consumes, the summary and the outputs. */
const visible = (run: ActionRun): string =>
  [...`${run.stdout}\n${run.stderr}`.split('\n').filter((l) => !l.startsWith('::add-mask::')), run.summary, ...Object.values(run.outputs)].join('\n')

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

const outputs = (run: ActionRun, name: string): { namespace: string; name: string; status: string; reason: string; message: string; token?: string }[] =>
  JSON.parse(run.outputs[name] ?? '[]')

async function annotationsOf(namespace: string, name: string): Promise<Record<string, string>> {
  return (await cluster.getHelmRelease(namespace, name)).metadata.annotations ?? {}
}

/** The controllers touch status for a while after creation; wait until the object is quiet. */
async function settledResourceVersion(namespace: string, name: string): Promise<string> {
  let last = ''
  let since = Date.now()
  return cluster.waitFor(
    async () => {
      const rv = (await cluster.getHelmRelease(namespace, name)).metadata.resourceVersion ?? ''
      if (rv !== last) {
        last = rv
        since = Date.now()
      }
      return Date.now() - since > 3_000 && rv
    },
    { timeoutMs: 60_000, intervalMs: 250, message: 'a quiet HelmRelease' },
  )
}

describe('trigger against the real apiserver', () => {
  it('merge-patches only our keys, keeps the others, and is idempotent on a re-run', async () => {
    const ns = await cluster.createNamespace('it-patch')
    await release(ns, 'web', { annotations: { 'team.example/owner': 'platform' }, valuesFrom: true })
    await liveConfigMap(ns, 'two')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )

    const first = await act(p)
    expect(first.exitCode, first.stdout + first.stderr).toBe(0)
    const [triggered] = outputs(first, 'triggered')
    expect(triggered).toMatchObject({ namespace: ns, name: 'web', status: 'Triggered' })
    const hr = await cluster.getHelmRelease(ns, 'web')
    const annotations = hr.metadata.annotations ?? {}
    expect(annotations['team.example/owner']).toBe('platform')
    expect(annotations['reconcile.fluxcd.io/requestedAt']).toBe(triggered?.token)
    expect(triggered?.token).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/)
    expect(Object.keys(JSON.parse(annotations['nebius.ai/config-digest'] ?? '{}'))).toEqual([`ConfigMap/${ns}/settings`])
    expect(hr.metadata.labels?.['nebius.ai/helmrelease-trigger-operator']).toBe('true')
    expect(first.summary).toContain(`ConfigMap/${ns}/settings`)

    const rv = await settledResourceVersion(ns, 'web')
    const again = await act(p)
    expect(again.exitCode).toBe(0)
    expect(outputs(again, 'skipped')).toMatchObject([{ name: 'web', reason: 'UpToDate' }])
    expect((await cluster.getHelmRelease(ns, 'web')).metadata.resourceVersion).toBe(rv)
  })

  it('dry-run sends the patch as a server-side dry run and leaves resourceVersion unchanged', async () => {
    const ns = await cluster.createNamespace('it-dry')
    await release(ns, 'web')
    await liveConfigMap(ns, 'two')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )
    const rv = await settledResourceVersion(ns, 'web')
    const run = await act(p, { 'dry-run': 'true' })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'DryRun' }])
    const hr = await cluster.getHelmRelease(ns, 'web')
    expect(hr.metadata.resourceVersion).toBe(rv)
    expect(hr.metadata.annotations?.['reconcile.fluxcd.io/requestedAt']).toBeUndefined()
  })

  it('skips suspended releases and warns about missing ones (red under fail-on: warning)', async () => {
    const ns = await cluster.createNamespace('it-skip')
    await release(ns, 'paused', { suspend: true })
    await liveConfigMap(ns, 'two')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'paused, ghost', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'paused, ghost', targetNamespace: ns, value: 'two' }) },
    )
    const run = await act(p)
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(outputs(run, 'skipped').map((s) => [s.name, s.reason])).toEqual([
      ['ghost', 'NotFound'],
      ['paused', 'Suspended'],
    ])
    expect((await annotationsOf(ns, 'paused'))['reconcile.fluxcd.io/requestedAt']).toBeUndefined()
    const strict = await act(p, { 'fail-on': 'warning' })
    expect(strict.exitCode).toBe(1)
    expect(strict.stdout).toContain(`${ns}/ghost: NotFound`)
  })

  it('triggers a release in another namespace named by helmreleases-namespace', async () => {
    const configNs = await cluster.createNamespace('it-config')
    const appNs = await cluster.createNamespace('it-app')
    await release(appNs, 'api')
    await liveConfigMap(configNs, 'two')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: configNs, targets: 'api', targetNamespace: appNs, value: 'one' }) },
      { 'cm.yaml': source({ namespace: configNs, targets: 'api', targetNamespace: appNs, value: 'two' }) },
    )
    const run = await act(p, { 'cross-namespace-targets': `${configNs}=${appNs}` })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ namespace: appNs, name: 'api' }])
    expect((await annotationsOf(appNs, 'api'))['reconcile.fluxcd.io/requestedAt']).toBeDefined()
  })

  it('names the verb, resource and RBAC rule when the identity may not patch', async () => {
    const ns = await cluster.createNamespace('it-rbac')
    await release(ns, 'web')
    await liveConfigMap(ns, 'two')
    const rbac = cluster.kubeconfig.makeApiClient((await import('@kubernetes/client-node')).RbacAuthorizationV1Api)
    await cluster.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'reader' } } })
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'reader' },
        rules: [
          { apiGroups: ['helm.toolkit.fluxcd.io'], resources: ['helmreleases'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
        ],
      },
    })
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
      },
    })
    const token = await cluster.serviceAccountToken(ns, 'reader')
    const readerConfig = readFileSync(await cluster.kubeconfigFor(token, 'reader'), 'utf8')

    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )
    const run = await act(p, { kubeconfig: readerConfig })
    expect(run.exitCode).toBe(1)
    const [failed] = outputs(run, 'failed')
    expect(failed).toMatchObject({ name: 'web', status: 'Failed', reason: 'Forbidden' })
    expect(failed?.message).toContain(`cannot patch helmreleases.helm.toolkit.fluxcd.io web in namespace ${ns}`)
    expect(failed?.message).toContain('verbs: ["patch"]')
    expect(run.stdout).toContain('::add-mask::')
    expect(visible(run)).not.toContain(token)
  })

  it('reports a malformed manifest with file and line and still triggers from the other files', async () => {
    const ns = await cluster.createNamespace('it-bad')
    await release(ns, 'web')
    await liveConfigMap(ns, 'two')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      {
        'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }),
        'broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n',
      },
    )
    const run = await act(p)
    expect(run.stdout).toMatch(/::error .*file=broken\.yaml,line=\d+/)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web' }])
    expect(run.exitCode).toBe(1)
  })

  it('fails with one sentence for a bad kubeconfig and never echoes it', async () => {
    const ns = await cluster.createNamespace('it-kubeconfig')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )
    const secretish = 'not-a-kubeconfig-s3cr3t-value'
    const run = await act(p, { kubeconfig: `{${secretish}: [` })
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain('::error::The kubeconfig input is not valid YAML')
    expect(visible(run)).not.toContain(secretish)

    const none = await act(p, { kubeconfig: '' })
    expect(none.exitCode).toBe(1)
    expect(none.stdout).toContain('No Kubernetes cluster is configured')
  })

  it('names the server when it cannot be reached, after bounded retries', async () => {
    const ns = await cluster.createNamespace('it-unreachable')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )
    const port = await closedPort()
    const dead = kubeconfig.replace(/server: \S+/, `server: https://127.0.0.1:${port}`)
    const run = await act(p, { kubeconfig: dead, 'wait-for-apply': 'false' })
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toContain(`Cannot reach the Kubernetes API server https://127.0.0.1:${port} (ECONNREFUSED)`)
    expect(run.summary).toContain('## helmrelease-trigger: failed')
    expect(render(run.summary).lines.join('\n')).toContain(`https://127.0.0.1:${port}`)
  })

  it('apply: true server-side-applies the changed ConfigMap first, then triggers', async () => {
    const ns = await cluster.createNamespace('it-apply')
    await release(ns, 'web')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )
    const run = await act(p, { apply: 'true' })
    expect(run.exitCode, run.stdout + run.stderr).toBe(0)
    const live = await cluster.core.readNamespacedConfigMap({ namespace: ns, name: 'settings' })
    expect(live.data?.['values.yaml']).toBe('level: two\n')
    expect(live.metadata?.managedFields?.some((f) => f.manager === 'helmrelease-trigger' && f.operation === 'Apply')).toBe(true)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'Triggered' }])
  })

  it('the CLI triggers the same way and prints the table', async () => {
    const ns = await cluster.createNamespace('it-cli')
    await release(ns, 'web')
    await liveConfigMap(ns, 'two')
    const p = commitPair(
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'one' }) },
      { 'cm.yaml': source({ namespace: ns, targets: 'web', targetNamespace: ns, value: 'two' }) },
    )
    const cli = join(REPO_ROOT, 'dist', 'cli.js')
    const result = spawnSync(
      process.execPath,
      [cli, 'trigger', '--repo', p.repo.dir, '--kubeconfig', cluster.kubeconfigPath, '--no-wait', '--base', p.before, '--head', p.after],
      { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: p.repo.dir } },
    )
    expect(result.status, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`${ns}/web\\s+Triggered\\s+ReconcileRequested`))
    expect((await annotationsOf(ns, 'web'))['reconcile.fluxcd.io/requestedAt']).toBeDefined()
  })
})
