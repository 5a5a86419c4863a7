import type pg from 'pg';
import type { VersionAnnouncement } from '../../core/version-rules.js';
import type { Millis } from '../../core/types.js';
import type { AnnounceVersionsInput } from '../worker-versions.js';

/**
 * The worker versions role of the PostgreSQL store (`worker_versions`): a few rows per live
 * worker, written at each worker's heartbeat and read by it, never on a task's path. Each
 * operation is one or two single statements: nothing here needs to be atomic with anything else
 * (a renewal that lands after a concurrent forget simply writes the row again).
 */

/** The statements of the worker versions role, by camelCase name as in the other roles' maps. */
const versionSql = {
  /** Removes the app's ($1) rows last renewed before $2: workers gone without withdrawing. */
  forget: 'DELETE FROM worker_versions WHERE app = $1 AND last_seen_ms < $2',
  /** Writes or renews the worker's ($2) announcements of app $1 at $3: tools $4, versions $5; a renewed row keeps its first_seen_ms. */
  announce: `
  INSERT INTO worker_versions (app, tool_name, version, worker_id, first_seen_ms, last_seen_ms)
  SELECT $1::text, a.tool_name, a.version, $2::text, $3::bigint, $3::bigint
    FROM unnest($4::text[], $5::text[]) AS a (tool_name, version)
  ON CONFLICT (app, tool_name, version, worker_id) DO UPDATE SET last_seen_ms = excluded.last_seen_ms`,
  withdraw: 'DELETE FROM worker_versions WHERE app = $1 AND worker_id = $2',
  /** The announcements renewed after $2 (restates isLiveAnnouncement), of app $1 or (null) of every app. */
  live: `
  SELECT app, tool_name, version, worker_id, first_seen_ms, last_seen_ms FROM worker_versions
   WHERE ($1::text IS NULL OR app = $1::text) AND last_seen_ms > $2::bigint
   ORDER BY app COLLATE "C", tool_name COLLATE "C", version COLLATE "C", worker_id COLLATE "C"`,
} as const;

interface VersionRow {
  app: string;
  tool_name: string;
  version: string;
  worker_id: string;
  first_seen_ms: string;
  last_seen_ms: string;
}

export async function announceVersionsIn(pool: pg.Pool, input: AnnounceVersionsInput): Promise<void> {
  await pool.query(versionSql.forget, [input.app, input.forgetBefore]);
  if (input.versions.length === 0) return;
  await pool.query(versionSql.announce, [input.app, input.workerId, input.now, input.versions.map((v) => v.tool), input.versions.map((v) => v.version)]);
}

export async function withdrawVersionsIn(pool: pg.Pool, input: { app: string; workerId: string }): Promise<void> {
  await pool.query(versionSql.withdraw, [input.app, input.workerId]);
}

export async function liveVersionsIn(pool: pg.Pool, input: { app?: string; now: Millis; silenceMs: number }): Promise<VersionAnnouncement[]> {
  const { rows } = await pool.query<VersionRow>(versionSql.live, [input.app ?? null, input.now - input.silenceMs]);
  return rows.map((row) => ({
    app: row.app,
    tool: row.tool_name,
    version: row.version,
    workerId: row.worker_id,
    firstSeen: Number(row.first_seen_ms),
    lastSeen: Number(row.last_seen_ms),
  }));
}
