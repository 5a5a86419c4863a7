import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { applyMigrations, readMigrationFiles, type MigrationDialect, type MigrationFile } from '../migrations.js';
import { checkSchemaName, createPool, parsePostgresUrl, unavailable } from './connection.js';
import { inTransaction } from './transactions.js';

export type { MigrationFile } from '../migrations.js';

/**
 * The package's `migrations/postgres/` folder. Three levels up is the package root both from
 * `src/store/postgres/` (tests, tsx) and from `dist/store/postgres/` (the published build).
 */
export const POSTGRES_MIGRATIONS_DIR = new URL('../../../migrations/postgres/', import.meta.url);

/** The migration files of the package, in the order they apply. */
export async function readPostgresMigrations(dir: URL = POSTGRES_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  return readMigrationFiles(dir);
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
  // Without the schema on the connection: nothing resolves the schema's name before the lock
  // (a lookup made before it, while another process creates the schema, stays cached as absent
  // for the transaction: CREATE SCHEMA IF NOT EXISTS would then collide); the run sets it itself.
  const pool = createPool(Object.assign({}, parsed, { schema: null }), 1);
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
  return applyMigrations(await readPostgresMigrations(), postgresDialect(pool, schema));
}

/** PostgreSQL's hooks: one transaction for the whole run, under an advisory lock per schema. */
function postgresDialect(pool: pg.Pool, schema: string | null): MigrationDialect {
  return {
    scope: 'run',
    locked: (work) =>
      inTransaction(pool, async (client) => {
        // Key (class, schema): two schemas migrate in parallel, two runs on one schema queue.
        await client.query(`SELECT pg_advisory_xact_lock(hashtext('tasklatch.migrate'), hashtext(coalesce($1, current_schema(), '')))`, [schema]);
        if (schema !== null) {
          // After the lock: two concurrent CREATE SCHEMA IF NOT EXISTS can still collide on the
          // catalogue's unique index; the lock makes them take turns.
          await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
          await client.query(`SET LOCAL search_path TO "${schema}"`);
        }
        return work({
          async readApplied() {
            await client.query(`CREATE TABLE IF NOT EXISTS tasklatch_migrations (
              name text PRIMARY KEY,
              applied_at_ms bigint NOT NULL
            )`);
            // Through to_jsonb: the checksum column exists only from 004 on, and this read
            // comes before 004 on a database that does not have it yet.
            const rows = await client.query<{ name: string; checksum: string | null }>(
              `SELECT name, to_jsonb(m) ->> 'checksum' AS checksum FROM tasklatch_migrations m ORDER BY name`,
            );
            return rows.rows;
          },
          async runFile(file) {
            await client.query(file.sql);
            // The checksum follows from recordChecksum once 004 has added its column.
            await client.query('INSERT INTO tasklatch_migrations (name, applied_at_ms) VALUES ($1, $2)', [file.name, Date.now()]);
          },
          async recordChecksum(file) {
            await client.query('UPDATE tasklatch_migrations SET checksum = $2 WHERE name = $1 AND checksum IS NULL', [file.name, file.checksum]);
          },
          async finish() {
            // Generated here rather than by gen_random_bytes(): pgcrypto may not be installed. The
            // first process to migrate wins; every later one keeps its value.
            await client.query(`INSERT INTO tasklatch_meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING`, [randomBytes(32).toString('hex')]);
          },
        });
      }),
  };
}
