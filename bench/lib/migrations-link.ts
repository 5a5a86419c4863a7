import { existsSync, symlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The bench is compiled with src/ into dist/bench/src, where the stores look for their
 * migrations three levels up: dist/bench/migrations. A link to the package's migrations/ lets
 * them find it; every entry point of the bench that opens a store makes it first.
 */
export function linkMigrations(): void {
  // Compiled to dist/bench/bench/lib/: dist/bench/ is two levels up.
  const link = new URL('../../migrations', import.meta.url);
  if (!existsSync(link)) symlinkSync('../../migrations', fileURLToPath(link), 'dir');
}
