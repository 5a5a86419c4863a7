import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnServe } from '../support/serve-process.js';
import { rpc, settle, WITH_TASKS } from '../support/stateless.js';
import { until } from '../support/until.js';

describe('a 2026-07-28 task across a server crash (SQLite)', () => {
  it('is answered by the next server on the file, waiting for input included, and completes there', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-restart-'));
    const args = ['--store', `sqlite:${join(dir, 'tasks.db')}`, '--exports', join(dir, 'exports'), '--lease-ms', '1000'];
    const first = await spawnServe(args);
    const caps = { capabilities: { ...WITH_TASKS, elicitation: {} } };
    const running = await rpc(first.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 20, delayMs: 6000 } });
    const asking = await rpc(first.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-07', rows: 20, confirm: true } }, caps);
    // Long enough to be still running when the first server dies, however slowly the other task asks.
    const runningId = running.result!.taskId as string;
    const askingId = asking.result!.taskId as string;
    await until(async () => ((await rpc(first.url, 'tasks/get', { taskId: askingId })).result?.status === 'input_required' ? true : undefined));
    expect(await first.stop('SIGKILL')).toBe(null);

    const second = await spawnServe(args);
    try {
      expect((await rpc(second.url, 'tasks/get', { taskId: runningId })).result?.status).toBe('working');
      expect((await rpc(second.url, 'tasks/get', { taskId: askingId })).result).toMatchObject({
        status: 'input_required',
        inputRequests: { 'confirm-export': {} },
      });
      // The lease of the killed worker runs out, another attempt claims the export and finishes it.
      expect(await settle(second.url, runningId, {})).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 20 } } });
      await rpc(second.url, 'tasks/update', { taskId: askingId, inputResponses: { 'confirm-export': { action: 'accept', content: { confirm: true } } } }, caps);
      expect(await settle(second.url, askingId, {})).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 20 } } });
    } finally {
      await second.stop();
    }
  });
});
