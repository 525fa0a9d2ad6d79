// Leader election against an in-memory Lease with resourceVersions, on a fake clock: who may
// take the Lease and when, renewals, the renew deadline, release on shutdown, conflicts, RBAC.
import { describe, expect, it } from 'vitest'
import { ConflictError, ForbiddenError } from '../../../../src/kube/api-error.ts'
import type { LeaseRecord, LeaseStore, StoredLease } from '../../../../src/kube/lease.ts'
import { LeaderElector, microTime, type ElectionTiming } from '../../../../src/modes/watch/leader.ts'

class MemoryLease implements LeaseStore {
  readonly description = 'Lease test/watch'
  stored: StoredLease | undefined
  private version = 1
  /** When set, every call fails (the apiserver is away). */
  down = false
  /** Verbs RBAC refuses. */
  readonly denied = new Set<'get' | 'create' | 'update'>()
  async get(): Promise<StoredLease | undefined> {
    if (this.down) throw new Error('connection refused')
    this.refuse('get')
    return this.stored
  }
  async create(record: LeaseRecord): Promise<StoredLease> {
    if (this.down) throw new Error('connection refused')
    this.refuse('create')
    if (this.stored !== undefined) throw new ConflictError('exists')
    this.stored = { record, resourceVersion: String(this.version++) }
    return this.stored
  }
  async update(record: LeaseRecord, resourceVersion: string): Promise<StoredLease> {
    if (this.down) throw new Error('connection refused')
    this.refuse('update')
    if (this.stored?.resourceVersion !== resourceVersion) throw new ConflictError('changed')
    this.stored = { record, resourceVersion: String(this.version++) }
    return this.stored
  }
  private refuse(verb: 'get' | 'create' | 'update'): void {
    if (this.denied.has(verb)) throw new ForbiddenError(`Forbidden: cannot ${verb} leases.coordination.k8s.io`)
  }
}

const timing: ElectionTiming = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }

function candidate(store: LeaseStore, identity: string, clock: { t: number }) {
  const changes: string[] = []
  const elector = new LeaderElector({
    store,
    identity,
    timing,
    clock: { now: () => clock.t, sleep: async () => undefined },
    onStartedLeading: () => changes.push('started'),
    onStoppedLeading: () => changes.push('stopped'),
    log: () => undefined,
  })
  return { elector, changes }
}

describe('LeaderElector', () => {
  it('creates a missing Lease and holds it, with MicroTime timestamps', async () => {
    const store = new MemoryLease()
    const clock = { t: Date.UTC(2026, 10, 22, 10, 0, 0) }
    const { elector } = candidate(store, 'a', clock)
    expect(await elector.tryAcquireOrRenew()).toBe(true)
    expect(elector.holder).toBe('a')
    expect(store.stored?.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-11-22T10:00:00.000000Z',
      renewTime: '2026-11-22T10:00:00.000000Z',
      leaseTransitions: 0,
    })
  })

  it('lets a second candidate take a held Lease only once it has not changed for the lease duration on its own clock', async () => {
    const store = new MemoryLease()
    const clock = { t: 1_000_000 }
    const a = candidate(store, 'a', clock)
    const b = candidate(store, 'b', clock)
    expect(await a.elector.tryAcquireOrRenew()).toBe(true)
    expect(await b.elector.tryAcquireOrRenew()).toBe(false)
    clock.t += 14_999
    expect(await b.elector.tryAcquireOrRenew()).toBe(false)
    clock.t += 1
    expect(await b.elector.tryAcquireOrRenew()).toBe(true)
    expect(store.stored?.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 })
  })

  it('does not trust the holder renewTime: a renewing leader keeps the Lease whatever the clocks say', async () => {
    const store = new MemoryLease()
    const clock = { t: 1_000_000 }
    const a = candidate(store, 'a', clock)
    const b = candidate(store, 'b', clock)
    await a.elector.tryAcquireOrRenew()
    for (let i = 0; i < 20; i++) {
      clock.t += 2_000
      expect(await a.elector.tryAcquireOrRenew()).toBe(true)
      expect(await b.elector.tryAcquireOrRenew()).toBe(false)
    }
    expect(store.stored?.record.holderIdentity).toBe('a')
    expect(store.stored?.record.acquireTime).toBe(microTime(1_000_000))
  })

  it('is leader only while its last renewal is younger than the renew deadline', async () => {
    const store = new MemoryLease()
    const clock = { t: 0 }
    const stop = new AbortController()
    let rounds = 0
    let leaderWhileAway = false
    const running = new LeaderElector({
      store,
      identity: 'a',
      timing,
      clock: {
        now: () => clock.t,
        sleep: async () => {
          clock.t += 2_000
          if (++rounds === 3) store.down = true
          // 8 s after the last renewal: still inside the 10 s deadline.
          if (rounds === 6) leaderWhileAway = running.isLeader()
          if (rounds > 12) stop.abort()
        },
      },
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
      log: () => undefined,
    })
    await running.run(stop.signal)
    expect(leaderWhileAway).toBe(true)
    // Renewals failed from the third round on: it gave leadership up once the deadline passed.
    expect(running.isLeader()).toBe(false)
  })

  it('runs the callbacks, stands by after the renew deadline, and releases the Lease on shutdown', async () => {
    const store = new MemoryLease()
    const clock = { t: 0 }
    const changes: string[] = []
    const stop = new AbortController()
    let rounds = 0
    const elector = new LeaderElector({
      store,
      identity: 'a',
      timing,
      clock: {
        now: () => clock.t,
        sleep: async () => {
          clock.t += 2_000
          rounds++
          store.down = rounds >= 2 && rounds < 8 // away for 12 s: longer than the renew deadline
          if (rounds === 12) stop.abort()
        },
      },
      onStartedLeading: () => changes.push('started'),
      onStoppedLeading: () => changes.push('stopped'),
      log: () => undefined,
    })
    await elector.run(stop.signal)
    expect(changes).toEqual(['started', 'stopped', 'started', 'stopped'])
    expect(store.stored?.record).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 })
  })

  it('after a release, another candidate takes the Lease at once', async () => {
    const store = new MemoryLease()
    const clock = { t: 5_000 }
    const a = candidate(store, 'a', clock)
    const b = candidate(store, 'b', clock)
    await a.elector.tryAcquireOrRenew()
    expect(await b.elector.tryAcquireOrRenew()).toBe(false)
    await a.elector.release()
    expect(await b.elector.tryAcquireOrRenew()).toBe(true)
    expect(store.stored?.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 })
  })

  it('loses a race on the resourceVersion instead of both winning', async () => {
    const store = new MemoryLease()
    const clock = { t: 0 }
    const a = candidate(store, 'a', clock)
    const b = candidate(store, 'b', clock)
    const results = await Promise.all([a.elector.tryAcquireOrRenew(), b.elector.tryAcquireOrRenew()])
    expect(results.filter(Boolean)).toHaveLength(1)
  })

  it.each(['get', 'create'] as const)('rejects at once when RBAC refuses %s on the Lease, instead of standing by forever', async (verb) => {
    const store = new MemoryLease()
    store.denied.add(verb)
    const changes: string[] = []
    const elector = new LeaderElector({
      store,
      identity: 'a',
      timing,
      clock: { now: () => 0, sleep: async () => undefined },
      onStartedLeading: () => changes.push('started'),
      onStoppedLeading: () => changes.push('stopped'),
      log: () => undefined,
    })
    await expect(elector.run(new AbortController().signal)).rejects.toThrow(`cannot ${verb} leases`)
    expect(changes).toEqual([])
  })

  it('stops leading, then rejects, when RBAC refuses the renewal', async () => {
    const store = new MemoryLease()
    store.denied.add('update')
    const clock = { t: 0 }
    const changes: string[] = []
    const elector = new LeaderElector({
      store,
      identity: 'a',
      timing,
      clock: { now: () => clock.t, sleep: async () => void (clock.t += 2_000) },
      onStartedLeading: () => changes.push('started'),
      onStoppedLeading: () => changes.push(`stopped (leader: ${elector.isLeader()})`),
      log: () => undefined,
    })
    await expect(elector.run(new AbortController().signal)).rejects.toThrow('cannot update leases')
    expect(changes).toEqual(['started', 'stopped (leader: false)'])
    expect(store.stored?.record.holderIdentity).toBe('a')
  })

  it('refuses a renew deadline not shorter than the lease duration', () => {
    expect(
      () =>
        new LeaderElector({
          store: new MemoryLease(),
          identity: 'a',
          timing: { leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 1_000 },
          clock: { now: () => 0, sleep: async () => undefined },
          onStartedLeading: () => undefined,
          onStoppedLeading: () => undefined,
          log: () => undefined,
        }),
    ).toThrow(/renew deadline/)
  })
})
