import { parseArgs } from 'node:util';
import { DEFAULT_STORE_URL, describeStoreUrl, openStore } from '../store/open-store.js';
import type { CliIo } from './io.js';

export const MIGRATE_USAGE = `Usage: tasklatch migrate [--store URL]

Creates or upgrades the store's schema (stores also do this on first use).
  --store URL   sqlite:PATH (default ${DEFAULT_STORE_URL}) or postgres://…[?schema=NAME]`;

export async function migrateCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { store: { type: 'string', default: DEFAULT_STORE_URL }, help: { type: 'boolean' } },
  });
  if (values.help === true) {
    io.out(MIGRATE_USAGE);
    return 0;
  }
  const store = await openStore(values.store);
  try {
    const where = describeStoreUrl(values.store);
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
