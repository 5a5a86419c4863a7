import { afterEach, describe, expect, it } from 'vitest';
import { TasklatchError } from '../../src/core/errors.js';
import { isTerminal } from '../../src/core/types.js';
import { openGuard } from '../../src/service/guard.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TransitionInput, TransitionOutcome } from '../../src/store/types.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { RunLogger } from '../../src/worker/run-events.js';
import { RUN_RETRY, retryPause, writeOfUnknownFate, type UnknownWrite } from '../../src/worker/unknown-write.js';
import { Worker } from '../../src/worker/worker.js';
import { ALL_CAPS } from '../support/records.js';
import { AUTH, stepTool, text } from '../support/steps.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

/** The lines a logger wrote. */
function recorder(): { logger: RunLogger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { logger: RunLogger.to((level, msg, fields) => void lines.push(Object.assign({ level, msg }, fields))), lines };
}

/** A write against a fact held here: `lands` says whether each attempt lands before it fails or answers. */
function storedFact(plan: { answers: boolean[]; lands: boolean[]; readFails?: number }) {
  const calls = { attempts: 0, reads: 0, written: 0 };
  let readFails = plan.readFails ?? 0;
  const write = (leaseUntil: number, logger: RunLogger, signal?: AbortSignal): UnknownWrite<string> => ({
    what: 'step',
    step: 'charge',
    attempt: async () => {
      const i = calls.attempts++;
      if (plan.lands[i] ?? true) calls.written++;
      if (!(plan.answers[i] ?? true)) throw new TasklatchError('STORE_UNAVAILABLE', 'connection lost mid-write');
      return `written by attempt ${i + 1}`;
    },
    stored: async () => {
      calls.reads++;
      if (readFails-- > 0) throw new Error('read failed too');
      return calls.written > 0 ? 'found stored' : null;
    },
    now: () => Date.now(),
    leaseUntil: () => leaseUntil,
    logger,
    ...(signal === undefined ? {} : { signal }),
  });
  return { calls, write };
}

describe('the retry policy of a run', () => {
  it('pauses from 100 ms, doubling, at most 2 s, and only while the lease outlasts the pause', () => {
    expect(RUN_RETRY).toEqual({ firstPauseMs: 100, maxPauseMs: 2000 });
    const pauses = [0, 1, 2, 3, 4, 5, 9].map((retry) => retryPause(retry, 0, 60_000));
    expect(pauses).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
    expect(retryPause(0, 1000, 1100)).toBeNull();
    expect(retryPause(0, 1000, 1101)).toBe(100);
    expect(retryPause(3, 1000, 1500)).toBeNull();
  });
});

describe('a write of unknown fate', () => {
  it('that landed is not written twice: the stored fact is the outcome', async () => {
    const { logger, lines } = recorder();
    const { calls, write } = storedFact({ answers: [false], lands: [true] });
    expect(await writeOfUnknownFate(write(Date.now() + 10_000, logger))).toEqual({ outcome: 'found stored' });
    expect(calls).toEqual({ attempts: 1, reads: 1, written: 1 });
    expect(lines).toMatchObject([{ level: 'warn', event: 'run:writeUnknown', write: 'step', step: 'charge', retry: 0 }]);
    // A store outage is said in one line, without a stack.
    expect(lines[0]!.err).toEqual({ type: 'TasklatchError', code: 'STORE_UNAVAILABLE', message: 'connection lost mid-write' });
  });

  it('that did not land is written again, after the stored fact is read', async () => {
    const { logger, lines } = recorder();
    const { calls, write } = storedFact({ answers: [false, true], lands: [false, true] });
    expect(await writeOfUnknownFate(write(Date.now() + 10_000, logger))).toEqual({ outcome: 'written by attempt 2' });
    expect(calls).toEqual({ attempts: 2, reads: 1, written: 1 });
    expect(lines.map((l) => l.event)).toEqual(['run:writeUnknown']);
  });

  it('reads again when the read fails too, and writes nothing meanwhile', async () => {
    const { logger } = recorder();
    const { calls, write } = storedFact({ answers: [false], lands: [true], readFails: 2 });
    const began = Date.now();
    expect(await writeOfUnknownFate(write(Date.now() + 10_000, logger))).toEqual({ outcome: 'found stored' });
    expect(calls).toEqual({ attempts: 1, reads: 3, written: 1 });
    // Three pauses of the policy: 100 + 200 + 400 ms.
    expect(Date.now() - began).toBeGreaterThanOrEqual(690);
  });

  it('stops when the lease runs out before the next pause ends: no read, no second write', async () => {
    const { logger } = recorder();
    const { calls, write } = storedFact({ answers: [false, true], lands: [false, true] });
    expect(await writeOfUnknownFate(write(Date.now() + 50, logger))).toBe('lease out');
    expect(calls).toEqual({ attempts: 1, reads: 0, written: 0 });
  });

  it('stops when the lease runs out while it keeps failing to read', async () => {
    const { logger } = recorder();
    const { calls, write } = storedFact({ answers: [false], lands: [false], readFails: Infinity });
    expect(await writeOfUnknownFate(write(Date.now() + 400, logger))).toBe('lease out');
    // 100 and 200 ms fit in the lease; 400 does not.
    expect(calls).toEqual({ attempts: 1, reads: 2, written: 0 });
  });

  it("stops with its run: the run's stop reason is thrown, nothing is written again", async () => {
    const { logger } = recorder();
    const stop = new AbortController();
    stop.abort(new Error('task cancelled'));
    const { calls, write } = storedFact({ answers: [false, true], lands: [false, true] });
    await expect(writeOfUnknownFate(write(Date.now() + 10_000, logger, stop.signal))).rejects.toThrow('task cancelled');
    expect(calls).toEqual({ attempts: 1, reads: 0, written: 0 });
  });
});

const ENDS = new Set<string>(['completed', 'failed', 'cancelled']);

/** A memory store whose first terminal write fails: after it is applied (`landed`) or before. */
class LostTerminal extends MemoryStore {
  failed = 0;
  constructor(private readonly landed: boolean) {
    super();
  }

  override async transition(input: TransitionInput): Promise<TransitionOutcome> {
    if (this.failed > 0 || !ENDS.has(input.write.status)) return super.transition(input);
    this.failed++;
    if (this.landed) await super.transition(input);
    throw new TasklatchError('STORE_UNAVAILABLE', 'connection terminated after the write was sent');
  }
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe.each([
  { landed: true, applied: ['APPLY_TRANSITION'] },
  { landed: false, applied: ['APPLY_TRANSITION'] },
])('a terminal write of unknown fate (landed: $landed)', ({ landed, applied }) => {
  it('ends the task completed with one applied terminal write', async () => {
    const store = new LostTerminal(landed);
    const guard = openGuard({ store, capabilities: ALL_CAPS, limits: { pollInterval: 100 } });
    const { lines } = recorder();
    let runs = 0;
    const tool = stepTool('once', async () => text(`run ${++runs}`));
    const worker = new Worker(guard.worker, new ToolRegistry([tool]), {
      pollMs: 50,
      leaseMs: 5000,
      hooks: { log: (level, msg, fields) => void lines.push(Object.assign({ level, msg }, fields)) },
    });
    worker.start();
    stops.push(() => worker.stop(100));
    const out = await createTask(guard, {
      auth: AUTH,
      tool: { name: 'once', execution: { taskSupport: 'required' } },
      request: { method: 'tools/call', params: { name: 'once', arguments: {}, task: {} } },
    });
    const taskId = out.record!.taskId;
    const done = await until(async () => {
      const record = (await store.get({ authKey: AUTH, taskId, now: Date.now() })).record;
      return record !== null && isTerminal(record.status) ? record : undefined;
    });
    await until(() => (worker.executor.active === 0 ? true : undefined));
    expect(done.status).toBe('completed');
    expect(runs).toBe(1);
    expect(store.failed).toBe(1);
    const terminal = (await store.auditTrail({ taskId })).filter((e) => e.surface === 'transition' && ENDS.has(e.status ?? ''));
    expect(terminal.map((e) => e.decision)).toEqual(applied);
    const unknown = lines.filter((l) => l.event === 'run:writeUnknown');
    expect(unknown).toMatchObject([{ level: 'warn', write: 'terminal', workerId: worker.id, taskId, attempt: 1 }]);
  });
});
