import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './embedded-postgres.js';

/** Debian's PgBouncer (1.18 in bookworm: no prepared statements in transaction mode). */
export const PGBOUNCER_BIN = process.env.TASKLATCH_PGBOUNCER ?? '/usr/sbin/pgbouncer';

/** A PgBouncer in transaction mode in front of one PostgreSQL server, in a directory of its own. */
export interface Pooler {
  /** `postgres://…` of the pooler, same user and database as the server's URL, no parameters. */
  url: string;
  /** The PgBouncer process's id (its CPU in /proc/<pid>/stat). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/** Why a pooler cannot be started here, or null when it can. */
export function poolerUnavailable(serverEmbedded: boolean): string | null {
  if (!existsSync(PGBOUNCER_BIN)) return `PgBouncer not installed (${PGBOUNCER_BIN}; apt-get install pgbouncer)`;
  if (serverEmbedded) return 'PostgreSQL is the embedded test server; PgBouncer runs only in front of a configured one';
  return null;
}

export interface PoolerOptions {
  /**
   * Runs `DISCARD ALL` after every transaction (`server_reset_query_always`): anything a client
   * left in a server session (a prepared statement, a SET, a LISTEN) is gone before the next
   * transaction, whoever runs it. On for tests, off for the bench.
   */
  resetAlways?: boolean;
  /** Server connections per database and user (default 20). */
  poolSize?: number;
}

/**
 * Starts PgBouncer in transaction mode (auth trust, a free port, ini, log and pid in a fresh
 * temporary directory) in front of `serverUrl`'s host and port. Resolves once it listens.
 */
export async function startPgbouncer(serverUrl: string, options: PoolerOptions = {}): Promise<Pooler> {
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-pgbouncer-'));
  // PgBouncer refuses to run as root: it then runs as nobody, who must write its log and pid.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chmod(dir, 0o777);
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  await writeFile(join(dir, 'users.txt'), `"${user}" ""\n`);
  await writeFile(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'server_reset_query = DISCARD ALL',
      `server_reset_query_always = ${options.resetAlways === false ? 0 : 1}`,
      `default_pool_size = ${options.poolSize ?? 20}`,
      'max_client_conn = 1000',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  const child = spawn(PGBOUNCER_BIN, [...(asRoot ? ['-u', 'nobody'] : []), ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async (): Promise<void> => {
    await ended(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await listening(child, () => output, join(dir, 'pgbouncer.log'));
  } catch (error) {
    await stop();
    throw error;
  }
  const url = new URL(serverUrl);
  url.port = String(port);
  url.hostname = '127.0.0.1';
  url.search = '';
  return { url: url.toString(), pid: child.pid, stop };
}

/** Resolves when PgBouncer logs that it is up; rejects when it exits first or takes 15 s. */
async function listening(child: ChildProcess, output: () => string, log: string): Promise<void> {
  const end = Date.now() + 15_000;
  for (;;) {
    const logged = await readFile(log, 'utf8').catch(() => '');
    if (/process up/.test(logged) || /process up/.test(output())) return;
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`pgbouncer exited: ${output()}${logged}`);
    if (Date.now() > end) throw new Error(`pgbouncer did not start in 15 s: ${output()}${logged}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exit;
}

/**
 * `url` through the pooler: host and port of `pooler.url`, the path and parameters of `url`
 * (its `?schema=`), and `pgbouncer=true`.
 */
export function pooledUrl(pooler: Pooler, url: string): string {
  const pooled = new URL(url);
  const at = new URL(pooler.url);
  pooled.hostname = at.hostname;
  pooled.port = at.port;
  pooled.searchParams.set('pgbouncer', 'true');
  return pooled.toString();
}
