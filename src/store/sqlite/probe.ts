import { existsSync } from 'node:fs';
import { openSqlite, sqliteDriver } from './connection.js';
import type { SqliteDatabase } from './driver.js';
import type { StoreProbe } from '../task-operations.js';
import { schemaStateOf } from './operations.js';

/** Looks at a SQLite store without creating, migrating or locking it (a read-only handle). */
export async function probeSqlite(path: string): Promise<StoreProbe> {
  const where = `SQLite store at ${path}`;
  if (!existsSync(path)) return { where, unreachable: 'no such file', schema: null, notifications: null };
  let db: SqliteDatabase | null = null;
  try {
    db = openSqlite(path, { readonly: true, fileMustExist: true });
    const schema = await schemaStateOf(db);
    const driver = sqliteDriver().name;
    // Other processes' writes are seen by polling the file: there is no connection to lose.
    return { where, unreachable: null, schema, notifications: null, driver };
  } catch (error) {
    return { where, unreachable: (error as Error).message, schema: null, notifications: null };
  } finally {
    db?.close();
  }
}
