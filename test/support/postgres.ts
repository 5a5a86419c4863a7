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
