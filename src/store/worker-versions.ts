import type { VersionAnnouncement } from '../core/version-rules.js';
import type { Millis } from '../core/types.js';

export type { VersionAnnouncement } from '../core/version-rules.js';

/** What a worker announces: the version of each tool it runs, at `now` (`WorkerVersions.announceVersions`). */
export interface AnnounceVersionsInput {
  app: string;
  workerId: string;
  versions: ReadonlyArray<{ tool: string; version: string }>;
  now: Millis;
  /**
   * The app's announcements last renewed before this are removed in the same write: rows of
   * workers that died without withdrawing, long gone. Keeps the table as small as the live fleet.
   */
  forgetBefore: Millis;
}

/**
 * The worker versions role: each worker announces the version of every tool it runs, renews the
 * announcement with its heartbeat and withdraws it when it stops; claimers read the live ones to
 * decide which task versions they may take (`decideVersionGrants`, `src/core/version-rules.ts`).
 * An announcement is a fact of the fleet, not of any task: no audit line, no notification.
 */
export interface WorkerVersions {
  /**
   * Writes or renews one row per (app, tool, version, worker): `lastSeen` becomes `now`, a new row
   * gets `firstSeen` `now` too, a renewed one keeps its `firstSeen`.
   */
  announceVersions(input: AnnounceVersionsInput): Promise<void>;
  /** Removes the worker's rows of the app (a clean stop): its versions are gone at once. */
  withdrawVersions(input: { app: string; workerId: string }): Promise<void>;
  /**
   * The announcements renewed within `silenceMs` before `now` (`isLiveAnnouncement`), of `app`
   * (absent: of every app), in (app, tool, version, worker) order.
   */
  liveVersions(input: { app?: string; now: Millis; silenceMs: number }): Promise<VersionAnnouncement[]>;
}
