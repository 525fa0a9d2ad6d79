// Mode `watch` against the real apiserver (and, where the upgrade itself matters, the real
// helm-controller): a labelled ConfigMap changing in the cluster triggers its releases with
// the same engine as trigger mode; debounce, catch-up at start, deletions, suspend, leader
// election, the CLI process's SIGTERM and the /metrics endpoint.

import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DIST_DIR } from '../../test/support/action.ts'
import { useCluster } from '../../test/support/context.ts'
import { type FluxObject } from '../../test/support/flux.ts'
import { sleep } from '../../test/support/kube.ts'
import { startWatch, type WatchHandle } from '../../test/support/watch.ts'

const cluster = useCluster()
const PREFIX = 'nebius.ai'
const LABEL = { [`${PREFIX}/helmrelease-trigger-operator`]: 'true' }
const DIGEST = `${PREFIX}/config-digest`
const REQUESTED = 'reconcile.fluxcd.io/requestedAt'

const running: WatchHandle[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop().catch(() => undefined)))
})

function watch(namespace: string, inputs: Record<string, string> = {}, extra: Partial<Parameters<typeof startWatch>[0]> = {}): WatchHandle {
  const handle = startWatch({ kubeconfigPath: cluster.kubeconfigPath, inputs: { namespaces: namespace, ...inputs }, ...extra })
  running.push(handle)
  return handle
}

async function configMap(
  namespace: string,
  name: string,
  data: Record<string, string>,
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } = { labels: LABEL },
): Promise<void> {
  const body = { metadata: { name, namespace, ...metadata }, data }
  try {
    await cluster.core.replaceNamespacedConfigMap({ namespace, name, body })
  } catch {
    await cluster.core.createNamespacedConfigMap({ namespace, body })
  }
}

/** A release that reads `sources` by valuesFrom; no HelmRepository, so helm-controller only writes status. */
async function release(namespace: string, name: string, sources: readonly string[], options: { suspend?: boolean; optional?: boolean } = {}): Promise<void> {
  await cluster.applyHelmRelease({
    namespace,
    name,
    valuesFrom: sources.map((s) => ({ kind: 'ConfigMap' as const, name: s, ...(options.optional ? { optional: true } : {}) })),
    ...(options.suspend ? { spec: { suspend: true } } : {}),
  })
}

function annotations(object: FluxObject): Readonly<Record<string, string>> {
  return object.metadata.annotations ?? {}
}

async function digests(namespace: string, name: string): Promise<Record<string, string>> {
  return JSON.parse(annotations(await cluster.getHelmRelease(namespace, name))[DIGEST] ?? '{}') as Record<string, string>
}

async function requestedAt(namespace: string, name: string): Promise<string | undefined> {
  return annotations(await cluster.getHelmRelease(namespace, name))[REQUESTED]
}

async function events(namespace: string, reason: string): Promise<{ type: string; message: string; object: string }[]> {
  const list = await cluster.core.listNamespacedEvent({ namespace })
  return list.items.filter((e) => e.reason === reason).map((e) => ({ type: e.type ?? '', message: e.message ?? '', object: e.involvedObject.name ?? '' }))
}

/** Waits until the release's config-digest records a new digest for the source (different from `before`). */
async function digestMoves(namespace: string, name: string, id: string, before: string | undefined): Promise<string> {
  return cluster.waitFor(
    async () => {
      const d = (await digests(namespace, name))[id]
      return d !== undefined && d !== before && d
    },
    { timeoutMs: 20_000, intervalMs: 50, message: `${id} digest on ${namespace}/${name} to move from ${before}` },
  )
}

describe('watch mode against the real apiserver', () => {
  it('triggers the release of a labelled ConfigMap updated in the cluster, with an Event, and serves parseable /metrics', async () => {
    const ns = await cluster.createNamespace('watch-update')
    await configMap(ns, 'app-values', { 'values.yaml': 'replicas: 1\n' })
    await release(ns, 'app', ['app-values'])
    const w = watch(ns)
    await w.synced()
    const id = `ConfigMap/${ns}/app-values`
    const first = await digestMoves(ns, 'app', id, undefined) // caught up at start: it was never triggered
    const token = await requestedAt(ns, 'app')

    const changedAt = Date.now()
    await configMap(ns, 'app-values', { 'values.yaml': 'replicas: 2\n' })
    const second = await digestMoves(ns, 'app', id, first)
    const observedMs = Date.now() - changedAt
    expect(second).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(await requestedAt(ns, 'app')).not.toBe(token)
    const triggered = await w.line('release triggered', { release: `${ns}/app`, sources: `${id}@${second.slice(7, 19)}` })
    expect(typeof triggered.latencyMs).toBe('number')

    const recorded = await events(ns, 'ConfigChanged')
    expect(
      recorded.some((e) => e.type === 'Normal' && e.object === 'app' && e.message.includes('by helmrelease-trigger watch') && e.message.includes(id)),
    ).toBe(true)

    const m = await w.metrics()
    expect(m.types.get('helmrelease_trigger_watch_event_to_patch_seconds')).toBe('histogram')
    expect(m.value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(2)
    expect(m.value('helmrelease_trigger_watch_event_to_patch_seconds_count')).toBe(1)
    expect(m.value('helmrelease_trigger_watch_event_to_patch_seconds_bucket', { le: '+Inf' })).toBe(1)
    expect(m.value('helmrelease_trigger_watch_ready')).toBe(1)
    expect(m.value('helmrelease_trigger_watch_sources')).toBe(1)
    expect(m.value('helmrelease_trigger_watch_last_sync_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 60)
    expect(m.value('process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(await w.readyz()).toEqual({ status: 200, body: 'ok: synced' })
    process.stderr.write(
      `[watch] event-to-patch latency: ${Number(triggered.latencyMs)} ms in the watch, ${observedMs} ms observed by the test polling (debounce 0)\n`,
    )
  })

  it('with the real helm-controller, a ConfigMap edited in the cluster becomes a new Helm revision', async () => {
    const ns = await cluster.createNamespace('watch-upgrade')
    await cluster.applyHelmRepository(ns)
    await configMap(ns, 'app-values', { 'values.yaml': 'greeting: one\n' })
    // A long interval: only our trigger can make helm-controller upgrade within the test.
    await cluster.applyHelmRelease({ namespace: ns, name: 'app', interval: '1h', valuesFrom: [{ kind: 'ConfigMap', name: 'app-values' }] })
    await cluster.waitForHelmReleaseReady(ns, 'app')
    const w = watch(ns)
    await w.synced()
    await digestMoves(ns, 'app', `ConfigMap/${ns}/app-values`, undefined)
    const revision = (o: FluxObject): number => Number((o.status as { history?: { version?: number }[] } | undefined)?.history?.[0]?.version ?? 0)
    await cluster.waitForHelmReleaseReady(ns, 'app')
    const before = revision(await cluster.getHelmRelease(ns, 'app'))

    await configMap(ns, 'app-values', { 'values.yaml': 'greeting: two\n' })
    const upgraded = await cluster.waitFor(
      async () => {
        const o = await cluster.getHelmRelease(ns, 'app')
        return revision(o) > before && o
      },
      { timeoutMs: 60_000, message: 'a new Helm revision' },
    )
    expect(annotations(upgraded)[REQUESTED]).toBeDefined()
    const rendered = await cluster.waitFor(
      async () =>
        (await cluster.core.listNamespacedConfigMap({ namespace: ns })).items.find(
          (c) => JSON.stringify(c.data ?? {}).includes('two') && c.metadata?.name !== 'app-values',
        ),
      {
        timeoutMs: 30_000,
        message: 'the chart rendering the new value',
      },
    )
    expect(rendered).toBeDefined()
  })

  it('gives two sources of one release changed within the debounce one patch', async () => {
    const ns = await cluster.createNamespace('watch-debounce')
    await configMap(ns, 'a', { v: '1' })
    await configMap(ns, 'b', { v: '1' })
    await release(ns, 'app', ['a', 'b'])
    const w = watch(ns, { debounce: '1500ms' })
    await w.synced()
    await w.line('release triggered', { release: `${ns}/app` })
    const before = await digests(ns, 'app')

    await configMap(ns, 'a', { v: '2' })
    await sleep(200)
    await configMap(ns, 'b', { v: '2' })
    await digestMoves(ns, 'app', `ConfigMap/${ns}/b`, before[`ConfigMap/${ns}/b`])
    const after = await digests(ns, 'app')
    expect(after[`ConfigMap/${ns}/a`]).not.toBe(before[`ConfigMap/${ns}/a`])
    // Give a second patch every chance to happen, then count.
    await sleep(2_000)
    const m = await w.metrics()
    expect(m.value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(2) // the catch-up at start, then one
    expect((await events(ns, 'ConfigChanged')).length).toBe(2)
    const last = w.lines.filter((l) => l.msg === 'release triggered').at(-1)
    expect(String(last?.sources)).toContain(`ConfigMap/${ns}/a@`)
    expect(String(last?.sources)).toContain(`ConfigMap/${ns}/b@`)
  })

  it('catches at start a change made while it was stopped, and leaves up-to-date releases alone', async () => {
    const ns = await cluster.createNamespace('watch-catchup')
    await configMap(ns, 'app-values', { v: '1' })
    await configMap(ns, 'other-values', { v: '1' })
    await release(ns, 'app', ['app-values'])
    await release(ns, 'other', ['other-values'])
    const first = watch(ns)
    await first.synced()
    const id = `ConfigMap/${ns}/app-values`
    const d1 = await digestMoves(ns, 'app', id, undefined)
    await digestMoves(ns, 'other', `ConfigMap/${ns}/other-values`, undefined)
    const report = await first.stop()
    expect(report).toMatchObject({ triggered: 2, failed: 0, stoppedBy: 'signal' })
    const otherToken = await requestedAt(ns, 'other')

    await configMap(ns, 'app-values', { v: '2' })
    const second = watch(ns)
    await second.synced()
    const d2 = await digestMoves(ns, 'app', id, d1)
    expect(d2).not.toBe(d1)
    await second.line('release triggered', { release: `${ns}/app` })
    await sleep(500)
    expect(await requestedAt(ns, 'other')).toBe(otherToken)
    expect((await second.metrics()).value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(1)
  })

  it('reports at start a source deleted while it was stopped, once it is handled for optional readers', async () => {
    const ns = await cluster.createNamespace('watch-deleted-away')
    await configMap(ns, 'needed', { v: '1' })
    await configMap(ns, 'extra', { v: '1' })
    await configMap(ns, 'plain', { v: '1' })
    await release(ns, 'app', ['needed'])
    await release(ns, 'opt', ['extra'], { optional: true })
    await release(ns, 'kept', ['plain'])
    const first = watch(ns)
    await first.synced()
    await digestMoves(ns, 'app', `ConfigMap/${ns}/needed`, undefined)
    const extraBefore = await digestMoves(ns, 'opt', `ConfigMap/${ns}/extra`, undefined)
    await digestMoves(ns, 'kept', `ConfigMap/${ns}/plain`, undefined)
    await first.stop()

    await cluster.core.deleteNamespacedConfigMap({ namespace: ns, name: 'needed' })
    await cluster.core.deleteNamespacedConfigMap({ namespace: ns, name: 'extra' })
    await configMap(ns, 'plain', { v: '1' }, { labels: {} }) // unlabelled, not deleted
    const second = watch(ns)
    await second.synced()
    await second.line('source deleted', { source: `ConfigMap/${ns}/needed`, seenBy: 'start' })
    await second.line('source deleted', { source: `ConfigMap/${ns}/extra`, seenBy: 'start' })
    await digestMoves(ns, 'opt', `ConfigMap/${ns}/extra`, extraBefore)
    await cluster.waitFor(async () => (await events(ns, 'SourceDeleted')).some((e) => e.object === 'app'), { message: 'SourceDeleted Event on app' })
    await sleep(300)
    expect(second.lines.filter((l) => l.msg === 'source deleted')).toHaveLength(2)
    await second.stop()

    // The optional reader recorded the absence: the next start does not report it again.
    const third = watch(ns)
    await third.synced()
    await third.line('source deleted', { source: `ConfigMap/${ns}/needed`, seenBy: 'start' })
    await sleep(500)
    expect(third.lines.filter((l) => l.msg === 'source deleted').map((l) => l['source'])).toEqual([`ConfigMap/${ns}/needed`])
  })

  it('reports a deleted source on its release without patching it, and triggers a release that reads it optionally', async () => {
    const ns = await cluster.createNamespace('watch-delete')
    await configMap(ns, 'needed', { v: '1' })
    await configMap(ns, 'extra', { v: '1' })
    await release(ns, 'app', ['needed'])
    await release(ns, 'opt', ['extra'], { optional: true })
    const w = watch(ns)
    await w.synced()
    await digestMoves(ns, 'app', `ConfigMap/${ns}/needed`, undefined)
    const extraBefore = await digestMoves(ns, 'opt', `ConfigMap/${ns}/extra`, undefined)
    const token = await requestedAt(ns, 'app')

    await cluster.core.deleteNamespacedConfigMap({ namespace: ns, name: 'needed' })
    await cluster.core.deleteNamespacedConfigMap({ namespace: ns, name: 'extra' })
    await w.line('source deleted', { source: `ConfigMap/${ns}/needed` })
    const warning = await cluster.waitFor(async () => (await events(ns, 'SourceDeleted')).find((e) => e.object === 'app'), {
      message: 'SourceDeleted Event on app',
    })
    expect(warning.type).toBe('Warning')
    expect(warning.message).toContain(`ConfigMap/${ns}/needed was deleted`)
    // The optional reader's values lost that source: triggered, recorded as the empty source.
    const extraAfter = await digestMoves(ns, 'opt', `ConfigMap/${ns}/extra`, extraBefore)
    expect(extraAfter).not.toBe(extraBefore)
    await sleep(300)
    expect(await requestedAt(ns, 'app')).toBe(token)
    expect((await w.metrics()).value('helmrelease_trigger_watch_source_deletions_total')).toBe(2)

    // Unlabelling is not a deletion.
    await configMap(ns, 'plain', { v: '1' })
    await w.line('source added', { source: `ConfigMap/${ns}/plain` })
    await configMap(ns, 'plain', { v: '1' }, { labels: {} })
    await w.line('source no longer labelled; it triggers nothing now', { source: `ConfigMap/${ns}/plain` })
    expect((await w.metrics()).value('helmrelease_trigger_watch_source_deletions_total')).toBe(2)
  })

  it('leaves a suspended release untouched, and catches it up once resumed', async () => {
    const ns = await cluster.createNamespace('watch-suspend')
    await configMap(ns, 'app-values', { v: '1' })
    await release(ns, 'app', ['app-values'], { suspend: true })
    const w = watch(ns)
    await w.synced()
    await configMap(ns, 'app-values', { v: '2' })
    await w.line('release skipped', { release: `${ns}/app`, reason: 'Suspended' })
    await sleep(300)
    const object = await cluster.getHelmRelease(ns, 'app')
    expect(annotations(object)[REQUESTED]).toBeUndefined()
    expect(annotations(object)[DIGEST]).toBeUndefined()

    await cluster.custom.patchNamespacedCustomObject({
      group: 'helm.toolkit.fluxcd.io',
      version: 'v2',
      plural: 'helmreleases',
      namespace: ns,
      name: 'app',
      body: [{ op: 'replace', path: '/spec/suspend', value: false }],
    })
    await digestMoves(ns, 'app', `ConfigMap/${ns}/app-values`, undefined)
  })

  it('with leader election, only the leader patches; the standby takes over when the leader stops', async () => {
    const ns = await cluster.createNamespace('watch-leader')
    await configMap(ns, 'app-values', { v: '1' })
    await release(ns, 'app', ['app-values'])
    const election = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 300 }
    const inputs = { 'leader-election': 'true', 'leader-election-namespace': ns, 'leader-election-name': 'watch' }
    const a = watch(ns, inputs, { identity: 'replica-a', election })
    await a.line('leader election: replica-a now holds Lease ' + `${ns}/watch`)
    const b = watch(ns, inputs, { identity: 'replica-b', election })
    await Promise.all([a.synced(), b.synced()])
    await digestMoves(ns, 'app', `ConfigMap/${ns}/app-values`, undefined)
    expect((await b.readyz()).body).toBe('ok: synced; standing by (leader: replica-a)')
    expect((await a.readyz()).body).toBe('ok: synced; leading')

    for (const v of ['2', '3']) {
      const before = (await digests(ns, 'app'))[`ConfigMap/${ns}/app-values`]
      await configMap(ns, 'app-values', { v })
      await digestMoves(ns, 'app', `ConfigMap/${ns}/app-values`, before)
    }
    // The counter moves after the patch's response, the log line after the counter: wait for the
    // third line (the digest is seen on the release before the leader has its response).
    const triggered = (w: WatchHandle) => w.lines.filter((l) => l.msg === 'release triggered').length
    await cluster.waitFor(() => triggered(a) === 3, { message: 'the leader to log its third trigger' })
    const [ma, mb] = await Promise.all([a.metrics(), b.metrics()])
    expect(ma.value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(3)
    expect(mb.value('helmrelease_trigger_watch_triggers_total')).toBe(0)
    expect([ma.value('helmrelease_trigger_watch_leader'), mb.value('helmrelease_trigger_watch_leader')]).toEqual([1, 0])

    // The leader releases the Lease on its way out: the standby need not wait for it to expire.
    await a.stop()
    await b.line(`leader election: replica-b now holds Lease ${ns}/watch`, {}, 10_000)
    const before = (await digests(ns, 'app'))[`ConfigMap/${ns}/app-values`]
    await configMap(ns, 'app-values', { v: '4' })
    await digestMoves(ns, 'app', `ConfigMap/${ns}/app-values`, before)
    await b.line('release triggered', { release: `${ns}/app` })
    expect((await b.metrics()).value('helmrelease_trigger_watch_triggers_total', { result: 'triggered' })).toBe(1)
  })

  it('runs as the bundled action (mode: watch) until watch-duration, then ends the job successfully with a summary', async () => {
    const ns = await cluster.createNamespace('watch-action')
    await configMap(ns, 'app-values', { v: '1' })
    await release(ns, 'app', ['app-values'])
    const dir = mkdtempSync(join(tmpdir(), 'hrt-watch-action-'))
    try {
      const summary = join(dir, 'summary.md')
      writeFileSync(summary, '')
      const inputs = { mode: 'watch', kubeconfig: readFileSync(cluster.kubeconfigPath, 'utf8'), namespaces: ns, 'watch-duration': '3s', debounce: '0' }
      const env = {
        PATH: process.env['PATH'] ?? '',
        HOME: dir,
        GITHUB_ACTIONS: 'true',
        GITHUB_STEP_SUMMARY: summary,
        ...Object.fromEntries(Object.entries(inputs).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v])),
      }
      // The bundled entry action.yml runs.
      const child = spawn(process.execPath, [join(DIST_DIR, 'index.js')], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      child.stdout.on('data', (d: Buffer) => (out += d.toString()))
      child.stderr.on('data', (d: Buffer) => (out += d.toString()))
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
      expect(code, out).toBe(0)
      expect(out).toContain(`release triggered release=${ns}/app`)
      expect(readFileSync(summary, 'utf8')).toMatch(/^## helmrelease-trigger: watch stopped \(watch-duration\) after 3\.\d+s: 1 triggered, 0 skipped, 0 failed/)
      expect(await requestedAt(ns, 'app')).toBeDefined()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the bundled CLI drains and exits 0 on SIGTERM', async () => {
    const ns = await cluster.createNamespace('watch-sigterm')
    await configMap(ns, 'app-values', { v: '1' })
    await release(ns, 'app', ['app-values'])
    const child = spawn(
      process.execPath,
      [join(DIST_DIR, 'cli.js'), 'watch', '--kubeconfig', cluster.kubeconfigPath, '--namespaces', ns, '--log-format', 'json', '--debounce', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      await cluster.waitFor(() => out.includes('"msg":"release triggered"'), { timeoutMs: 30_000, message: `the CLI to trigger; output: ${out}` })
      const signalled = Date.now()
      child.kill('SIGTERM')
      const code = await exited
      console.log(`watch CLI: SIGTERM to exit in ${Date.now() - signalled} ms`)
      expect(code).toBe(0)
      const lines = out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { msg: string; stoppedBy?: string })
      expect(lines.at(-1)).toMatchObject({ msg: 'stopped', stoppedBy: 'signal' })
    } finally {
      child.kill('SIGKILL')
    }
  })
})
