import type { SqliteDatabase, SqliteStatement } from './driver.js';
import type { VersionAnnouncement } from '../../core/version-rules.js';
import type { Millis } from '../../core/types.js';
import type { AnnounceVersionsInput } from '../worker-versions.js';

/**
 * The worker versions role of the SQLite store (`worker_versions`). The writes run inside the
 * caller's `BEGIN IMMEDIATE` transaction; none touches `tasks`.
 */

/** The statements of the worker versions role in SQLite, by camelCase name as in the other roles' maps. */
const versionSql = {
  /** Removes the app's rows last renewed before @forget_before: workers gone without withdrawing. */
  forget: 'DELETE FROM worker_versions WHERE app = @app AND last_seen_ms < @forget_before',
  /** Writes or renews one announcement; a renewed row keeps when it was first seen. */
  announce: `INSERT INTO worker_versions (app, tool_name, version, worker_id, first_seen_ms, last_seen_ms)
     VALUES (@app, @tool_name, @version, @worker_id, @now, @now)
     ON CONFLICT (app, tool_name, version, worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`,
  withdraw: 'DELETE FROM worker_versions WHERE app = @app AND worker_id = @worker_id',
  /** The announcements renewed after @since (restates isLiveAnnouncement), of @app or (null) of every app. */
  live: `SELECT app, tool_name, version, worker_id, first_seen_ms, last_seen_ms FROM worker_versions
     WHERE (@app IS NULL OR app = @app) AND last_seen_ms > @since
     ORDER BY app, tool_name, version, worker_id`,
} as const;

export type VersionStatements = { readonly [K in keyof typeof versionSql]: SqliteStatement };

export function prepareVersionStatements(db: SqliteDatabase): VersionStatements {
  return Object.fromEntries(Object.entries(versionSql).map(([name, text]) => [name, db.prepare(text)] as const)) as VersionStatements;
}

interface VersionRow {
  app: string;
  tool_name: string;
  version: string;
  worker_id: string;
  first_seen_ms: number;
  last_seen_ms: number;
}

export function announceVersionsIn(sql: VersionStatements, input: AnnounceVersionsInput): void {
  sql.forget.run({ app: input.app, forget_before: input.forgetBefore });
  for (const { tool, version } of input.versions) {
    sql.announce.run({ app: input.app, tool_name: tool, version, worker_id: input.workerId, now: input.now });
  }
}

export function withdrawVersionsIn(sql: VersionStatements, input: { app: string; workerId: string }): void {
  sql.withdraw.run({ app: input.app, worker_id: input.workerId });
}

export function liveVersionsIn(sql: VersionStatements, input: { app?: string; now: Millis; silenceMs: number }): VersionAnnouncement[] {
  const rows = sql.live.all({ app: input.app ?? null, since: input.now - input.silenceMs }) as VersionRow[];
  return rows.map((row) => ({
    app: row.app,
    tool: row.tool_name,
    version: row.version,
    workerId: row.worker_id,
    firstSeen: Number(row.first_seen_ms),
    lastSeen: Number(row.last_seen_ms),
  }));
}
