import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isToolsPath, loadToolsModule } from '../../src/cli/tools-module.js';
import { ROOT } from '../support/cli.js';

describe('loadToolsModule', () => {
  const zod = `import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};`;
  const tool = (name: string) => `{ name: '${name}', description: 'd', inputSchema: z.object({}), handler: async () => ({ content: [] }) }`;

  it.each([
    ['a default array', `export default [${tool('a')}, ${tool('b')}];`],
    ['a default function', `export default () => [${tool('a')}, ${tool('b')}];`],
    ['a named async function "tools"', `export const tools = async () => [${tool('a')}, ${tool('b')}];`],
    ['a named array "tools" beside other exports', `export const other = 1;\nexport const tools = [${tool('a')}, ${tool('b')}];`],
  ])('takes %s', async (_label, body) => {
    const file = join(await mkdtemp(join(tmpdir(), 'tasklatch-load-')), 'tools.mjs');
    await writeFile(file, `${zod}\n${body}\n`);
    expect((await loadToolsModule(file)).map((t) => t.name)).toEqual(['a', 'b']);
  });

  it('tells module paths from named sets', () => {
    for (const path of ['./tools.js', 'lib/tools.mjs', '/srv/tools.cjs', 'tools.ts']) expect(isToolsPath(path)).toBe(true);
    for (const set of ['demo', 'conformance', 'nonsense']) expect(isToolsPath(set)).toBe(false);
  });
});
