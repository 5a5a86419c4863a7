import type { ParkMark } from '../core/park-rules.js';

/** The park columns of a `tasks` row (migrations 013 on PostgreSQL, 014 on SQLite); bigint may come back as text. */
export interface ParkColumns {
  status: string;
  parked_at_ms?: number | string | null;
  parks?: number | string | null;
}

/**
 * The park mark a row holds, as the operator reads it: a working task with `parked_at_ms` set
 * is parked (the mark of a task that ended is cleared with its terminal write, and ignored if
 * a row still has one); null otherwise.
 */
export function parkMarkOf(row: ParkColumns): ParkMark | null {
  if (row.status !== 'working' || row.parked_at_ms === null || row.parked_at_ms === undefined) return null;
  return { parkedAt: Number(row.parked_at_ms), parks: Number(row.parks ?? 0) };
}
