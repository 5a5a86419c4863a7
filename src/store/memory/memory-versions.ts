import { isLiveAnnouncement, type VersionAnnouncement } from '../../core/version-rules.js';
import type { Millis } from '../../core/types.js';
import type { AnnounceVersionsInput, WorkerVersions } from '../worker-versions.js';

/** The key of one announcement: the primary key of the SQL stores' `worker_versions`. */
function keyOf(app: string, tool: string, version: string, workerId: string): string {
  return JSON.stringify([app, tool, version, workerId]);
}

/**
 * The worker versions role of the memory store: the announcements in a map keyed like the SQL
 * stores' `worker_versions` rows. Each method runs to completion without awaiting.
 */
export class MemoryVersions implements WorkerVersions {
  private readonly rows = new Map<string, VersionAnnouncement>();

  async announceVersions(input: AnnounceVersionsInput): Promise<void> {
    for (const [key, row] of this.rows) if (row.app === input.app && row.lastSeen < input.forgetBefore) this.rows.delete(key);
    for (const { tool, version } of input.versions) {
      const key = keyOf(input.app, tool, version, input.workerId);
      const prior = this.rows.get(key);
      if (prior !== undefined) prior.lastSeen = input.now;
      else this.rows.set(key, { app: input.app, tool, version, workerId: input.workerId, firstSeen: input.now, lastSeen: input.now });
    }
  }

  async withdrawVersions(input: { app: string; workerId: string }): Promise<void> {
    for (const [key, row] of this.rows) if (row.app === input.app && row.workerId === input.workerId) this.rows.delete(key);
  }

  async liveVersions(input: { app?: string; now: Millis; silenceMs: number }): Promise<VersionAnnouncement[]> {
    return [...this.rows.values()]
      .filter((row) => (input.app === undefined || row.app === input.app) && isLiveAnnouncement(row, input.now, input.silenceMs))
      .map((row) => Object.assign({}, row))
      .sort((a, b) => compareText(a.app, b.app) || compareText(a.tool, b.tool) || compareText(a.version, b.version) || compareText(a.workerId, b.workerId));
  }
}

/** Code-unit order, as the SQL stores' text keys sort under a C collation. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
