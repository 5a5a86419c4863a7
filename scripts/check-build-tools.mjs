// Runs before `npm pack` / `npm publish` build dist/: without the dev dependencies (a fresh clone
// before `npm install`) tsc is missing, and npm would print a shell error several lines deep.
import { createRequire } from 'node:module';

try {
  createRequire(import.meta.url).resolve('typescript/package.json');
} catch {
  console.error('tasklatch: packing builds dist/ with TypeScript, which is not installed here: run `npm install` (or `npm ci`) first');
  process.exit(1);
}
