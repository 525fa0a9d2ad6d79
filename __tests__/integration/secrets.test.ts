// Nothing secret leaves the action: the bundled action runs with the runner's debug logging on
// and kubeconfigs carrying a bearer token, a client key and certificate (plain and base64
// inputs), over a commit that changes a Secret written with plain stringData. Every secret
// value, in every form the action could print it, is looked for in everything the runner
// shows: the log without its ::add-mask:: commands (the runner consumes those), stderr, the
// job summary and the outputs.

import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { stringify } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAction, type ActionRun } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'

const cluster = useCluster()
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))

const DEBUG = { RUNNER_DEBUG: '1', ACTIONS_STEP_DEBUG: 'true', ACTIONS_RUNNER_DEBUG: 'true' }

/** A throwaway RSA key and self-signed certificate (the apiserver does not ask for client certificates, so the token authenticates). */
function clientCertificate(): { certData: string; keyData: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hrt-cert-'))
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-subj',
        '/CN=hrt-secrets-test',
        '-days',
        '1',
      ],
      { stdio: 'ignore' },
    )
    return { certData: readFileSync(join(dir, 'cert.pem')).toString('base64'), keyData: readFileSync(join(dir, 'key.pem')).toString('base64') }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

interface User {
  readonly token: string
  readonly certData?: string
  readonly keyData?: string
}

function kubeconfigText(user: User): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData } }],
    users: [
      {
        name: 'ci',
        user: { token: user.token, ...(user.certData === undefined ? {} : { 'client-certificate-data': user.certData, 'client-key-data': user.keyData }) },
      },
    ],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'ci' } }],
    'current-context': 'local',
  })
}

/** Every form in which a secret could be printed: as given, and base64 fields also decoded line by line (PEM bodies). */
function forms(values: readonly string[]): string[] {
  const decoded = values.filter((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length > 40).flatMap((v) => Buffer.from(v, 'base64').toString('utf8').split('\n'))
  return [...values, ...decoded.map((l) => l.trim()).filter((l) => l.length >= 16 && !l.startsWith('-----'))]
}

/** What the runner shows: the log without the ::add-mask:: commands it consumes, the summary and the outputs. */
function visible(run: ActionRun): string {
  return [...`${run.stdout}\n${run.stderr}`.split('\n').filter((l) => !l.startsWith('::add-mask::')), run.summary, ...Object.values(run.outputs)].join('\n')
}

/** The secrets found in what the runner shows (an empty list is the goal). */
function leaks(run: ActionRun, secrets: readonly string[]): string[] {
  const shown = visible(run)
  return forms(secrets).filter((s) => shown.includes(s))
}

const masked = (run: ActionRun): string[] =>
  run.stdout
    .split('\n')
    .filter((l) => l.startsWith('::add-mask::'))
    .map((l) => l.slice('::add-mask::'.length))

interface Fixture {
  readonly namespace: string
  readonly repo: Repo
  readonly before: string
  readonly after: string
  /** The Secret source's plain values (stringData in the manifest). */
  readonly data: readonly string[]
}

/** A commit changing a labelled Secret (stringData) that targets `web`; the live Secret already holds the new content. */
async function fixture(prefix: string): Promise<Fixture> {
  const namespace = await cluster.createNamespace(prefix)
  await cluster.applyHelmRelease({ namespace, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'Secret', name: 'db' }] })
  const password = `hrt-pw-${randomBytes(12).toString('hex')}`
  const old = `hrt-old-${randomBytes(12).toString('hex')}`
  const values = (pw: string): string => `db:\n  password: ${pw}\n  url: postgres://app:${pw}@db:5432/app\n`
  const manifest = (pw: string): string => `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: ${namespace}
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: web
    nebius.ai/helmreleases-namespace: ${namespace}
type: Opaque
stringData:
  values.yaml: |
${values(pw)
  .trimEnd()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
  token: ${pw}-token
`
  await cluster.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: 'db', namespace }, type: 'Opaque', stringData: { 'values.yaml': values(password), token: `${password}-token` } },
  })
  const repo = createRepo()
  repos.push(repo)
  repo.write({ 'secret.yaml': manifest(old) })
  const before = repo.commit('first')
  repo.write({ 'secret.yaml': manifest(password) })
  const after = repo.commit('rotate the database password')
  const plain = [password, old, values(password), `${password}-token`]
  return { namespace, repo, before, after, data: [...plain, ...plain.map((v) => Buffer.from(v).toString('base64'))] }
}

function act(f: Fixture, inputs: Record<string, string>, env: Record<string, string> = DEBUG): Promise<ActionRun> {
  return runAction({
    workspace: f.repo.dir,
    eventName: 'push',
    event: { before: f.before, after: f.after },
    sha: f.after,
    inputs: { wait: 'false', timeout: '20s', ...inputs },
    env,
  })
}

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

const outputs = (run: ActionRun, name: string): { name: string; status: string }[] => JSON.parse(run.outputs[name] ?? '[]')

describe('no secret is shown, with the runner in debug mode', () => {
  let f: Fixture
  let cert: { certData: string; keyData: string }
  beforeAll(async () => {
    f = await fixture('secrets')
    cert = clientCertificate()
  })

  it('a token kubeconfig: token and Secret data never shown, the token masked', async () => {
    const user = { token: cluster.adminToken }
    const run = await act(f, { kubeconfig: kubeconfigText(user), force: 'true' })
    expect(run.exitCode, visible(run)).toBe(0)
    expect(outputs(run, 'triggered')).toMatchObject([{ name: 'web', status: 'Triggered' }])
    expect(masked(run)).toContain(user.token)
    expect(leaks(run, [user.token, ...f.data])).toEqual([])
    // The Secret is reported by name only (summary, Event) and recorded on the release by its keyed digest.
    expect(run.summary).toContain(`Secret/${f.namespace}/db`)
    const written = JSON.stringify((await cluster.getHelmRelease(f.namespace, 'web')).metadata)
    const events = JSON.stringify((await cluster.core.listNamespacedEvent({ namespace: f.namespace })).items.map((e) => e.message))
    expect(written).toMatch(/"Secret\/[^"]+\/db\\":\\"hmac-sha256:[0-9a-f]{64}/)
    expect(events).toContain(`Secret/${f.namespace}/db (changed)`)
    expect(forms(f.data).filter((d) => written.includes(d) || events.includes(d))).toEqual([])
  })

  it('a kubeconfig with client-key-data and client-certificate-data: every field masked, none shown', async () => {
    const user = { token: cluster.adminToken, ...cert }
    const run = await act(f, { kubeconfig: kubeconfigText(user), force: 'true' })
    expect(run.exitCode, visible(run)).toBe(0)
    expect(masked(run)).toEqual(expect.arrayContaining([user.token, user.keyData, user.certData]))
    // The PEM body lines of the key are masked too, in case a library prints the decoded key.
    const keyLines = forms([user.keyData]).slice(1)
    expect(keyLines.length).toBeGreaterThan(10)
    expect(masked(run)).toEqual(expect.arrayContaining(keyLines))
    expect(leaks(run, [user.token, user.keyData, user.certData, ...f.data])).toEqual([])
  })

  it('a base64-encoded kubeconfig input: masked whole before decoding, nothing shown', async () => {
    const user = { token: cluster.adminToken, ...cert }
    const encoded = Buffer.from(kubeconfigText(user)).toString('base64')
    const run = await act(f, { kubeconfig: encoded, force: 'true' })
    expect(run.exitCode, visible(run)).toBe(0)
    expect(masked(run)).toContain(encoded)
    expect(leaks(run, [encoded, user.token, user.keyData, user.certData, ...f.data])).toEqual([])
  })

  it('failure paths: a rejected token, a refused patch and an unreachable server show no secret', async () => {
    const bogus = { token: `hrt-bogus-${randomBytes(16).toString('hex')}`, ...cert }
    const rejected = await act(f, { kubeconfig: kubeconfigText(bogus), force: 'true' })
    expect(rejected.exitCode).toBe(1)
    expect(visible(rejected)).toContain('401 Unauthorized')
    expect(leaks(rejected, [bogus.token, bogus.keyData, bogus.certData, ...f.data])).toEqual([])

    const sa = await cluster.serviceAccountToken(f.namespace, 'nobody')
    const forbidden = await act(f, { kubeconfig: kubeconfigText({ token: sa }), force: 'true' })
    expect(forbidden.exitCode).toBe(1)
    // The first read refused: the digest key (a release reads a Secret), before any source.
    expect(visible(forbidden)).toContain('Forbidden: cannot get secrets helmrelease-trigger-digest-key')
    expect(leaks(forbidden, [sa, ...f.data])).toEqual([])

    const port = await closedPort()
    const dead = kubeconfigText({ token: cluster.adminToken, ...cert }).replace(cluster.server, `https://127.0.0.1:${port}`)
    const unreachable = await act(f, { kubeconfig: dead, 'wait-for-apply': 'false', force: 'true' })
    expect(unreachable.exitCode).toBe(1)
    expect(visible(unreachable)).toContain(`Cannot reach the Kubernetes API server https://127.0.0.1:${port}`)
    expect(leaks(unreachable, [cluster.adminToken, cert.keyData, cert.certData, ...f.data])).toEqual([])
  })

  it('a kubeconfig that is not YAML is never echoed, in either encoding', async () => {
    const text = `users: [{name: ci, user: {token: hrt-tok-${randomBytes(16).toString('hex')}`
    const plain = await act(f, { kubeconfig: text })
    expect(plain.exitCode).toBe(1)
    expect(visible(plain)).toContain('The kubeconfig input is not valid YAML')
    expect(leaks(plain, [text, text.slice(text.indexOf('hrt-tok-'))])).toEqual([])

    const encoded = Buffer.from(text).toString('base64')
    const b64 = await act(f, { kubeconfig: encoded })
    expect(b64.exitCode).toBe(1)
    expect(leaks(b64, [encoded, text.slice(text.indexOf('hrt-tok-'))])).toEqual([])
  })
})
