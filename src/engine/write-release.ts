// The one code that patches a HelmRelease, for every mode: observe → the mode's pure action
// decides → optional last look (recheck) → token → merge patch carrying the resourceVersion read
// → on 409, did our own patch land? else read again and decide again → a transient failure
// after the patch went out: read back once → Event → one typed outcome. A patch whose answer
// was lost lands once and is reported once, whichever mode sent it.

import type { HelmRelease } from '../core/helmrelease.ts'
import { releaseKey, type ReleaseRef } from '../core/model.ts'
import { ConflictError, ForbiddenError } from '../kube/api-error.ts'
import type { ClusterClient, ReleasePatch } from '../kube/cluster.ts'
import { messageOf, TransientError } from '../lib/errors.ts'
import type { Clock, EventSink, Logger } from './ports.ts'
import { Reason } from './result.ts'
import type { TokenSequence } from './tokens.ts'

/** What a mode does with one release. `W` is its write, `S` its skip: the engine only carries them. */
export interface ReleaseAction<W, S> {
  /** Pure: what to do with the release as read (undefined: it does not exist). */
  decide(live: HelmRelease | undefined, now: number): Decided<W, S>
  /**
   * A last look before writing (trigger's superseded check); may read, never writes. `listed`:
   * the decision was made on the copy the caller observed, not on a read of this attempt.
   */
  recheck?(live: HelmRelease, listed: boolean): Promise<S | undefined>
  /** Pure: the merge patch of `write` on `live`, with this attempt's token. */
  patch(write: W, live: HelmRelease, token: string): ReleasePatch
  /**
   * Pure: whether `live` already carries this patch, read after a conflict or a lost answer.
   * Default: requestedAt holds the token we sent.
   */
  landed?(write: W, live: HelmRelease, token: string): boolean
  /** Pure: the Normal Event recorded beside a write that landed (none on a dry run). */
  event?(write: W, release: HelmRelease, token: string): { readonly reason: string; readonly message: string } | undefined
}

export type Decided<W, S> = { readonly kind: 'write'; readonly write: W } | { readonly kind: 'skip'; readonly skip: S }

/** The narrow options of a write: never the whole settings. */
export interface WriteContext {
  readonly cluster: ClusterClient
  readonly requestedAtKey: string
  readonly dryRun: boolean
  readonly clock: Clock
  readonly log: Logger
  readonly tokens: TokenSequence
  readonly events: EventSink
  /**
   * The release as the caller already observed it (a LIST, a watch cache): the first attempt
   * decides on it instead of a GET; `live: undefined` means observed absent. The patch carries
   * its resourceVersion, so a release changed since conflicts and is read again.
   */
  readonly observed?: { readonly live: HelmRelease | undefined }
}

export type WriteOutcome<W, S> =
  | {
      readonly kind: 'written'
      readonly write: W
      readonly token: string
      /** The release after the write: the patch's answer, or the read that found it landed. */
      readonly release: HelmRelease
      /** The release as read for the decision that was written. */
      readonly read: HelmRelease
      readonly startedAt: number
    }
  | { readonly kind: 'skipped'; readonly skip: S; readonly live: HelmRelease | undefined; readonly startedAt: number }
  | {
      readonly kind: 'failed'
      readonly reason: typeof Reason.Forbidden | typeof Reason.PatchFailed
      readonly message: string
      /** The write last decided, when the failure came after a decision. */
      readonly attempted: W | undefined
      readonly startedAt: number
    }

/** A release changed by others this many times between our read and our patch is left as failed. */
export const MAX_CONFLICTS = 5

export async function writeRelease<W, S>(ref: ReleaseRef, action: ReleaseAction<W, S>, ctx: WriteContext): Promise<WriteOutcome<W, S>> {
  const { cluster, clock } = ctx
  const startedAt = clock.now()
  const landed = (sent: Sent<W>, live: HelmRelease): boolean =>
    action.landed === undefined ? live.annotations[ctx.requestedAtKey] === sent.token : action.landed(sent.write, live, sent.token)
  const written = async (sent: Sent<W>, release: HelmRelease): Promise<WriteOutcome<W, S>> => {
    const event = ctx.dryRun ? undefined : action.event?.(sent.write, release, sent.token)
    if (event !== undefined) await ctx.events.record({ release, type: 'Normal', ...event })
    return { kind: 'written', write: sent.write, token: sent.token, release, read: sent.read, startedAt }
  }
  let sent: Sent<W> | undefined
  let attempted: W | undefined
  try {
    for (let attempt = 1; ; attempt++) {
      const listed = attempt === 1 && ctx.observed !== undefined
      const live = listed ? ctx.observed?.live : await cluster.getRelease(ref)
      // Our last patch landed though its answer was lost (its retry then conflicted with it).
      if (sent !== undefined && live !== undefined && landed(sent, live)) return await written(sent, live)
      const decided = action.decide(live, clock.now())
      if (decided.kind === 'skip') return { kind: 'skipped', skip: decided.skip, live, startedAt }
      attempted = decided.write
      if (live === undefined) throw new Error(`${releaseKey(ref)}: the action decided to write a release that does not exist`)
      // After the read whose resourceVersion the patch carries: whatever changes later conflicts.
      const skip = action.recheck === undefined ? undefined : await action.recheck(live, listed)
      if (skip !== undefined) return { kind: 'skipped', skip, live, startedAt }
      const token = ctx.tokens.next(clock.now())
      sent = { write: decided.write, token, read: live }
      try {
        return await written(sent, await cluster.patchRelease(ref, action.patch(decided.write, live, token), { dryRun: ctx.dryRun }))
      } catch (error) {
        // Someone changed the release between our read and our patch: observe again, decide again.
        if (!(error instanceof ConflictError) || attempt >= MAX_CONFLICTS) throw error
      }
    }
  } catch (error) {
    // The connection failed after a patch went out: it may have landed. Look once more, so the report says what happened.
    const uncertain = sent !== undefined && !ctx.dryRun && error instanceof TransientError ? sent : undefined
    let unread = false
    if (uncertain !== undefined) {
      const live = await cluster.getRelease(ref).catch(() => {
        unread = true
        return undefined
      })
      if (live !== undefined && landed(uncertain, live)) return await written(uncertain, live)
    }
    const message =
      uncertain !== undefined && unread
        ? `${messageOf(error)} Whether the patch (requestedAt ${uncertain.token}) landed could not be read back.`
        : messageOf(error)
    ctx.log.warning(`${releaseKey(ref)}: ${message}`)
    return { kind: 'failed', reason: error instanceof ForbiddenError ? Reason.Forbidden : Reason.PatchFailed, message, attempted, startedAt }
  }
}

interface Sent<W> {
  readonly write: W
  readonly token: string
  readonly read: HelmRelease
}
