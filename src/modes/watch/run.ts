// Mode `watch`: the trigger engine, event-driven. Reflectors keep the labelled ConfigMaps and
// Secrets and the HelmReleases in view; what each change means is decided in react.ts (pure),
// and this file carries it out: a change of a source's digest queues its releases (debounced
// per release); each run plans the release from the view and hands it to the same
// triggerRelease as trigger mode (trigger's action through the write engine).
// The first complete sync, every relist and every new leadership run a full pass, so changes
// made while nobody watched are caught from `<prefix>/config-digest`.

import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { mapLimit } from '../../lib/concurrency.ts'
import { SkipReason } from '../trigger/action.ts'
import { recordedDigests } from '../../core/helmrelease.ts'
import { messageOf } from '../../lib/errors.ts'
import { FLUX_KEYS, keysFor } from '../../core/keys.ts'
import type { ClusterClient, ReleaseEvent } from '../../kube/cluster.ts'
import type { HelmRelease } from '../../core/helmrelease.ts'
import type { ListScope, WatchedResource } from '../../kube/list-watch.ts'
import { releaseKey, type ReleaseRef, type SourceId, type SourceKind, type SourceRef } from '../../core/model.ts'
import { runRecover, type RecoverOptions } from '../recover/run.ts'
import { Status } from '../../engine/result.ts'
import type { Settings } from '../../settings.ts'
import { triggerRelease } from '../trigger/release.ts'
import type { TriggerOptions } from '../trigger/action.ts'
import { tokenSequence } from '../../engine/tokens.ts'
import { shownDigest } from '../../core/digest.ts'
import { DIGEST_KEY_SECRET, loadDigestKey } from '../../kube/digest-key.ts'
import { systemClock, type Clock } from '../../engine/ports.ts'
import type { WatchConnection } from '../../kube/connect.ts'
import { DEFAULT_TIMING, LeaderElector, type ElectionTiming } from './leader.ts'
import type { EventLog } from './log.ts'
import { createWatchMetrics, type WatchMetrics } from './metrics.ts'
import { EventWriter } from './event-writer.ts'
import { DebounceQueue, systemTimers, type Timers } from './queue.ts'
import { createReflector, describeRestart, type Change, type Reflector } from './reflector.ts'
import { startOpsServer, type OpsServer } from './server.ts'
import { absentDigest, parseRelease, parseSource, parseSourceId, WatchView, type Selector, type WatchedRelease, type WatchedSource } from './view.ts'
import { deletedFor, newProblems, releaseChanged, sourceChanged, sourceGone, unique, type Reaction } from './react.ts'

export interface WatchDeps {
  readonly connect: () => Promise<WatchConnection>
  readonly log: EventLog
  /** Aborted by SIGTERM/SIGINT: drain and return. */
  readonly signal: AbortSignal
  readonly clock?: Clock
  readonly timers?: Timers
  /** Leader-election identity; default hostname plus a random suffix. */
  readonly identity?: string
  readonly election?: ElectionTiming
  readonly backoff?: { readonly minMs: number; readonly maxMs: number }
  /** Bound on draining in-flight patches at shutdown. */
  readonly drainTimeoutMs?: number
}

export interface WatchReport {
  readonly triggered: number
  readonly skipped: number
  readonly failed: number
  readonly deletions: number
  readonly restarts: number
  readonly durationMs: number
  /** Why it stopped: signal, watch-duration. */
  readonly stoppedBy: string
}

interface Running {
  readonly reflector: Reflector<unknown>
  readonly name: string
}

const MAX_DEBOUNCE_FACTOR = 5
/** Events waiting to be written beyond which new ones are dropped (a burst; each ~1 KB). */
const EVENTS_WAITING_LIMIT = 10_000

export async function runWatch(settings: Settings, deps: WatchDeps): Promise<WatchReport> {
  const clock = deps.clock ?? systemClock
  const timers = deps.timers ?? systemTimers
  const { log } = deps
  const startedAt = clock.now()
  const keys = keysFor(settings.annotationPrefix)
  const connection = await deps.connect()
  const cluster = connection.cluster
  // Secret digests are keyed: the key is read (or created, race-safe) once, before the first digest.
  const loadedKey = await loadDigestKey(cluster, { namespace: settings.digestKeyNamespace, create: !settings.dryRun })
  if (loadedKey.created) log.event('info', 'digest key created', { secret: `${settings.digestKeyNamespace}/${DIGEST_KEY_SECRET}` })
  const digestKey = loadedKey.key
  const view = new WatchView(viewOptions())
  const stop = new AbortController()
  const stopReason = { text: 'signal' }
  const onSignal = (): void => stop.abort()
  if (deps.signal.aborted) stop.abort()
  deps.signal.addEventListener('abort', onSignal, { once: true })

  const reflectors: Running[] = []
  const fresh = new Map<string, number>()
  let ready = false
  let leading = !settings.leaderElection
  let elector: LeaderElector | undefined
  const isLeading = (): boolean => (elector === undefined ? leading : leading && elector.isLeader())

  const metrics: WatchMetrics = createWatchMetrics(
    {
      queueDepth: () => queue.depth,
      lastSync: () => (ready && fresh.size > 0 ? Math.min(...fresh.values()) / 1000 : 0),
      sources: () => view.sourceCount,
      releases: () => view.releaseCount,
      leader: () => (isLeading() ? 1 : 0),
      ready: () => (ready ? 1 : 0),
    },
    startedAt,
  )

  // ---- one release run: plan from the view, precheck from the cache, then the engine --------
  // force would re-trigger on our own patch's watch event, forever: not in watch mode. The
  // sources are known from their watch (a newer change queues another run), so the engine's
  // re-read of each source before patching (the superseded check) is not needed.
  const options: TriggerOptions = {
    keys,
    force: false,
    reset: settings.reset,
    checkSuperseded: false,
    requestedBy: 'by helmrelease-trigger watch',
    runUrl: undefined,
  }
  const tokens = tokenSequence()

  async function runRelease(key: string, firstEventAt: number | undefined): Promise<void> {
    if (!isLeading()) return
    const ref = refOf(key)
    const planned = view.plan(ref)
    if (planned.sources.length === 0) return
    const pre = view.precheck(planned)
    if (pre?.action === 'skip') {
      // A resync finding a release up to date is the normal case: not worth a line or a count.
      if (firstEventAt === undefined && pre.reason === SkipReason.UpToDate) return
      metrics.triggers.inc({ result: 'skipped', reason: pre.reason })
      log.event('info', 'release skipped', { release: key, reason: pre.reason, detail: pre.message })
      return
    }
    // The Event is written after the patch, so the latency measures the patch alone.
    const events: ReleaseEvent[] = []
    // The cached release decides the first attempt (no GET): its resourceVersion rides on the
    // patch, so a release changed since conflicts and the engine reads it again.
    const cached = view.release(key)
    const observed = cached === undefined ? undefined : new Map([[key, cached]])
    const outcome = await triggerRelease(planned, {
      options,
      write: {
        cluster,
        requestedAtKey: keys.requestedAt,
        dryRun: settings.dryRun,
        clock,
        log,
        tokens,
        events: { record: async (event) => void events.push(event) },
      },
      semanticDigest: settings.semanticDigest,
      digestKey,
      timeoutMs: settings.timeoutMs,
      unapplied: new Map(),
      baseline: new Map(),
      ...(observed === undefined ? {} : { observed }),
    })
    if (outcome.kind === 'triggered') {
      const { release, token } = outcome.triggered
      view.upsertRelease({ ...release, key: releaseKey(release) })
      const latencyMs = firstEventAt === undefined ? undefined : clock.now() - firstEventAt
      if (latencyMs !== undefined) metrics.latency.observe(latencyMs / 1000)
      for (const event of events) eventWriter.add(event)
      metrics.triggers.inc({ result: settings.dryRun ? 'dry-run' : 'triggered', reason: 'ReconcileRequested' })
      log.event('info', 'release triggered', {
        release: key,
        token,
        sources: planned.sources.map((s) => `${s.id}@${shownDigest(s.id, s.digest) ?? 'changed'}`).join(','),
        latencyMs,
        dryRun: settings.dryRun || undefined,
      })
      return
    }
    const r = outcome.result
    const failed = r.status === Status.Failed || r.status === Status.TimedOut
    metrics.triggers.inc({ result: failed ? 'failed' : 'skipped', reason: r.reason })
    log.event(failed ? 'error' : r.severity === 'warning' ? 'warning' : 'info', failed ? 'release trigger failed' : 'release skipped', {
      release: key,
      reason: r.reason,
      detail: r.message,
    })
  }

  const queue = new DebounceQueue<string>({
    debounceMs: settings.debounceMs,
    maxDelayMs: Math.max(settings.debounceMs * MAX_DEBOUNCE_FACTOR, 1_000),
    concurrency: settings.maxConcurrency,
    timers,
    process: (key, firstEventAt) =>
      runRelease(key, firstEventAt).catch((error: unknown) => {
        metrics.triggers.inc({ result: 'failed', reason: 'Error' })
        log.event('error', 'release run failed', { release: key, error: messageOf(error) })
      }),
  })
  if (!leading) queue.pause()

  const enqueue = (refs: readonly ReleaseRef[], at: number | undefined): void => {
    if (!ready || !isLeading()) return // the full pass after sync or on leading covers them
    for (const r of refs) queue.add(releaseKey(r), at)
  }

  function fullPass(why: string): void {
    if (!ready || !isLeading()) return
    const targets = view.allTargets()
    log.event('info', 'reconciling every watched source', { why, sources: view.sourceCount, releases: targets.length })
    for (const t of targets) queue.add(releaseKey(t), undefined, { immediate: true })
  }

  // ---- sources --------------------------------------------------------------------------------
  /** Carries out watch's reactions (react.ts). `guarded`: queue only once synced and leading. */
  function carry(reactions: readonly Reaction[], guarded: boolean): Promise<void> {
    const writes: Promise<void>[] = []
    for (const r of reactions) {
      if (r.kind === 'log') log.event(r.level, r.message, r.fields)
      else if (r.kind === 'warn') writes.push(recordWarning(cluster, r.release, r.reason, r.message))
      else if (guarded) enqueue(r.releases, r.at)
      else for (const t of r.releases) queue.add(releaseKey(t), r.at, r.immediate ? { immediate: true } : {})
    }
    return Promise.all(writes).then(() => undefined)
  }

  const warned = new Set<string>()
  function onSource(selector: Selector, change: Change<WatchedSource>, at: number): void {
    if (change.type === 'deleted') {
      const removed = view.removeSource(selector, change.object.id)
      if (removed !== undefined && ready) void checkGone(removed, change.via, at)
      return
    }
    const source = change.object
    for (const { id, problem } of newProblems(source, warned)) {
      log.event('warning', 'source annotation ignored', { source: source.id, problem })
      if (warned.size > 10_000) warned.clear() // said once per version; bounded over a long run
      warned.add(id)
    }
    const before = view.source(source.id)
    const targets = view.upsertSource(selector, source)
    void carry(sourceChanged(before, source, targets, ready, at), true)
  }

  /** Deleted or only unlabelled? Ask; a deletion is reported on each release it concerned. */
  async function checkGone(
    source: Pick<WatchedSource, 'id' | 'kind' | 'namespace' | 'name' | 'annotatedTargets'>,
    via: 'watch' | 'relist' | 'start',
    at: number | undefined,
    recordedBy: readonly ReleaseRef[] = [],
  ): Promise<void> {
    if (!isLeading()) return
    try {
      const live = await cluster.getSource(source)
      if (view.source(source.id) !== undefined) return // back already
      const targets = view.targetsOf(source).concat(source.annotatedTargets, recordedBy)
      await carry(sourceGone(source, live !== undefined, via, targets), false)
      if (live !== undefined) return
      metrics.deletions.inc()
      view.markAbsent(source)
      for (const t of unique(targets)) {
        const release = view.release(releaseKey(t)) ?? (await cluster.getRelease(t).catch(() => undefined))
        if (release !== undefined) await carry([deletedFor(release, source, keys, at)], false)
      }
    } catch (error) {
      log.event('warning', 'could not check a removed source', { source: source.id, error: messageOf(error) })
    }
  }

  /**
   * Sources a release's config-digest records that are no longer in view: deleted while nobody
   * watched (reported like a deletion seen live), or unlabelled or never labelled (nothing to do).
   * Already handled deletions (recorded as absent content) are not read again.
   */
  async function deletedWhileAway(): Promise<void> {
    const absent = absentDigest(settings.semanticDigest)
    const candidates = new Map<SourceId, { ref: SourceRef & { readonly id: SourceId }; recordedBy: ReleaseRef[] }>()
    for (const release of view.releases()) {
      for (const [id, digest] of recordedDigests(release.annotations[keys.configDigest])) {
        const ref = parseSourceId(id)
        if (ref === undefined || view.source(ref.id) !== undefined || digest === absent) continue
        if (settings.namespaces.length > 0 && !settings.namespaces.includes(ref.namespace)) continue
        const entry = candidates.get(ref.id) ?? { ref, recordedBy: [] }
        entry.recordedBy.push({ namespace: release.namespace, name: release.name })
        candidates.set(ref.id, entry)
      }
    }
    await mapLimit([...candidates.values()], settings.maxConcurrency, ({ ref, recordedBy }) =>
      checkGone({ ...ref, annotatedTargets: [] }, 'start', undefined, recordedBy),
    )
  }

  async function recordWarning(client: ClusterClient, release: HelmRelease, reason: string, message: string): Promise<void> {
    if (!settings.dryRun) await recordEvent(client, { release, type: 'Warning', reason, message })
  }

  // Beside the patches (see event-writer.ts); a dropped Event is counted, and said once per burst.
  let dropping = false
  const eventWriter = new EventWriter<ReleaseEvent>({
    concurrency: Math.max(1, Math.ceil(settings.maxConcurrency / 2)),
    limit: EVENTS_WAITING_LIMIT,
    write: async (event) => {
      await recordEvent(cluster, event)
      if (eventWriter.depth <= 1) dropping = false
    },
    onDropped: (event) => {
      metrics.eventsDropped.inc()
      if (!dropping)
        log.event('warning', 'too many Events waiting: dropping Events until the backlog clears', {
          release: releaseKey(event.release),
          waiting: EVENTS_WAITING_LIMIT,
        })
      dropping = true
    },
  })

  async function recordEvent(client: ClusterClient, event: ReleaseEvent): Promise<void> {
    try {
      await client.recordEvent(event, { dryRun: false })
    } catch (error) {
      // The trigger itself succeeded; an Event we may not create is worth a warning, not a failure.
      log.event('warning', 'could not record the Event', { release: releaseKey(event.release), error: messageOf(error) })
    }
  }

  // ---- releases -------------------------------------------------------------------------------
  function onRelease(change: Change<WatchedRelease>): void {
    if (change.type === 'deleted') {
      view.removeRelease(change.object.key)
      return
    }
    const previous = view.upsertRelease(change.object)
    if (!ready || !isLeading()) return
    const planned = view.plan(change.object)
    if (planned.sources.length === 0) return
    void carry(releaseChanged(previous, change.object, view.precheck(planned)), false)
  }

  // ---- reflectors -------------------------------------------------------------------------------
  const scopes = settings.namespaces.length > 0 ? settings.namespaces : [undefined]
  const selectors: readonly { selector: Selector; label: string }[] = [
    { selector: 'trigger', label: `${keys.triggerLabel}=${keys.triggerLabelValue}` },
    { selector: 'watch', label: `${FLUX_KEYS.watchLabel}=${FLUX_KEYS.watchLabelValue}` },
  ]
  const kinds: readonly { kind: SourceKind; resource: WatchedResource }[] = [
    { kind: 'ConfigMap', resource: 'configmaps' },
    { kind: 'Secret', resource: 'secrets' },
  ]
  const sleep = (ms: number, signal: AbortSignal): Promise<void> => abortableSleep(ms, signal)
  let synced = 0
  const reflectorHooks = (name: string) => ({
    onSynced: (relist: boolean) => {
      fresh.set(name, clock.now())
      if (relist) {
        log.event('info', 'listed again', { watch: name })
        fullPass(`relist of ${name}`)
        return
      }
      synced++
      if (synced === reflectors.length && !ready) {
        ready = true
        log.event('info', 'initial sync done', { sources: view.sourceCount, releases: view.releaseCount, ms: clock.now() - startedAt })
        fullPass('initial sync')
        void deletedWhileAway()
      }
    },
    onRestart: (reason: 'expired' | 'gone' | 'error', error: unknown) => {
      metrics.restarts.inc({ watch: name, reason })
      log.event(reason === 'error' ? 'warning' : 'debug', describeRestart(name, reason, error), { watch: name, reason })
    },
    onFresh: (at: number) => void fresh.set(name, at),
  })
  const add = (name: string, reflector: Reflector<unknown>): void => void reflectors.push({ name, reflector })
  const common = { client: connection.lists, now: () => clock.now(), sleep, ...(deps.backoff === undefined ? {} : { backoff: deps.backoff }) }
  for (const ns of scopes) {
    const where = ns ?? 'all'
    for (const { kind, resource } of kinds) {
      for (const { selector, label } of selectors) {
        const name = `${resource}/${selector}@${where}`
        const scope: ListScope = { resource, namespace: ns, labelSelector: label }
        add(
          name,
          createReflector<WatchedSource>({
            ...common,
            name,
            scope,
            parse: (o) => parseSource(kind, o, viewOptions()),
            hooks: { ...reflectorHooks(name), onChange: (c, at) => onSource(selector, c, at) },
          }),
        )
      }
    }
    const name = `helmreleases@${where}`
    add(
      name,
      createReflector<WatchedRelease>({
        ...common,
        name,
        scope: { resource: 'helmreleases', namespace: ns, labelSelector: undefined },
        parse: parseRelease,
        hooks: { ...reflectorHooks(name), onChange: (c) => onRelease(c) },
      }),
    )
  }
  function viewOptions() {
    return { keys, defaultNamespace: settings.defaultNamespace, semanticDigest: settings.semanticDigest, discover: settings.discover, digestKey }
  }

  // ---- operations endpoints ---------------------------------------------------------------------
  let server: OpsServer | undefined
  if (settings.metricsAddress !== undefined) {
    server = await startOpsServer(settings.metricsAddress, {
      health: () => ({ ok: true, body: 'ok' }),
      ready: () => {
        if (!ready) return { ok: false, body: 'initial sync in progress' }
        if (elector === undefined) return { ok: true, body: 'ok: synced' }
        return { ok: true, body: isLeading() ? 'ok: synced; leading' : `ok: synced; standing by (leader: ${elector.holder || 'none'})` }
      },
      metrics: () => metrics.registry.exposition(),
    })
    log.event('info', 'serving /healthz, /readyz and /metrics', { url: server.url })
  }

  // ---- run until stopped ---------------------------------------------------------------------------
  const where = settings.namespaces.length > 0 ? settings.namespaces.join(',') : 'all namespaces'
  log.event('info', 'watching labelled ConfigMaps and Secrets', {
    namespaces: where,
    labels: selectors.map((s) => s.label).join(' or '),
    debounceMs: settings.debounceMs,
    leaderElection: settings.leaderElection,
  })
  const durationTimer =
    settings.watchDurationMs === undefined
      ? undefined
      : setTimeout(() => {
          stopReason.text = 'watch-duration'
          stop.abort()
        }, settings.watchDurationMs)
  let fatal: unknown
  const runs = reflectors.map(({ reflector }) =>
    reflector.run(stop.signal).catch((error: unknown) => {
      fatal ??= error
      stop.abort()
    }),
  )

  const electionStop = new AbortController()
  let electing: Promise<void> = Promise.resolve()
  if (settings.leaderElection) {
    const identity = deps.identity ?? `${hostname()}-${randomBytes(3).toString('hex')}`
    elector = new LeaderElector({
      store: connection.lease(settings.leaderElectionNamespace, settings.leaderElectionName),
      identity,
      timing: deps.election ?? DEFAULT_TIMING,
      clock: { now: () => clock.now(), sleep },
      log: (level, message) => log.event(level, message, { identity }),
      onStartedLeading: () => {
        leading = true
        queue.resume()
        fullPass('became leader')
        if (ready) void deletedWhileAway()
      },
      onStoppedLeading: () => {
        leading = false
        queue.pause()
      },
    })
    log.event('info', 'leader election on', { identity, lease: `${settings.leaderElectionNamespace}/${settings.leaderElectionName}` })
    electing = elector.run(electionStop.signal).catch((error: unknown) => {
      // The Lease refused by RBAC: no replica with this role can ever lead, so say so and stop.
      fatal ??= error
      stop.abort()
    })
  }

  // No outcome wait: helm-controller reports it on the release, and the next pass sees it.
  const recoverOptions: RecoverOptions = {
    annotationPrefix: settings.annotationPrefix,
    recoverPatterns: settings.recoverPatterns,
    recoverMaxAttempts: settings.recoverMaxAttempts,
    recoverBackoffMs: settings.recoverBackoffMs,
    namespaces: settings.namespaces,
    maxConcurrency: settings.maxConcurrency,
    dryRun: settings.dryRun,
    wait: false,
    timeoutMs: settings.timeoutMs,
  }
  const recovering = settings.recoverIntervalMs === undefined ? Promise.resolve() : recoverLoop(settings.recoverIntervalMs)
  async function recoverLoop(intervalMs: number): Promise<void> {
    while (!stop.signal.aborted) {
      await abortableSleep(intervalMs, stop.signal)
      if (stop.signal.aborted || !ready || !isLeading()) continue
      try {
        const report = await runRecover(recoverOptions, { connect: async () => cluster, clock, log })
        const count = (s: string): number => report.results.filter((r) => r.status === s).length
        log.event('info', 'recover pass done', { recovered: count(Status.Triggered), skipped: count(Status.Skipped), failed: count(Status.Failed) })
      } catch (error) {
        log.event('warning', 'recover pass failed', { error: messageOf(error) })
      }
    }
  }

  await new Promise<void>((resolve) => (stop.signal.aborted ? resolve() : stop.signal.addEventListener('abort', () => resolve(), { once: true })))
  clearTimeout(durationTimer)
  deps.signal.removeEventListener('abort', onSignal)
  log.event('info', 'stopping: draining in-flight patches', { reason: fatal === undefined ? stopReason.text : 'error', inFlight: queue.inFlight })
  await Promise.all(runs)
  await withTimeout(queue.drain(), deps.drainTimeoutMs ?? 10_000)
  await withTimeout(eventWriter.drain(), deps.drainTimeoutMs ?? 10_000)
  electionStop.abort()
  await electing
  await withTimeout(recovering, 1_000)
  await server?.close()
  if (fatal !== undefined) throw fatal

  const result = (r: string): number => metrics.triggers.total({ result: r })
  const report: WatchReport = {
    triggered: result('triggered') + result('dry-run'),
    skipped: result('skipped'),
    failed: result('failed'),
    deletions: metrics.deletions.get(),
    restarts: metrics.restarts.total({ reason: 'gone' }) + metrics.restarts.total({ reason: 'error' }),
    durationMs: clock.now() - startedAt,
    stoppedBy: stopReason.text,
  }
  log.event('info', 'stopped', { ...report })
  return report
}

function refOf(key: string): ReleaseRef {
  const slash = key.indexOf('/')
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) }
}

export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = (): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

async function withTimeout(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}
