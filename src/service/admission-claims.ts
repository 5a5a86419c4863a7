import type { TaskRecord } from '../core/types.js';

/**
 * Claims on admission. A worker of this process offers its free slots here; an admission of a
 * tool it runs reserves one, and a store that `claimsOnAdmit` leases the task to that worker in
 * the admission's own transaction. The task then starts without a claim transaction of its own
 * (one commit and its round trips fewer per task). The lease is the same as a claim's: a worker
 * that dies with it leaves the task to whoever claims after the lease, as always.
 */

/** A slot held for one admission until it `run`s the task the admission leased, or is `release`d. */
export interface ClaimReservation {
  owner: string;
  leaseMs: number;
  maxAttempts: number;
  /** Starts the run of the task the admission leased to `owner` (its record after the claim). */
  run(record: TaskRecord): void;
  /** The admission leased nothing (a replay, a refusal, a store error): the slot is free again. */
  release(): void;
}

export interface AdmissionClaimer {
  /** A free slot for a task of `tool`, or null (none free, a tool it does not run, stopping). */
  reserve(tool: string): ClaimReservation | null;
}

/** The claimers of one service; the first with a free slot takes the admission. */
export class AdmissionClaimers {
  private readonly claimers = new Set<AdmissionClaimer>();

  /** Offers `claimer`'s slots until the returned function is called. */
  offer(claimer: AdmissionClaimer): () => void {
    this.claimers.add(claimer);
    return () => this.claimers.delete(claimer);
  }

  reserve(tool: string): ClaimReservation | null {
    for (const claimer of this.claimers) {
      const reservation = claimer.reserve(tool);
      if (reservation !== null) return reservation;
    }
    return null;
  }
}
