import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dropSchemasLike, serverAnswers, startEmbeddedPostgres } from '../../test/support/embedded-postgres.js';

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
 * The same server for run `trial` of a repeated scenario: its schemas get a suffix of their own
 * (`_t<trial>`), so a run never meets what an earlier run of the scenario stored. Run 0 keeps the
 * plain names.
 */
export function forTrial(pg: BenchPostgres, trial: number): BenchPostgres {
  if (trial === 0) return pg;
  const named = (name: string) => `${name}_t${trial}`;
  return { ...pg, schemaName: (name) => pg.schemaName(named(name)), schemaUrl: (name) => pg.schemaUrl(named(name)) };
}

/**
 * The configured server when it answers within 2 s, else the local default, else a throwaway
 * embedded-postgres server in a temporary directory (as the test suite does), so the bench needs
 * no database set up.
 */
export async function openBenchPostgres(): Promise<BenchPostgres> {
  const configured = process.env.TASKLATCH_BENCH_PG_URL;
  const wanted = configured ?? DEFAULT_BENCH_PG_URL;
  const reason = await serverAnswers(wanted);
  const server =
    reason === null
      ? { url: wanted, origin: configured === undefined ? 'local default' : 'TASKLATCH_BENCH_PG_URL', stop: async () => undefined }
      : await startEmbedded(reason);
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
      if (process.env.TASKLATCH_KEEP_SCHEMAS !== '1') await dropSchemasLike(server.url, `tlbench_${run}_`);
      await server.stop();
    },
  };
}

async function startEmbedded(reason: string): Promise<{ url: string; origin: string; stop: () => Promise<void> }> {
  const server = await startEmbeddedPostgres({ database: 'bench' });
  console.log(`PostgreSQL not reachable (${reason}); embedded server on port ${new URL(server.url).port}`);
  return { url: server.url, origin: 'embedded-postgres', stop: () => server.stop() };
}

/** A pool whose connections resolve names in `schema` (as the store's own pool does). */
export function schemaPool(url: string, schema: string, max: number, settings: readonly string[] = []): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, options: [`-c search_path=${schema}`, ...settings.map((s) => `-c ${s}`)].join(' ') });
  pool.on('error', () => undefined);
  return pool;
}

/**
 * A `schemaPool` for bulk loads (`pgLoad`), whose connections fire no triggers: the load writes
 * what the store's triggers would (the callers' row counts) itself, from the rows it inserted. The
 * insert trigger would first copy each chunk's 100,000 rows into a transition table, to disk.
 */
export function loaderPool(url: string, schema: string, max: number): pg.Pool {
  return schemaPool(url, schema, max, ['session_replication_role=replica']);
}
