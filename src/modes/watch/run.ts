// Mode `watch`: the trigger engine, event-driven. This file is the wiring only. Reflectors
// (reflectors.ts) keep the labelled ConfigMaps and Secrets and the HelmReleases in view
// (view.ts); what each change means is decided in react.ts (pure) and carried out in
// changes.ts: a change of a source's digest queues its releases (debounced per release); each
// run (release-run.ts) plans the release from the view and hands it to the same triggerRelease
// as trigger mode. The first complete sync, every relist and every new leadership run a full
// pass, so changes made while nobody watched are caught from `<prefix>/config-digest`;
// deletions made meanwhile are found by gone.ts.

import { keysFor } from '../../core/keys.ts'
import { DIGEST_KEY_SECRET, loadDigestKey } from '../../kube/digest-key.ts'
import { systemClock, type Clock } from '../../engine/ports.ts'
import type { WatchConnection } from '../../kube/connect.ts'
import { mapLimit } from '../../lib/concurrency.ts'
import { messageOf } from '../../lib/errors.ts'
import type { Settings } from '../../settings.ts'
import { createChangeHandlers } from './changes.ts'
import { defaultIdentity, Leadership } from './election.ts'
import { createWatchEvents } from './events.ts'
import { awayCandidates, createGoneCheck } from './gone.ts'
import { DEFAULT_TIMING, type ElectionTiming } from './leader.ts'
import type { EventLog } from './log.ts'
import { createWatchMetrics } from './metrics.ts'
import { serveOps } from './ops.ts'
import { DebounceQueue, systemTimers, type Timers } from './queue.ts'
import { recoverLoop } from './recover-loop.ts'
import { describeRestart } from './reflector.ts'
import { createReflectors, reflectorSpecs, sourceSelectors } from './reflectors.ts'
import { createReleaseRun } from './release-run.ts'
import { watchReport, type WatchReport } from './report.ts'
import { abortableSleep, withTimeout } from './sleep.ts'
import { SyncState } from './sync.ts'
import { absentDigest, WatchView } from './view.ts'

export type { WatchReport } from './report.ts'

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

const MAX_DEBOUNCE_FACTOR = 5

export async function runWatch(settings: Settings, deps: WatchDeps): Promise<WatchReport> {
  const clock = deps.clock ?? systemClock
  const { log } = deps
  const startedAt = clock.now()
  const keys = keysFor(settings.annotationPrefix)
  const connection = await deps.connect()
  const cluster = connection.cluster
  // Secret digests are keyed: the key is read (or created, race-safe) once, before the first digest.
  const loadedKey = await loadDigestKey(cluster, { namespace: settings.digestKeyNamespace, create: !settings.dryRun })
  if (loadedKey.created) log.event('info', 'digest key created', { secret: `${settings.digestKeyNamespace}/${DIGEST_KEY_SECRET}` })
  const digestKey = loadedKey.key
  const viewOptions = {
    keys,
    defaultNamespace: settings.defaultNamespace,
    crossNamespaceTargets: settings.crossNamespaceTargets,
    semanticDigest: settings.semanticDigest,
    discover: settings.discover,
    digestKey,
  }
  const view = new WatchView(viewOptions)
  const stop = new AbortController()
  let stoppedBy = 'signal'
  const onSignal = (): void => stop.abort()
  if (deps.signal.aborted) stop.abort()
  deps.signal.addEventListener('abort', onSignal, { once: true })

  const specs = reflectorSpecs(settings.namespaces, keys)
  const sync = new SyncState(specs.length)
  const leadership = new Leadership(settings.leaderElection)
  const leading = (): boolean => leadership.isLeading()
  const metrics = createWatchMetrics(
    {
      queueDepth: () => queue.depth,
      lastSync: () => sync.lastSyncSeconds(),
      sources: () => view.sourceCount,
      releases: () => view.releaseCount,
      leader: () => (leading() ? 1 : 0),
      ready: () => (sync.ready ? 1 : 0),
    },
    startedAt,
  )
  const events = createWatchEvents({ cluster, log, metrics, maxConcurrency: settings.maxConcurrency, dryRun: settings.dryRun, now: () => clock.now() })
  const eventTicks = setInterval(() => events.tick(), 1_000).unref()
  const runRelease = createReleaseRun({
    settings,
    keys,
    view,
    cluster,
    clock,
    log,
    metrics,
    isLeading: leading,
    digestKey,
    onEvents: (e) => e.forEach(events.add),
  })
  const queue = new DebounceQueue<string>({
    debounceMs: settings.debounceMs,
    maxDelayMs: Math.max(settings.debounceMs * MAX_DEBOUNCE_FACTOR, 1_000),
    concurrency: settings.maxConcurrency,
    timers: deps.timers ?? systemTimers,
    process: (key, firstEventAt) =>
      runRelease(key, firstEventAt).catch((error: unknown) => {
        metrics.triggers.inc({ result: 'failed', reason: 'Error' })
        log.event('error', 'release run failed', { release: key, error: messageOf(error) })
      }),
  })
  if (!leading()) queue.pause()

  // A source gone is checked (gone.ts) and its consequences carried out unguarded by the handlers.
  const handlers = createChangeHandlers({ view, log, events, queue, ready: () => sync.ready, leading, checkGone: (s, via, at) => checkGone(s, via, at) })
  const checkGone = createGoneCheck({ cluster, view, keys, log, metrics, isLeading: leading, carry: (r) => handlers.carry(r, false) })
  const { fullPass } = handlers

  /** Deletions made while nobody watched: sources a release records that are not in view. */
  const deletedWhileAway = async (): Promise<void> => {
    const away = awayCandidates(
      view.releases(),
      (id) => view.source(id) !== undefined,
      keys.configDigest,
      absentDigest(settings.semanticDigest),
      settings.namespaces,
    )
    await mapLimit(away, settings.maxConcurrency, ({ ref, recordedBy }) => checkGone({ ...ref, annotatedTargets: [] }, 'start', undefined, recordedBy))
  }

  const sleep = (ms: number, signal: AbortSignal): Promise<void> => abortableSleep(ms, signal)
  const reflectors = createReflectors(specs, {
    client: connection.lists,
    now: () => clock.now(),
    sleep,
    ...(deps.backoff === undefined ? {} : { backoff: deps.backoff }),
    view: viewOptions,
    onSource: handlers.onSource,
    onRelease: handlers.onRelease,
    hooks: (name) => ({
      onSynced: (relist) => {
        const synced = sync.synced(name, relist, clock.now())
        if (synced === 'relist') {
          log.event('info', 'listed again', { watch: name })
          fullPass(`relist of ${name}`)
        } else if (synced === 'complete') {
          log.event('info', 'initial sync done', { sources: view.sourceCount, releases: view.releaseCount, ms: clock.now() - startedAt })
          fullPass('initial sync')
          void deletedWhileAway()
        }
      },
      onRestart: (reason, error) => {
        metrics.restarts.inc({ watch: name, reason })
        log.event(reason === 'error' ? 'warning' : 'debug', describeRestart(name, reason, error), { watch: name, reason })
      },
      onFresh: (at) => sync.fresh(name, at),
    }),
  })

  const server = await serveOps(
    settings.metricsAddress,
    { ready: () => sync.ready, leading, holder: () => leadership.holder, metrics: () => metrics.registry.exposition() },
    log,
  )

  // ---- run until stopped ---------------------------------------------------------------------------
  log.event('info', 'watching labelled ConfigMaps and Secrets', {
    namespaces: settings.namespaces.length > 0 ? settings.namespaces.join(',') : 'all namespaces',
    labels: sourceSelectors(keys)
      .map((s) => s.label)
      .join(' or '),
    debounceMs: settings.debounceMs,
    leaderElection: settings.leaderElection,
  })
  const durationTimer =
    settings.watchDurationMs === undefined
      ? undefined
      : setTimeout(() => {
          stoppedBy = 'watch-duration'
          stop.abort()
        }, settings.watchDurationMs)
  let fatal: unknown
  const failed = (error: unknown): void => {
    fatal ??= error
    stop.abort()
  }
  const runs = reflectors.map(({ reflector }) => reflector.run(stop.signal).catch(failed))

  const electionStop = new AbortController()
  let electing: Promise<void> = Promise.resolve()
  if (settings.leaderElection) {
    const identity = deps.identity ?? defaultIdentity()
    const campaign = {
      store: connection.lease(settings.leaderElectionNamespace, settings.leaderElectionName),
      identity,
      timing: deps.election ?? DEFAULT_TIMING,
      clock: { now: () => clock.now(), sleep },
      log,
      onStartedLeading: () => {
        queue.resume()
        fullPass('became leader')
        if (sync.ready) void deletedWhileAway()
      },
      onStoppedLeading: () => queue.pause(),
    }
    log.event('info', 'leader election on', { identity, lease: `${settings.leaderElectionNamespace}/${settings.leaderElectionName}` })
    // The Lease refused by RBAC: no replica with this role can ever lead, so say so and stop.
    electing = leadership.campaign(campaign, electionStop.signal).catch(failed)
  }

  const { recoverIntervalMs } = settings
  const recovering =
    recoverIntervalMs === undefined
      ? Promise.resolve()
      : recoverLoop({ settings: { ...settings, recoverIntervalMs }, cluster, clock, log, active: () => sync.ready && leading(), signal: stop.signal })

  await new Promise<void>((resolve) => (stop.signal.aborted ? resolve() : stop.signal.addEventListener('abort', () => resolve(), { once: true })))
  clearTimeout(durationTimer)
  clearInterval(eventTicks)
  deps.signal.removeEventListener('abort', onSignal)
  log.event('info', 'stopping: draining in-flight patches', { reason: fatal === undefined ? stoppedBy : 'error', inFlight: queue.inFlight })
  await Promise.all(runs)
  await withTimeout(queue.drain(), deps.drainTimeoutMs ?? 10_000)
  await withTimeout(events.drain(), deps.drainTimeoutMs ?? 10_000)
  electionStop.abort()
  await electing
  await withTimeout(recovering, 1_000)
  await server?.close()
  if (fatal !== undefined) throw fatal

  const report = watchReport(metrics, clock.now() - startedAt, stoppedBy)
  log.event('info', 'stopped', { ...report })
  return report
}
