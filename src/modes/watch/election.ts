// Who may write: without leader election every replica leads; with it, only while this
// replica holds the Lease (and renewed it within the renew deadline).

import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { LeaseStore } from '../../kube/lease.ts'
import { LeaderElector, type ElectionClock, type ElectionTiming } from './leader.ts'
import type { EventLog } from './log.ts'

/** hostname plus a random suffix: two replicas on one host (or a restarted pod) differ. */
export function defaultIdentity(): string {
  return `${hostname()}-${randomBytes(3).toString('hex')}`
}

export interface CampaignOptions {
  readonly store: LeaseStore
  readonly identity: string
  readonly timing: ElectionTiming
  readonly clock: ElectionClock
  readonly log: EventLog
  readonly onStartedLeading: () => void
  readonly onStoppedLeading: () => void
}

export class Leadership {
  private leading: boolean
  private elector: LeaderElector | undefined

  /** `electing`: stand by until the Lease is held; otherwise lead from the start. */
  constructor(electing: boolean) {
    this.leading = !electing
  }

  isLeading(): boolean {
    return this.elector === undefined ? this.leading : this.leading && this.elector.isLeader()
  }

  /** The Lease's holder as last seen ('' when free), or undefined without leader election. */
  get holder(): string | undefined {
    return this.elector?.holder
  }

  /** Campaigns for the Lease until `signal` aborts (then gives it up). Rejects when RBAC refuses the Lease. */
  campaign(o: CampaignOptions, signal: AbortSignal): Promise<void> {
    this.elector = new LeaderElector({
      store: o.store,
      identity: o.identity,
      timing: o.timing,
      clock: o.clock,
      log: (level, message) => o.log.event(level, message, { identity: o.identity }),
      onStartedLeading: () => {
        this.leading = true
        o.onStartedLeading()
      },
      onStoppedLeading: () => {
        this.leading = false
        o.onStoppedLeading()
      },
    })
    return this.elector.run(signal)
  }
}
