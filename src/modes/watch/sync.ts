// When the view is complete and how fresh it is. Every reflector lists once before the view
// is complete; only then does a full pass run (and later, after every relist of one of them).
// Freshness is the oldest of the reflectors' last bookmark or event, for /metrics.

export type Synced =
  /** The last of the reflectors finished its first LIST: the view is complete. */
  | 'complete'
  /** A reflector listed again after its watch broke: its changes meanwhile were diffed in. */
  | 'relist'
  /** One more reflector listed for the first time; others still listing. */
  | 'partial'

export class SyncState {
  private readonly expected: number
  private readonly firstSynced = new Set<string>()
  private readonly freshAt = new Map<string, number>()
  private complete = false

  constructor(expected: number) {
    this.expected = expected
  }

  get ready(): boolean {
    return this.complete
  }

  synced(name: string, relist: boolean, at: number): Synced {
    this.freshAt.set(name, at)
    if (relist) return 'relist'
    this.firstSynced.add(name)
    if (this.complete || this.firstSynced.size < this.expected) return 'partial'
    this.complete = true
    return 'complete'
  }

  fresh(name: string, at: number): void {
    this.freshAt.set(name, at)
  }

  /** Seconds since the epoch of the stalest reflector's last sign of life; 0 before the view is complete. */
  lastSyncSeconds(): number {
    if (!this.complete || this.freshAt.size === 0) return 0
    let oldest = Infinity
    for (const at of this.freshAt.values()) oldest = Math.min(oldest, at)
    return oldest / 1000
  }
}
