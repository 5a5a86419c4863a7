import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/**
 * A `postgres://…?schema=NAME` URL with a schema no other test uses, on the server the global
 * setup chose for this run. The store creates the schema when it opens; teardown drops it
 * (unless `TASKLATCH_KEEP_SCHEMAS=1`, to look at it after a failure).
 */
export async function freshPostgresUrl(label: string): Promise<string> {
  const url = new URL(testServerUrl());
  url.searchParams.set('schema', schemaFor(label));
  return url.toString();
}

/** The schema a store URL names (`?schema=`), or '' when it names none. */
export function schemaOf(url: string): string {
  return new URL(url).searchParams.get('schema') ?? '';
}

/** The server URL without a schema. */
export function testServerUrl(): string {
  return inject('pgUrl') ?? process.env.TASKLATCH_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
}

/** `tl_<run>_<label>_<random>`: lowercase, at most 63 bytes, the prefix teardown looks for. */
function schemaFor(label: string): string {
  const run = inject('pgRun') ?? 'norun0';
  const clean = label
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .slice(0, 32);
  return `tl_${run}_${clean}_${randomBytes(4).toString('hex')}`;
}

/**
 * A fresh `freshPostgresUrl` through the run's PgBouncer (transaction mode) with `pgbouncer=true`,
 * and the direct URL of the same schema (for LISTEN); null when the run has no pooler
 * (`poolerSkipReason` says why).
 */
export async function freshPooledUrl(label: string): Promise<{ pooled: string; direct: string } | null> {
  const pooler = inject('pgPoolerUrl');
  if (pooler === null || pooler === undefined) return null;
  const direct = await freshPostgresUrl(label);
  const pooled = new URL(direct);
  const at = new URL(pooler);
  pooled.hostname = at.hostname;
  pooled.port = at.port;
  pooled.searchParams.set('pgbouncer', 'true');
  return { pooled: pooled.toString(), direct };
}

/** Why this run has no PgBouncer, or null when it has one. */
export function poolerSkipReason(): string | null {
  const pooler = inject('pgPoolerUrl');
  return pooler === null || pooler === undefined ? `no PgBouncer: ${inject('pgPoolerSkip') || 'not started'}` : null;
}
