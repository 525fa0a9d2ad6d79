// Lease-based leader election with client-go's semantics (tools/leaderelection): a candidate
// takes the Lease when it is free or when its record has not changed for leaseDuration as
// measured on OUR clock since we last saw it change (no trust in other machines' clocks); the
// leader renews every retryPeriod and gives up when it could not renew for renewDeadline,
// which is shorter than leaseDuration, so it has stopped before anyone else may take over.
// Releasing on shutdown empties the holder so a standby takes over at once.

import { messageOf } from '../../lib/errors.ts'
import { ConflictError, ForbiddenError } from '../../kube/api-error.ts'
import type { LeaseRecord, LeaseStore, StoredLease } from '../../kube/lease.ts'

export interface ElectionTiming {
  readonly leaseDurationMs: number
  readonly renewDeadlineMs: number
  readonly retryPeriodMs: number
}

/** controller-runtime's defaults. */
export const DEFAULT_TIMING: ElectionTiming = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }

export interface ElectionClock {
  now(): number
  sleep(ms: number, signal: AbortSignal): Promise<void>
}

export interface ElectorOptions {
  readonly store: LeaseStore
  readonly identity: string
  readonly timing: ElectionTiming
  readonly clock: ElectionClock
  readonly onStartedLeading: () => void
  readonly onStoppedLeading: () => void
  readonly log: (level: 'info' | 'warning', message: string) => void
}

export class LeaderElector {
  private readonly options: ElectorOptions
  private observed: { raw: string; record: LeaseRecord; at: number; resourceVersion: string } | undefined
  private lastRenew: number | undefined
  private leading = false

  constructor(options: ElectorOptions) {
    if (options.timing.renewDeadlineMs >= options.timing.leaseDurationMs)
      throw new Error('leader election: the renew deadline must be shorter than the lease duration')
    this.options = options
  }

  /** True only while the last renewal is younger than the renew deadline. */
  isLeader(): boolean {
    return this.leading && this.lastRenew !== undefined && this.options.clock.now() - this.lastRenew < this.options.timing.renewDeadlineMs
  }

  /** The holder as last observed ('' when free or unknown). */
  get holder(): string {
    return this.observed?.record.holderIdentity ?? ''
  }

  /**
   * One round: take or renew the Lease. True when we hold it afterwards. Errors (the apiserver
   * away, a conflict with another candidate) count as not holding it this round; RBAC refusing
   * the Lease throws, as no later round can succeed.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { store, identity, timing, clock } = this.options
    const now = clock.now()
    const fresh: LeaseRecord = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(timing.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    }
    try {
      const current = await store.get()
      if (current === undefined) {
        this.remember(await store.create(fresh), clock.now())
        this.lastRenew = now
        return true
      }
      const raw = JSON.stringify(current.record)
      if (this.observed === undefined || this.observed.raw !== raw)
        this.observed = { raw, record: current.record, at: now, resourceVersion: current.resourceVersion }
      const held = current.record.holderIdentity
      const mine = held === identity
      if (held !== '' && !mine && this.observed.at + current.record.leaseDurationSeconds * 1000 > now) return false
      const next: LeaseRecord = mine
        ? { ...current.record, leaseDurationSeconds: fresh.leaseDurationSeconds, renewTime: fresh.renewTime }
        : { ...fresh, leaseTransitions: current.record.leaseTransitions + 1 }
      this.remember(await store.update(next, current.resourceVersion), clock.now())
      this.lastRenew = now
      return true
    } catch (error) {
      if (error instanceof ForbiddenError) throw error
      if (!(error instanceof ConflictError)) this.options.log('warning', `leader election: ${store.description}: ${messageOf(error)}`)
      return false
    }
  }

  /** Campaigns, leads and renews until `signal` aborts; then releases the Lease when leading. Rejects when RBAC refuses the Lease. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      await this.campaign(signal)
    } catch (error) {
      // Stop patching before the caller hears of it, as when a renewal misses its deadline.
      if (this.leading) {
        this.leading = false
        this.options.onStoppedLeading()
      }
      throw error
    }
  }

  private async campaign(signal: AbortSignal): Promise<void> {
    const { timing, clock, log, identity, store } = this.options
    while (!signal.aborted) {
      // Standby: try every retry period (jittered, as client-go does).
      if (!(await this.tryAcquireOrRenew())) {
        await clock.sleep(timing.retryPeriodMs * (1 + Math.random() * 0.2), signal)
        continue
      }
      this.leading = true
      log('info', `leader election: ${identity} now holds ${store.description}`)
      this.options.onStartedLeading()
      // Leading: renew every retry period; give up when no renewal succeeded within the deadline.
      while (!signal.aborted) {
        await clock.sleep(timing.retryPeriodMs, signal)
        if (signal.aborted) break
        const renewed = await this.tryAcquireOrRenew()
        if (!renewed && clock.now() - (this.lastRenew ?? 0) >= timing.renewDeadlineMs) break
      }
      this.leading = false
      if (signal.aborted) {
        await this.release()
        this.options.onStoppedLeading()
        return
      }
      log('warning', `leader election: ${identity} could not renew ${store.description} within ${timing.renewDeadlineMs / 1000} s; standing by`)
      this.options.onStoppedLeading()
    }
  }

  /** Gives the Lease up (holder emptied) when we hold it, so a standby need not wait for it to expire. */
  async release(): Promise<void> {
    const { store, identity, clock } = this.options
    try {
      const current = await store.get()
      if (current === undefined || current.record.holderIdentity !== identity) return
      const now = microTime(clock.now())
      await store.update({ ...current.record, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now }, current.resourceVersion)
      this.options.log('info', `leader election: ${identity} released ${store.description}`)
    } catch (error) {
      this.options.log('warning', `leader election: could not release ${store.description}: ${messageOf(error)}`)
    } finally {
      this.leading = false
      this.lastRenew = undefined
    }
  }

  private remember(stored: StoredLease, at: number): void {
    this.observed = { raw: JSON.stringify(stored.record), record: stored.record, at, resourceVersion: stored.resourceVersion }
  }
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}
