import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { rpc } from '../support/stateless.js';
import { until } from '../support/until.js';

let dir: string;
let file: string;
let serve: ServeProcess;

/** Replaces the file whole, as an editor or a secret mount does. */
async function writeTokens(tokens: Record<string, { tenant: string; subject: string }> | string): Promise<void> {
  const next = join(dir, 'next.json');
  await writeFile(next, typeof tokens === 'string' ? tokens : JSON.stringify(tokens));
  await rename(next, file);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-reload-'));
  file = join(dir, 'tokens.json');
  await writeTokens({ 'token-alice': { tenant: 'acme', subject: 'alice' } });
  serve = await spawnServe(['--store', 'memory:', '--auth-tokens', file]);
});
afterAll(async () => {
  expect(await serve.stop()).toBe(0);
});

const statusFor = async (token: string) => (await rpc(serve.url, 'tools/list', {}, { token })).status;

describe('tasklatch serve --auth-tokens reloads the file when it changes', () => {
  it('admits a token added to the file and refuses one removed from it', async () => {
    expect([await statusFor('token-alice'), await statusFor('token-bob')]).toEqual([200, 401]);
    await writeTokens({ 'token-bob': { tenant: 'globex', subject: 'bob' } });
    await until(async () => (await statusFor('token-bob')) === 200 || undefined);
    expect(await statusFor('token-alice')).toBe(401);
  });

  it('keeps the last good tokens when the file turns invalid, and says why', async () => {
    await writeTokens('{ not json');
    await until(() => serve.stderr().includes('tokens file unreadable') || undefined);
    expect(await statusFor('token-bob')).toBe(200);
    await writeTokens({ 'token-bob': { tenant: 'a/b', subject: 'bob' } });
    await until(() => serve.stderr().split('tokens file unreadable').length > 2 || undefined);
    expect(await statusFor('token-bob')).toBe(200);
  });
});
