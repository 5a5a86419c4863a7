import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from './embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL server of this run (no schema): the configured one, or an embedded one. */
    pgUrl: string;
    /** A tag naming this run's schemas, so teardown drops exactly those. */
    pgRun: string;
  }
}

/** The server tests use unless `TASKLATCH_TEST_PG_URL` names another. */
export const DEFAULT_TEST_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Once per `vitest run`: pick the PostgreSQL server every test file shares. The configured
 * server when it answers within 2 s; otherwise an embedded server in a temporary directory, so
 * `npm test` needs no database set up. Teardown drops this run's schemas and stops the server.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const wanted = process.env.TASKLATCH_TEST_PG_URL ?? DEFAULT_TEST_PG_URL;
  const run = randomBytes(3).toString('hex');
  const reason = await answers(wanted);
  const server = reason === null ? { url: wanted, stop: async () => undefined } : await startEmbedded(reason);
  project.provide('pgUrl', server.url);
  project.provide('pgRun', run);
  return async () => {
    if (process.env.TASKLATCH_KEEP_SCHEMAS !== '1') await dropRunSchemas(server.url, run);
    await server.stop();
  };
}

/** Null when the server at `url` runs a query within 2 s; otherwise why not. */
async function answers(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return error instanceof Error && error.message !== '' ? error.message : String((error as { code?: unknown }).code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function startEmbedded(reason: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const started = Date.now();
  const server = await startEmbeddedPostgres();
  console.log(`[tasklatch tests] PostgreSQL not reachable (${reason}); embedded server at ${new URL(server.url).port} (${Date.now() - started} ms)`);
  return server;
}

async function dropRunSchemas(url: string, run: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const found = await client.query<{ name: string }>(`SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1`, [
      `tl_${run}_%`,
    ]);
    // One statement each: a single transaction over hundreds of schemas runs out of locks.
    for (const { name } of found.rows) await client.query(`DROP SCHEMA "${name}" CASCADE`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
