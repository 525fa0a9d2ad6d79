// F3: an unkeyed digest of a Secret lets whoever reads a HelmRelease, its Events, a log, the
// summary or the outputs test guesses of a low-entropy value offline. The attack first, against
// what the product used to publish; then the same search over everything a run publishes now.
// Also: the legacy unkeyed config-digest triggers nothing spuriously and is rewritten keyed, and
// the key Secret is created once when two runs race for it.

import { hash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { contentOfSecret, digestOf, keyedDigest, short } from '../../../src/core/digest.ts'
import { Status } from '../../../src/engine/result.ts'
import { ForbiddenError } from '../../../src/kube/api-error.ts'
import { DIGEST_KEY_SECRET, loadDigestKey } from '../../../src/kube/digest-key.ts'
import { outputsOf, summaryMarkdown, textReport } from '../../../src/modes/trigger/report.ts'
import { runTrigger, type RunContext } from '../../../src/modes/trigger/pipeline.ts'
import { parseSettings, type Settings } from '../../../src/settings.ts'
import { executeClusterPart } from '../../../src/modes/fleet/execute.ts'
import { keysFor } from '../../../src/core/keys.ts'
import { parseRelease, parseSource, WatchView } from '../../../src/modes/watch/view.ts'
import { readPlanFile, writePlanFile, type ClusterPlan, type FleetPlan } from '../../../src/modes/fleet/fleet-plan.ts'
import { FakeCluster, FakeClock, FakeGit } from '../../../test/support/fakes.ts'

const PIN = '483920'
const OLD_PIN = '105733'
const SECRET = { kind: 'Secret', namespace: 'apps', name: 'db' } as const

const secretManifest = (pin: string): string => `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: apps
  labels:
    nebius.ai/helmrelease-trigger-operator: "true"
  annotations:
    nebius.ai/helmreleases-name: app
type: Opaque
stringData:
  pin: "${pin}"
`

const liveSecret = (pin: string) => ({ pin: Buffer.from(pin).toString('base64') })
const unkeyed = (pin: string) => digestOf(contentOfSecret({ stringData: { pin } }), { semantic: true })

function settings(overrides: Record<string, string> = {}): Settings {
  return parseSettings((name) => ({ wait: 'false', 'default-namespace': 'apps', ...overrides })[name] ?? '')
}

const push = (before: string, after: string): RunContext => ({
  eventName: 'push',
  event: { before, after },
  sha: after,
  runUrl: 'https://ci.example/run/1',
  refused: undefined,
})

/**
 * What an attacker without `get secrets` does: every 6-digit value through an independent
 * re-implementation of the unkeyed digest, compared with each run of 12+ hex characters seen
 * (a full digest or the 12-hex prefix of Events and logs). Bounded: 10^6 candidates.
 */
function bruteForce(published: string): string | undefined {
  const prefixes = new Set([...published.matchAll(/[0-9a-f]{12,}/g)].map((m) => m[0].slice(0, 12)))
  for (let n = 0; n < 1_000_000; n++) {
    const pin = String(n).padStart(6, '0')
    const hex = hash('sha256', `[["data",[["pin","text","${pin}"]]],["binaryData",[]]]`, 'hex')
    if (prefixes.has(hex.slice(0, 12))) return pin
  }
  return undefined
}

interface Published {
  readonly text: string
}

/** Everything a reader without `get secrets` can see after a run: the release, its Events, the log, the summary, the outputs. */
async function runAndCollect(cluster: FakeCluster, git: FakeGit, base: string, head: string): Promise<Published & { status: string | undefined }> {
  const log: string[] = []
  const report = await runTrigger(settings(), push(base, head), {
    git,
    connect: async () => cluster,
    clock: new FakeClock(),
    log: { info: (m) => void log.push(m), warning: (m) => void log.push(m) },
  })
  const release = cluster.release('apps', 'app')
  const text = [
    JSON.stringify(release.annotations),
    JSON.stringify(release.labels),
    ...cluster.events.map((e) => e.message),
    ...log,
    summaryMarkdown(report),
    JSON.stringify(outputsOf(report)),
    textReport(report),
  ].join('\n')
  return { text, status: report.results[0]?.status }
}

describe('F3: Secret digests', () => {
  it('the search re-implements the unkeyed digest exactly', () => {
    expect(`sha256:${hash('sha256', `[["data",[["pin","text","${PIN}"]]],["binaryData",[]]]`, 'hex')}`).toBe(unkeyed(PIN))
  })

  it('recovers a 6-digit value from what the unkeyed scheme published (config-digest, and the 12-hex prefix in Events and logs)', () => {
    const annotation = JSON.stringify({ 'Secret/apps/db': unkeyed(PIN) })
    const event = `Reconcile requested for commit 0123456789ab: Secret/apps/db changed (Secret/apps/db ${short(unkeyed(PIN))}).`
    expect(bruteForce(annotation)).toBe(PIN)
    expect(bruteForce(event)).toBe(PIN)
  })

  it('finds nothing in what a run publishes now; the legacy digest a release carried is rewritten keyed', async () => {
    const git = new FakeGit().commit('a', undefined, { 'db.yaml': secretManifest(OLD_PIN) }).commit('b', 'a', { 'db.yaml': secretManifest(PIN) })
    // The release as the unkeyed version left it: its config-digest gives the old value away.
    const cluster = new FakeCluster()
      .addRelease('apps', 'app', {}, { annotations: { 'nebius.ai/config-digest': JSON.stringify({ 'Secret/apps/db': unkeyed(OLD_PIN) }) } })
      .setSource(SECRET, liveSecret(PIN))
    expect(bruteForce(JSON.stringify(cluster.release('apps', 'app').annotations))).toBe(OLD_PIN)

    const published = await runAndCollect(cluster, git, 'a', 'b')
    expect(published.status).toBe(Status.Triggered)
    const recorded = JSON.parse(cluster.release('apps', 'app').annotations['nebius.ai/config-digest'] ?? '{}') as Record<string, string>
    expect(recorded['Secret/apps/db']).toMatch(/^hmac-sha256:[0-9a-f]{64}$/)
    expect(published.text).toContain('Secret/apps/db (changed)')
    expect(bruteForce(published.text)).toBeUndefined()
  })

  it('keys with the cluster key: the recorded digest is HMAC of the content under the key Secret', async () => {
    const git = new FakeGit().commit('a', undefined, { 'db.yaml': secretManifest(OLD_PIN) }).commit('b', 'a', { 'db.yaml': secretManifest(PIN) })
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource(SECRET, liveSecret(PIN))
    await runAndCollect(cluster, git, 'a', 'b')
    expect(cluster.created.map((s) => `${s.namespace}/${s.name}`)).toEqual([`flux-system/${DIGEST_KEY_SECRET}`])
    const key = { bytes: new Uint8Array(Buffer.from(cluster.created[0]?.data['key'] ?? '', 'base64')) }
    expect(key.bytes).toHaveLength(32)
    const recorded = JSON.parse(cluster.release('apps', 'app').annotations['nebius.ai/config-digest'] ?? '{}') as Record<string, string>
    expect(recorded['Secret/apps/db']).toBe(keyedDigest(unkeyed(PIN), key))
  })

  it('migration: a legacy unkeyed digest equal to the live content is up to date (no trigger), and is rewritten keyed on the next write', async () => {
    const git = new FakeGit()
      .commit('a', undefined, { 'db.yaml': secretManifest(OLD_PIN) })
      .commit('b', 'a', { 'db.yaml': secretManifest(PIN) })
      .commit('c', 'b', { 'db.yaml': secretManifest('222222') })
    const legacy = JSON.stringify({ 'ConfigMap/apps/other': `sha256:${'e'.repeat(64)}`, 'Secret/apps/db': unkeyed(PIN) })
    const cluster = new FakeCluster().addRelease('apps', 'app', {}, { annotations: { 'nebius.ai/config-digest': legacy } }).setSource(SECRET, liveSecret(PIN))

    const rerun = await runAndCollect(cluster, git, 'a', 'b')
    expect(rerun.status).toBe(Status.Skipped)
    expect(cluster.patches).toHaveLength(0)

    cluster.setSource(SECRET, liveSecret('222222'))
    const next = await runAndCollect(cluster, git, 'b', 'c')
    expect(next.status).toBe(Status.Triggered)
    const recorded = JSON.parse(cluster.release('apps', 'app').annotations['nebius.ai/config-digest'] ?? '{}') as Record<string, string>
    expect(recorded['Secret/apps/db']).toMatch(/^hmac-sha256:/)
    // Another source's entry is kept as it was.
    expect(recorded['ConfigMap/apps/other']).toBe(`sha256:${'e'.repeat(64)}`)

    // And a re-run of that commit is up to date against the keyed digest.
    const again = await runAndCollect(cluster, git, 'b', 'c')
    expect(again.status).toBe(Status.Skipped)
  })

  it('two runs racing for a missing key create it once and key with the same bytes', async () => {
    const cluster = new FakeCluster()
    const [first, second] = await Promise.all([
      loadDigestKey(cluster, { namespace: 'flux-system', create: true }),
      loadDigestKey(cluster, { namespace: 'flux-system', create: true }),
    ])
    expect(cluster.created).toHaveLength(1)
    expect(Buffer.from(first.key.bytes).equals(Buffer.from(second.key.bytes))).toBe(true)
    expect([first.created, second.created].sort()).toEqual([false, true])
  })

  it('a dry run never creates the key: it keys with bytes of its own', async () => {
    const cluster = new FakeCluster()
    const loaded = await loadDigestKey(cluster, { namespace: 'flux-system', create: false })
    expect(loaded).toMatchObject({ created: false, ephemeral: true })
    expect(cluster.created).toHaveLength(0)
  })

  it('refuses a key Secret without 32 bytes of key, saying how to fix it', async () => {
    const cluster = new FakeCluster().setSource({ kind: 'Secret', namespace: 'flux-system', name: DIGEST_KEY_SECRET }, { key: 'c2hvcnQ=' })
    await expect(loadDigestKey(cluster, { namespace: 'flux-system', create: true })).rejects.toThrow(
      /delete it and create it again with `kubectl -n flux-system create secret generic helmrelease-trigger-digest-key --from-literal=key="\$\(head -c 32 \/dev\/urandom \| base64\)"`/,
    )
  })

  it('a missing key it may not create: one sentence with the command that creates it, never "grant create secrets"', async () => {
    const cluster = new FakeCluster()
    cluster.createSecret = () => Promise.reject(new ForbiddenError('Forbidden: cannot create secrets in namespace flux-system.'))
    const refused = await loadDigestKey(cluster, { namespace: 'flux-system', create: true }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ForbiddenError)
    expect((refused as Error).message).toBe(
      'The digest key Secret flux-system/helmrelease-trigger-digest-key does not exist and this identity may not create it; create it once with `kubectl -n flux-system create secret generic helmrelease-trigger-digest-key --from-literal=key="$(head -c 32 /dev/urandom | base64)"`, or bind digest-key-create-role.yaml (deploy/rbac/, deploy/watch/) for the first run only and delete it afterwards.',
    )
    expect(cluster.created).toHaveLength(0)
  })
})

describe('F3: the fleet plan file', () => {
  const plain = unkeyed(PIN)
  const part: ClusterPlan = {
    name: 'prod',
    root: 'clusters/prod',
    secret: 'KUBECONFIG_PROD',
    wave: 1,
    paths: ['**/*.yaml'],
    plan: {
      sources: [
        {
          kind: 'Secret',
          namespace: 'apps',
          name: 'db',
          id: 'Secret/apps/db',
          change: 'modified',
          digest: plain,
          previousDigest: unkeyed(OLD_PIN),
          encrypted: false,
          origin: { file: 'db.yaml', line: 1 },
          targets: [{ namespace: 'apps', name: 'app', reasons: ['annotation'] }],
        },
      ],
      releases: [{ namespace: 'apps', name: 'app', sources: [{ id: 'Secret/apps/db', encrypted: false }] }],
      problems: [],
    },
  }
  const fleet: FleetPlan = {
    range: { base: 'a'.repeat(40), head: 'b'.repeat(40), fullSync: false, notes: [] },
    options: { prefix: 'nebius.ai', defaultNamespace: 'apps', semanticDigest: true, discover: false, paths: ['**/*.yaml'], crossNamespaceTargets: [] },
    waves: 1,
    clusters: [part],
  }

  it('holds no Secret digest: the search finds nothing in it', () => {
    const file = writePlanFile(fleet)
    expect(file).not.toContain(plain.slice(7, 19))
    expect(bruteForce(file)).toBeUndefined()
    const read = readPlanFile(file, 'plan.json').clusters[0]?.plan
    expect(read?.sources[0]?.digest).toBeUndefined()
    expect(read?.releases[0]?.sources).toEqual([{ id: 'Secret/apps/db', encrypted: false }])
  })

  it("the cluster's part keys the live Secret with that cluster's key", async () => {
    const read = readPlanFile(writePlanFile(fleet), 'plan.json')
    const cluster = new FakeCluster().addRelease('apps', 'app').setSource(SECRET, liveSecret(PIN))
    const executed = await executeClusterPart(read, read.clusters[0] ?? part, settings(), push('a', 'b'), {
      git: async () => new FakeGit(),
      connect: async () => cluster,
      clock: new FakeClock(),
      log: { info: () => undefined, warning: () => undefined },
    })
    expect(executed.report.results.map((r) => r.status)).toEqual([Status.Triggered])
    const key = { bytes: new Uint8Array(Buffer.from(cluster.created[0]?.data['key'] ?? '', 'base64')) }
    const recorded = JSON.parse(cluster.release('apps', 'app').annotations['nebius.ai/config-digest'] ?? '{}') as Record<string, string>
    expect(recorded).toEqual({ 'Secret/apps/db': keyedDigest(plain, key) })
    expect(JSON.stringify(executed.result)).not.toContain('hmac-sha256')
  })
})

describe("F3: watch mode's view of a live Secret", () => {
  const key = { bytes: new Uint8Array(32).fill(3) }
  const options = { keys: keysFor('nebius.ai'), defaultNamespace: 'apps', crossNamespaceTargets: [], semanticDigest: true, discover: true, digestKey: key }
  const secret = (pin: string) => ({
    metadata: { namespace: 'apps', name: 'db', resourceVersion: '1', labels: { 'nebius.ai/helmrelease-trigger-operator': 'true' } },
    data: liveSecret(pin),
  })
  const release = (annotations: Record<string, string>) =>
    parseRelease({ metadata: { namespace: 'apps', name: 'app', resourceVersion: '2', annotations }, spec: { valuesFrom: [{ kind: 'Secret', name: 'db' }] } })

  it('digests the decrypted Secret keyed; a ConfigMap stays plain', () => {
    const s = parseSource('Secret', secret(PIN), options)
    expect(s?.digest).toBe(keyedDigest(unkeyed(PIN), key))
    expect(s?.legacyDigest).toBe(unkeyed(PIN))
    const cm = parseSource('ConfigMap', { ...secret(PIN), data: { pin: PIN } }, options)
    expect(cm?.digest).toMatch(/^sha256:/)
  })

  it('takes a legacy unkeyed config-digest of the live Secret as up to date, and another value as stale', () => {
    const view = new WatchView(options)
    const source = parseSource('Secret', secret(PIN), options)
    if (source === undefined) throw new Error('bad source')
    view.upsertSource('trigger', source)
    const legacy = release({ 'nebius.ai/config-digest': JSON.stringify({ 'Secret/apps/db': unkeyed(PIN) }) })
    if (legacy === undefined) throw new Error('bad release')
    view.upsertRelease(legacy)
    expect(view.precheck(view.plan(legacy))).toMatchObject({ action: 'skip', reason: 'UpToDate' })
    const stale = release({ 'nebius.ai/config-digest': JSON.stringify({ 'Secret/apps/db': unkeyed(OLD_PIN) }) })
    if (stale === undefined) throw new Error('bad release')
    view.upsertRelease(stale)
    expect(view.precheck(view.plan(stale))).toMatchObject({ action: 'trigger' })
  })
})
