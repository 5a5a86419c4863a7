import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { dropSchemasLike, serverAnswers, startEmbeddedPostgres } from './embedded-postgres.js';
import { poolerUnavailable, startPgbouncer } from './pgbouncer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL server of this run (no schema): the configured one, or an embedded one. */
    pgUrl: string;
    /** A tag naming this run's schemas, so teardown drops exactly those. */
    pgRun: string;
    /** PgBouncer (transaction mode) in front of `pgUrl`, no parameters; null when there is none (`pgPoolerSkip` says why). */
    pgPoolerUrl: string | null;
    pgPoolerSkip: string;
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
  const reason = await serverAnswers(wanted);
  const server = reason === null ? { url: wanted, stop: async () => undefined } : await startEmbedded(reason);
  project.provide('pgUrl', server.url);
  project.provide('pgRun', run);
  // One pooler for the run, in front of the configured server: the store suite and the CLI
  // tests run through it too (test/support/pgbouncer.ts).
  let skip = poolerUnavailable(reason !== null);
  const pooler =
    skip === null ? await startPgbouncer(server.url).catch((error: unknown) => ((skip = `PgBouncer did not start: ${String(error)}`), null)) : null;
  project.provide('pgPoolerUrl', pooler?.url ?? null);
  project.provide('pgPoolerSkip', skip ?? '');
  return async () => {
    await pooler?.stop();
    if (process.env.TASKLATCH_KEEP_SCHEMAS !== '1') await dropSchemasLike(server.url, `tl_${run}_`);
    await server.stop();
  };
}

async function startEmbedded(reason: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const started = Date.now();
  const server = await startEmbeddedPostgres();
  console.log(`[tasklatch tests] PostgreSQL not reachable (${reason}); embedded server at ${new URL(server.url).port} (${Date.now() - started} ms)`);
  return server;
}
