import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import pg from 'pg';
import { TasklatchError } from '../../core/errors.js';
import { checkSchemaName, createPool, inTransaction, parsePostgresUrl, unavailable } from './connection.js';

/**
 * The package's `migrations/postgres/` folder. Three levels up is the package root both from
 * `src/store/postgres/` (tests, tsx) and from `dist/store/postgres/` (the published build).
 */
export const POSTGRES_MIGRATIONS_DIR = new URL('../../../migrations/postgres/', import.meta.url);

/** One numbered SQL file. */
export interface MigrationFile {
  /** The file name, e.g. `001_init.sql`; recorded in `tasklatch_migrations`. */
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^\d{3}_[a-z0-9_]+\.sql$/;

/** The migration files of the package, in the order they apply. */
export async function readPostgresMigrations(dir: URL = POSTGRES_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((name) => MIGRATION_FILE.test(name)).sort();
  return Promise.all(names.map(async (name) => ({ name, sql: await readFile(new URL(name, dir), 'utf8') })));
}

/**
 * Applies the pending migrations to `target` (a pool, or a `postgres://` URL whose `?schema=`
 * is honoured) and returns the names it applied, none when the schema is current.
 *
 * Everything happens in one transaction under a transaction-scoped advisory lock keyed by the
 * schema, so several processes starting at once queue behind each other: the first migrates,
 * the others find nothing pending. A failing file rolls back the whole run.
 */
export async function migratePostgres(target: pg.Pool | string, schema?: string | null): Promise<string[]> {
  if (typeof target !== 'string') return migratePool(target, schema === undefined || schema === null ? null : checkSchemaName(schema));
  const parsed = parsePostgresUrl(target);
  const chosen = schema === undefined || schema === null ? parsed.schema : checkSchemaName(schema);
  const pool = createPool({ ...parsed, schema: chosen }, 1);
  try {
    await probe(pool).catch((cause: unknown) => {
      throw unavailable(parsed, cause);
    });
    return await migratePool(pool, chosen);
  } finally {
    await pool.end();
  }
}

async function probe(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  client.release();
}

async function migratePool(pool: pg.Pool, schema: string | null): Promise<string[]> {
  const files = await readPostgresMigrations();
  return inTransaction(pool, async (client) => {
    // Key (class, schema): two schemas migrate in parallel, two runs on one schema queue.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('tasklatch.migrate'), hashtext(coalesce($1, current_schema(), '')))`, [
      schema,
    ]);
    if (schema !== null) {
      // After the lock: two concurrent CREATE SCHEMA IF NOT EXISTS can still collide on the
      // catalogue's unique index; the lock makes them take turns.
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(`SET LOCAL search_path TO "${schema}"`);
    }
    await client.query(`CREATE TABLE IF NOT EXISTS tasklatch_migrations (
      name text PRIMARY KEY,
      applied_at_ms bigint NOT NULL
    )`);
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM tasklatch_migrations')).rows.map((r) => r.name));
    const known = new Set(files.map((f) => f.name));
    const unknown = [...done].filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new TasklatchError(
        'SCHEMA_MISMATCH',
        `the database has migrations this tasklatch does not know (${unknown.join(', ')}): it was migrated by a newer version`,
      );
    }
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file.name)) continue;
      await client.query(file.sql);
      await client.query('INSERT INTO tasklatch_migrations (name, applied_at_ms) VALUES ($1, $2)', [file.name, Date.now()]);
      applied.push(file.name);
    }
    // Generated here rather than by gen_random_bytes(): pgcrypto may not be installed. The first
    // process to migrate wins; every later one keeps its value, so all processes share it.
    await client.query(`INSERT INTO tasklatch_meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING`, [
      randomBytes(32).toString('hex'),
    ]);
    return applied;
  });
}
