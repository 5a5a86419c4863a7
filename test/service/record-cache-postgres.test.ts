import { afterEach, describe, expect, it } from 'vitest';
import { TaskService } from '../../src/service/task-service.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { ALL_CAPS } from '../support/records.js';
import { until } from '../support/until.js';

const AUTH = 'acme/alice';
const TOOL = { name: 't', execution: { taskSupport: 'required' as const } };

const open: Array<{ service: TaskService; store: PostgresStore }> = [];
afterEach(async () => {
  for (const { service, store } of open.splice(0)) {
    await service.stop();
    await store.close();
  }
});

/** One "process": its own store (pool and listener) and service on the shared schema. */
async function processOn(url: string, start = true): Promise<TaskService> {
  const store = await PostgresStore.open(url, { poolSize: 2 });
  const service = new TaskService({ store, capabilities: ALL_CAPS });
  open.push({ service, store });
  if (start) await service.start();
  return service;
}

async function admitted(service: TaskService): Promise<{ taskId: string; version: number }> {
  const out = await service.create({ auth: AUTH, tool: TOOL, request: { method: 'tools/call', params: { name: 't', arguments: {}, task: { ttl: 60_000 } } } });
  return out.record!;
}

describe('the tasks/get record cache on one PostgreSQL schema shared by two processes', () => {
  it('answers a read in one process with the other’s write once its notification arrived', async () => {
    const url = await freshPostgresUrl('record_cache');
    const a = await processOn(url);
    const b = await processOn(url);
    const task = await admitted(a);
    // Kept once a read ran with no notification of the task arriving meanwhile (the admission's may).
    await until(async () => {
      expect((await b.read({ auth: AUTH, method: 'tasks/get', taskId: task.taskId })).record?.status).toBe('working');
      return b.cache?.size === 1 ? true : undefined;
    });
    await a.transition({ auth: AUTH, taskId: task.taskId, write: { status: 'completed', expectedVersion: task.version, result: { content: [] } } });
    const seen = await until(async () => {
      const out = await b.read({ auth: AUTH, method: 'tasks/get', taskId: task.taskId });
      return out.record?.status === 'completed' ? out.record : undefined;
    });
    expect(seen.version).toBe(task.version + 1);
    // The writer's own read is at once, from the record its write returned.
    expect((await a.read({ auth: AUTH, method: 'tasks/get', taskId: task.taskId })).record?.status).toBe('completed');
  });

  it('is not used before start(): a read sees the other process’s commit at once', async () => {
    const url = await freshPostgresUrl('record_cache_off');
    const a = await processOn(url);
    const b = await processOn(url, false);
    expect(b.notifications).toBe('off');
    const task = await admitted(a);
    await b.read({ auth: AUTH, method: 'tasks/get', taskId: task.taskId });
    await a.transition({ auth: AUTH, taskId: task.taskId, write: { status: 'completed', expectedVersion: task.version, result: { content: [] } } });
    expect((await b.read({ auth: AUTH, method: 'tasks/get', taskId: task.taskId })).record?.status).toBe('completed');
    expect(b.cache?.size).toBe(0);
  });
});
