import { mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createTaskServer, type TaskServer } from '../../src/wire-2025/server.js';
import { createLogger } from '../../src/runtime/log.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { pathSegmentOf } from '../../src/tools/path-segment.js';
import type { Principal } from '../../src/tools/principal.js';
import { rpc, settle } from '../support/stateless.js';

// export_ledger writes under `<exports>/<pathSegmentOf(tenant)>/`: one folder per tenant whatever
// its name, and never outside the exports folder.

const TENANTS = ['..', '.', 'acme:eu', 'acme_eu', 'ACME_EU', `${'t'.repeat(120)}-a`, `${'t'.repeat(120)}-b`, 'u\ud83d\ude00', 'u\ufffd'];

let root: string;
let exportsDir: string;
let server: TaskServer;
let http: RunningHttp;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tasklatch-export-folders-'));
  exportsDir = join(root, 'exports');
  await mkdir(exportsDir);
  const principals = new Map<string, Principal>(TENANTS.map((tenant, i) => [`token-${i}`, { tenant, subject: 'clerk' }]));
  server = createTaskServer({
    store: new MemoryStore(),
    tools: demoTools({ exportsDir }),
    authenticate: ({ authInfo }) => (authInfo?.extra?.principal as Principal | undefined) ?? null,
    logger: createLogger('silent'),
  });
  await server.start();
  http = await startHttpServer({ runtime: server.runtime, taskServer: server, host: '127.0.0.1', port: 0, tokens: principals });
});
afterAll(async () => {
  await http?.close();
  await server?.close();
});

describe('export_ledger folders', () => {
  it('gives each tenant a folder of its own, inside the exports folder, whatever its name', async () => {
    const tasks = await Promise.all(
      TENANTS.map(async (_, i) => {
        const token = `token-${i}`;
        const created = await rpc(http.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 3 } }, { token });
        const taskId = created.result?.taskId as string;
        expect(taskId, JSON.stringify(created)).toEqual(expect.any(String));
        expect((await settle(http.url, taskId, { token })).status).toBe('completed');
        return taskId;
      }),
    );
    // Nothing beside the exports folder; in it, one folder per tenant holding that tenant's export alone.
    expect(await readdir(root)).toEqual(['exports']);
    const folders = await readdir(exportsDir, { withFileTypes: true });
    expect(folders.every((f) => f.isDirectory())).toBe(true);
    expect(folders.map((f) => f.name).sort()).toEqual(TENANTS.map(pathSegmentOf).sort());
    for (const [i, tenant] of TENANTS.entries()) {
      expect(await readdir(join(exportsDir, pathSegmentOf(tenant)))).toEqual([`task_${tasks[i]}.csv`]);
    }
  });
});
