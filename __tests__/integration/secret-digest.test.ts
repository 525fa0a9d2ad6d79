// F3 against the real apiserver: the key of Secret digests is created once when runs race for
// it; a release whose config-digest still holds an unkeyed (legacy) digest of its Secret is not
// triggered for it, and is rewritten keyed on its next trigger; watch mode, which digests the
// live (SOPS-decrypted, or never-in-git) Secret, records it keyed and prints no digest of it.
// A reader without `get secrets` searches all it can see for a 6-digit value and finds nothing.

import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { contentOfSecret, digestOf } from '../../src/core/digest.ts'
import { systemClock } from '../../src/engine/ports.ts'
import { Status, type TriggerReport } from '../../src/engine/result.ts'
import { createGitReader } from '../../src/git/reader.ts'
import { connect } from '../../src/kube/connect.ts'
import { DIGEST_KEY_SECRET, loadDigestKey } from '../../src/kube/digest-key.ts'
import { outputsOf, summaryMarkdown, textReport } from '../../src/modes/trigger/report.ts'
import { runTrigger } from '../../src/modes/trigger/pipeline.ts'
import { parseSettings } from '../../src/settings.ts'
import { useCluster } from '../../test/support/context.ts'
import { createRepo, type Repo } from '../../test/support/repo.ts'
import { triggerSecret } from '../../test/support/manifests.ts'
import { startWatch, type WatchHandle } from '../../test/support/watch.ts'

const cluster = useCluster()
const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8')
const repos: Repo[] = []
afterAll(() => repos.forEach((r) => r.cleanup()))
const running: WatchHandle[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop().catch(() => undefined)))
})

const LABEL = { 'nebius.ai/helmrelease-trigger-operator': 'true' }
const DIGEST = 'nebius.ai/config-digest'
const REQUESTED = 'reconcile.fluxcd.io/requestedAt'
const PIN = '483920'

const unkeyed = (pin: string) => digestOf(contentOfSecret({ stringData: { pin } }), { semantic: true })

/** Every 6-digit value through the unkeyed digest, against each run of 12+ hex characters in `published`. */
function bruteForce(published: string): string | undefined {
  const prefixes = new Set([...published.matchAll(/[0-9a-f]{12,}/g)].map((m) => m[0].slice(0, 12)))
  for (let n = 0; n < 1_000_000; n++) {
    const pin = String(n).padStart(6, '0')
    if (prefixes.has(hash('sha256', `[["data",[["pin","text","${pin}"]]],["binaryData",[]]]`, 'hex').slice(0, 12))) return pin
  }
  return undefined
}

async function annotations(namespace: string, name: string): Promise<Record<string, string>> {
  return (await cluster.getHelmRelease(namespace, name)).metadata.annotations ?? {}
}

async function recorded(namespace: string, name: string): Promise<Record<string, string>> {
  return JSON.parse((await annotations(namespace, name))[DIGEST] ?? '{}') as Record<string, string>
}

async function eventMessages(namespace: string): Promise<string[]> {
  return (await cluster.core.listNamespacedEvent({ namespace })).items.map((e) => e.message ?? '')
}

/** A Secret as kustomize-controller leaves one it decrypted: labelled, values in plain data. */
async function liveSecret(namespace: string, pin: string, annotationsOf: Record<string, string> = {}): Promise<void> {
  const body = {
    metadata: { name: 'creds', namespace, labels: { ...LABEL, 'kustomize.toolkit.fluxcd.io/name': 'apps' }, annotations: annotationsOf },
    stringData: { pin },
  }
  await cluster.core.replaceNamespacedSecret({ namespace, name: 'creds', body }).catch(() => cluster.core.createNamespacedSecret({ namespace, body }))
}

describe('the digest key', () => {
  it('is created once when eight runs race for it, and every run keys with the same bytes', async () => {
    const ns = await cluster.createNamespace('digest-key-race')
    const settings = parseSettings((name) => ({ kubeconfig })[name] ?? '')
    const clients = Array.from({ length: 8 }, () => connect(settings, { env: {}, mask: () => undefined }))
    const loaded = await Promise.all(clients.map((c) => loadDigestKey(c, { namespace: ns, create: true })))
    expect(loaded.filter((l) => l.created)).toHaveLength(1)
    const keys = new Set(loaded.map((l) => Buffer.from(l.key.bytes).toString('hex')))
    expect(keys.size).toBe(1)
    const stored = await cluster.core.readNamespacedSecret({ namespace: ns, name: DIGEST_KEY_SECRET })
    expect(stored.type).toBe('Opaque')
    expect(Buffer.from(stored.data?.['key'] ?? '', 'base64').toString('hex')).toBe([...keys][0])
    const secrets = (await cluster.core.listNamespacedSecret({ namespace: ns })).items.map((s) => s.metadata?.name)
    expect(secrets).toEqual([DIGEST_KEY_SECRET])
  })
})

describe('trigger: migration from unkeyed Secret digests', () => {
  const manifest = (namespace: string, pin: string) => triggerSecret({ name: 'creds', namespace, releases: 'web', stringData: { pin } })

  async function run(repo: Repo, before: string, after: string, keyNamespace: string): Promise<{ report: TriggerReport; log: string[] }> {
    const inputs: Record<string, string> = { kubeconfig, wait: 'false', timeout: '20s', 'digest-key-namespace': keyNamespace }
    const settings = parseSettings((name) => inputs[name] ?? '')
    const log: string[] = []
    const report = await runTrigger(
      settings,
      { eventName: 'push', event: { before, after }, sha: after, runUrl: undefined, refused: undefined },
      {
        git: await createGitReader({ cwd: repo.dir }),
        connect: async () => connect(settings, { env: {}, mask: () => undefined }),
        clock: systemClock,
        log: { info: (m) => void log.push(m), warning: (m) => void log.push(m) },
      },
    )
    return { report, log }
  }

  it('a legacy digest of the live content triggers nothing; the next change is triggered and recorded keyed; nothing published gives the value away', async () => {
    const ns = await cluster.createNamespace('digest-migrate')
    const keyNs = await cluster.createNamespace('digest-migrate-key')
    await liveSecret(ns, PIN)
    // The release as the unkeyed version left it: its annotation alone gives the value away.
    const legacy = JSON.stringify({ [`Secret/${ns}/creds`]: unkeyed(PIN) })
    await cluster.applyHelmRelease({
      namespace: ns,
      name: 'web',
      repository: 'absent',
      valuesFrom: [{ kind: 'Secret', name: 'creds' }],
      annotations: { [DIGEST]: legacy },
    })
    expect(bruteForce(JSON.stringify(await annotations(ns, 'web')))).toBe(PIN)

    const repo = createRepo()
    repos.push(repo)
    repo.write({ 'secret.yaml': manifest(ns, '105733') })
    const first = repo.commit('first')
    repo.write({ 'secret.yaml': manifest(ns, PIN) })
    const second = repo.commit('second')

    const rerun = await run(repo, first, second, keyNs)
    expect(rerun.report.results.map((r) => [r.status, r.reason])).toEqual([[Status.Skipped, 'UpToDate']])
    expect((await annotations(ns, 'web'))[REQUESTED]).toBeUndefined()
    expect((await annotations(ns, 'web'))[DIGEST]).toBe(legacy)

    repo.write({ 'secret.yaml': manifest(ns, '222222') })
    const third = repo.commit('third')
    await liveSecret(ns, '222222')
    const next = await run(repo, second, third, keyNs)
    expect(next.report.results.map((r) => r.status)).toEqual([Status.Triggered])
    expect(await recorded(ns, 'web')).toEqual({ [`Secret/${ns}/creds`]: expect.stringMatching(/^hmac-sha256:[0-9a-f]{64}$/) })

    const published = [
      JSON.stringify(await annotations(ns, 'web')),
      ...(await eventMessages(ns)),
      ...next.log,
      summaryMarkdown(next.report),
      JSON.stringify(outputsOf(next.report)),
      textReport(next.report),
    ].join('\n')
    expect(published).toContain(`Secret/${ns}/creds (changed)`)
    expect(bruteForce(published)).toBeUndefined()
  })
})

describe('watch: the live Secret', () => {
  it('records a decrypted Secret keyed, logs and Events only that it changed: the search finds nothing', async () => {
    const ns = await cluster.createNamespace('digest-watch')
    await liveSecret(ns, PIN)
    await cluster.applyHelmRelease({ namespace: ns, name: 'web', repository: 'absent', valuesFrom: [{ kind: 'Secret', name: 'creds' }] })
    const w = startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: ns, 'digest-key-namespace': ns } })
    running.push(w)
    await w.synced()
    const first = await cluster.waitFor(async () => (await recorded(ns, 'web'))[`Secret/${ns}/creds`], { message: 'the catch-up trigger' })
    expect(first).toMatch(/^hmac-sha256:[0-9a-f]{64}$/)
    await liveSecret(ns, '105733')
    await cluster.waitFor(
      async () => {
        const now = (await recorded(ns, 'web'))[`Secret/${ns}/creds`]
        return now !== undefined && now !== first
      },
      { message: 'the trigger after the Secret changed' },
    )
    await w.line('release triggered', {})
    const published = [JSON.stringify(await annotations(ns, 'web')), ...(await eventMessages(ns)), ...w.lines.map((l) => JSON.stringify(l))].join('\n')
    expect(published).toContain(`Secret/${ns}/creds@changed`)
    expect(bruteForce(published)).toBeUndefined()
  })

  it('leaves a release whose legacy unkeyed digest matches the live Secret alone, and rewrites it keyed on the next change', async () => {
    const ns = await cluster.createNamespace('digest-watch-legacy')
    await liveSecret(ns, PIN)
    await cluster.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'control', namespace: ns, labels: LABEL }, data: { v: '1' } } })
    const legacy = JSON.stringify({ [`Secret/${ns}/creds`]: unkeyed(PIN) })
    await cluster.applyHelmRelease({
      namespace: ns,
      name: 'web',
      repository: 'absent',
      valuesFrom: [{ kind: 'Secret', name: 'creds' }],
      annotations: { [DIGEST]: legacy },
    })
    await cluster.applyHelmRelease({ namespace: ns, name: 'control', repository: 'absent', valuesFrom: [{ kind: 'ConfigMap', name: 'control' }] })
    const w = startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: ns, 'digest-key-namespace': ns } })
    running.push(w)
    await w.synced()
    // The initial pass decides every release; the control release shows it ran.
    await cluster.waitFor(async () => (await recorded(ns, 'control'))[`ConfigMap/${ns}/control`], { message: 'the catch-up trigger of the control release' })
    await w.line('release triggered', { release: `${ns}/control` })
    expect((await annotations(ns, 'web'))[REQUESTED]).toBeUndefined()
    expect((await annotations(ns, 'web'))[DIGEST]).toBe(legacy)

    await liveSecret(ns, '222222')
    const keyed = await cluster.waitFor(
      async () => {
        const now = (await recorded(ns, 'web'))[`Secret/${ns}/creds`]
        return now?.startsWith('hmac-sha256:') ? now : undefined
      },
      { message: 'the trigger after the change, recorded keyed' },
    )
    expect(keyed).toMatch(/^hmac-sha256:[0-9a-f]{64}$/)
  })
})
