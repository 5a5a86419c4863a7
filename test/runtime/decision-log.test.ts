import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
});

const echo = defineTool({
  name: 'echo',
  description: 'returns what it got',
  inputSchema: z.object({ secret: z.string() }),
  execution: { taskSupport: 'optional' },
  handler: async ({ secret }) => ({ content: [{ type: 'text', text: secret }] }),
}) as unknown as TaskTool;

function logged(level: string): { runtime: TaskRuntime; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const runtime = createRuntime({ store: new MemoryStore(), tools: [echo], logger: pino({ level }, sink), sweepIntervalMs: 0 });
  runtimes.push(runtime);
  return { runtime, lines };
}

const SECRET = 'hunter2-do-not-log';

async function work(runtime: TaskRuntime): Promise<string> {
  await runtime.start();
  const out = await createTask(runtime.guard, {
    auth: 'acme/alice',
    tool: { name: 'echo', execution: { taskSupport: 'optional' } },
    request: { method: 'tools/call', params: { name: 'echo', arguments: { secret: SECRET }, task: {} } },
    correlationId: 'corr-create',
  });
  const taskId = out.record!.taskId;
  await until(async () => ((await runtime.guard.worker.lookup({ auth: 'acme/alice', taskId })).record?.status === 'completed' ? true : undefined));
  await runtime.guard.requestor.read({ auth: 'beta/bob', method: 'tasks/result', taskId, correlationId: 'corr-foreign' });
  return taskId;
}

describe('decision logs', () => {
  it('logs every decision at debug, refusals at info, one line per task end; never the arguments or the result', async () => {
    const { runtime, lines } = logged('debug');
    const taskId = await work(runtime);
    await until(() => (lines.some((l) => l.msg === 'refused') ? true : undefined));
    const decided = lines.filter((l) => l.msg === 'decided');
    expect(decided.find((l) => l.decision === 'ACCEPT_TASK')).toMatchObject({
      level: 20,
      taskId,
      authKey: 'acme/alice',
      correlationId: 'corr-create',
      tool: 'echo',
    });
    expect(decided.filter((l) => l.decision === 'APPLY_TRANSITION' && l.taskId === taskId)).toHaveLength(2);
    expect(lines.filter((l) => l.msg === 'refused')).toEqual([
      expect.objectContaining({ level: 30, decision: 'BLOCK_AUTH', taskId, authKey: 'beta/bob', correlationId: 'corr-foreign', surface: 'read' }),
    ]);
    const ends = lines.filter((l) => l.msg === 'task ended');
    expect(ends).toEqual([expect.objectContaining({ level: 30, taskId, authKey: 'acme/alice', tool: 'echo', status: 'completed', attempts: 1 })]);
    expect(typeof ends[0]?.durationMs).toBe('number');
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('at info keeps the refusals and task ends and drops the accepted decisions', async () => {
    const { runtime, lines } = logged('info');
    await work(runtime);
    await until(() => (lines.some((l) => l.msg === 'refused') ? true : undefined));
    expect(lines.filter((l) => l.msg === 'decided')).toEqual([]);
    expect(lines.filter((l) => l.msg === 'task ended')).toHaveLength(1);
  });
});
