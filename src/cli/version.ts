import { readFile } from 'node:fs/promises';

/**
 * The version in the package's own package.json, read when asked: `dist/cli/` and `src/cli/`
 * both sit two folders below the package root, in the repository and in an installed package.
 */
export async function packageVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  if (typeof manifest.version !== 'string') throw new Error('package.json has no version');
  return manifest.version;
}
