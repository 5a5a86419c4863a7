import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { coerceError, TasklatchError } from '../../src/core/errors.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { RUN_EVENTS, RunLogger } from '../../src/worker/run-events.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const AUTH = 'acme/alice';
const runtimes: TaskRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close(50)));
});

/** Throws what its `throw` argument names: a string, a plain object, or an Error. */
const thrower = defineTool({
  name: 'thrower',
  description: 'throws',
  inputSchema: z.object({ throw: z.enum(['string', 'object', 'error']) }),
  execution: { taskSupport: 'required' },
  handler: async (args) => {
    if (args.throw === 'string') throw 'the ledger is locked'; // eslint-disable-line @typescript-eslint/only-throw-error
    if (args.throw === 'object') throw { code: 'E_LEDGER', detail: 'locked' }; // eslint-disable-line @typescript-eslint/only-throw-error
    throw new Error('ledger unreachable');
  },
}) as unknown as TaskTool;

function logged(): { runtime: TaskRuntime; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const runtime = createRuntime({ store: new MemoryStore(), tools: [thrower], logger: pino({ level: 'info' }, sink), sweepIntervalMs: 0 });
  runtimes.push(runtime);
  return { runtime, lines };
}

async function run(runtime: TaskRuntime, what: string): Promise<string> {
  const out = await createTask(runtime.guard, {
    auth: AUTH,
    tool: { name: 'thrower', execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: 'thrower', arguments: { throw: what }, task: {} } },
  });
  return out.record!.taskId;
}

describe("a worker's run events in the runtime's log", () => {
  it('name the event, the worker, the task and the attempt, and carry what the handler threw as an error with its stack', async () => {
    const { runtime, lines } = logged();
    await runtime.start();
    const workerId = runtime.worker!.id;
    expect(lines.find((l) => l.event === 'worker:started')).toMatchObject({
      level: 30,
      workerId,
      app: 'default',
      tools: ['thrower'],
      versions: { thrower: expect.stringMatching(/^[0-9a-f]{16}$/) },
    });

    const ids = { string: await run(runtime, 'string'), object: await run(runtime, 'object'), error: await run(runtime, 'error') };
    const threw = await until(() => {
      const found = lines.filter((l) => l.event === 'run:handlerThrew');
      return found.length === 3 ? found : undefined;
    });
    const byTask = new Map(threw.map((l) => [l.taskId, l]));
    for (const taskId of Object.values(ids)) {
      expect(byTask.get(taskId)).toMatchObject({ level: 40, msg: 'tool handler threw', workerId, taskId, attempt: 1 });
    }
    const err = (taskId: string) => byTask.get(taskId)!.err as { type: string; message: string; stack: string };
    // A thrown string or object becomes an Error saying what was thrown; an Error keeps its own stack.
    expect(err(ids.string)).toMatchObject({ type: 'Error', message: 'non-error thrown: "the ledger is locked"' });
    expect(err(ids.object)).toMatchObject({ type: 'Error', message: 'non-error thrown: {"code":"E_LEDGER","detail":"locked"}' });
    expect(err(ids.error)).toMatchObject({ type: 'Error', message: 'ledger unreachable' });
    expect(err(ids.error).stack).toContain('ledger unreachable\n    at ');
    for (const taskId of Object.values(ids)) expect(err(taskId).stack).toMatch(/^Error: .*\n {4}at /);
    // Every line the worker wrote is an event named in RUN_EVENTS, with the worker's id.
    const events = lines.filter((l) => l.event !== undefined);
    for (const line of events) {
      expect(RUN_EVENTS[line.event as keyof typeof RUN_EVENTS].message, String(line.event)).toBe(line.msg);
      expect(line.workerId).toBe(workerId);
    }
  });
});

describe('coerceError', () => {
  it('returns an Error as it is', () => {
    const error = new TypeError('bad');
    expect(coerceError(error)).toBe(error);
    const cross = Object.assign(Object.create(null) as object, { message: 'from another realm' });
    Object.defineProperty(cross, Symbol.toStringTag, { value: 'Error' });
    expect(coerceError(cross)).toBe(cross);
  });

  it('makes anything else an Error whose message says what was thrown, with the value as its cause', () => {
    const cases: Array<[unknown, string]> = [
      ['text', 'non-error thrown: "text"'],
      [42, 'non-error thrown: 42'],
      [undefined, 'non-error thrown: undefined'],
      [null, 'non-error thrown: null'],
      [{ message: 'like an error' }, 'non-error thrown: like an error'],
      [{ a: 1 }, 'non-error thrown: {"a":1}'],
      ['x'.repeat(400), `non-error thrown: "${'x'.repeat(299)}…`],
    ];
    for (const [thrown, message] of cases) {
      const error = coerceError(thrown);
      expect(error).toBeInstanceOf(Error);
      expect(error.message).toBe(message);
      expect(error.cause).toBe(thrown);
      expect(error.stack).toContain('at ');
    }
  });

  it('never throws, whatever the value does when it is read', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const hostile = {
      get message(): string {
        throw new Error('no');
      },
    };
    expect(coerceError(circular).message).toBe('non-error thrown: a value of type object that cannot be read');
    expect(coerceError(hostile).message).toBe('non-error thrown: a value of type object that cannot be read');
    expect(coerceError(Symbol('s')).message).toBe('non-error thrown: Symbol(s)');
  });
});

describe('RunLogger', () => {
  it('binds its scope to every line; a store outage is one line without a stack', () => {
    const lines: Array<Record<string, unknown>> = [];
    const root = RunLogger.to((level, message, fields) => void lines.push(Object.assign({ level, message }, fields)));
    const worker = root.scope({ workerId: 'w1' });
    const run = worker.scope({ taskId: 't1', attempt: 2 });
    worker.emit('worker:claimFailed', { err: new Error('boom'), failures: 1 });
    run.emit('run:heartbeatFailed', { err: new TasklatchError('STORE_UNAVAILABLE', 'cannot connect') });
    run.emit('run:heartbeatFailed', { err: new Error('wrapped', { cause: new TasklatchError('STORE_UNAVAILABLE', 'cannot connect') }) });
    expect(lines[0]).toMatchObject({ level: 'warn', message: 'claim failed; retrying', event: 'worker:claimFailed', workerId: 'w1', failures: 1 });
    expect(lines[0]).not.toHaveProperty('taskId');
    expect((lines[0]!.err as Error).stack).toContain('boom');
    expect(lines[1]).toMatchObject({ event: 'run:heartbeatFailed', workerId: 'w1', taskId: 't1', attempt: 2 });
    expect(lines[1]!.err).toEqual({ type: 'TasklatchError', code: 'STORE_UNAVAILABLE', message: 'cannot connect' });
    expect(lines[2]!.err).toEqual({ type: 'Error', code: 'STORE_UNAVAILABLE', message: 'wrapped' });
    // No sink: nothing to do.
    expect(() => RunLogger.to().scope({ workerId: 'w2' }).emit('run:waitsForInput', {})).not.toThrow();
  });
});
