import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { StoreProbe } from '../probe-store.js';
import { schemaStateOf } from './operations.js';

/** Looks at a SQLite store without creating, migrating or locking it (a read-only handle). */
export async function probeSqlite(path: string): Promise<StoreProbe> {
  const where = `SQLite store at ${path}`;
  if (!existsSync(path)) return { where, unreachable: 'no such file', schema: null, notifications: null };
  let db: Database.Database | null = null;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const schema = await schemaStateOf(db);
    // Other processes' writes are seen by polling the file: there is no connection to lose.
    return { where, unreachable: null, schema, notifications: null };
  } catch (error) {
    return { where, unreachable: (error as Error).message, schema: null, notifications: null };
  } finally {
    db?.close();
  }
}
