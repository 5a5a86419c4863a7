import { parseArgs } from 'node:util';
import { describeStoreUrl, openStore } from '../store/open-store.js';
import { STORE_USAGE_LINE, storeUrlFrom } from './store-url.js';
import type { CliIo } from './io.js';

export const MIGRATE_USAGE = `Usage: tasklatch migrate [--store URL]

Creates or upgrades the store's schema (stores also do this on first use).
${STORE_USAGE_LINE}`;

export async function migrateCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { store: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help === true) {
    io.out(MIGRATE_USAGE);
    return 0;
  }
  const storeUrl = storeUrlFrom(values.store);
  const store = await openStore(storeUrl);
  try {
    const where = describeStoreUrl(storeUrl);
    if (store.migrationsApplied === undefined) {
      io.out(`${where}: the ${store.kind} store keeps no schema`);
    } else if (store.migrationsApplied.length === 0) {
      io.out(`${where}: schema is up to date`);
    } else {
      for (const name of store.migrationsApplied) io.out(`applied ${name}`);
      io.out(`${where}: ${store.migrationsApplied.length} migration(s) applied`);
    }
  } finally {
    await store.close();
  }
  return 0;
}
