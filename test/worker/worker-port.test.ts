import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { StoredInput } from '../../src/core/input-rules.js';
import type { StepRecord } from '../../src/core/step-rules.js';
import type { TaskRecord } from '../../src/core/types.js';
import { AdmissionClaimers } from '../../src/service/admission-claims.js';
import { ChangeFeed } from '../../src/service/change-feed.js';
import { TaskEvents } from '../../src/service/task-events.js';
import type { AskRequest, ClaimRequest, RecordStepRequest, WorkerPort } from '../../src/service/worker-port.js';
import type { AskOutcome, Fence, LookupOutcome, ParkOutcome, RecordStepOutcome, TransitionOutcome } from '../../src/store/types.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { TaskExecutor } from '../../src/worker/task-executor.js';
import { Worker } from '../../src/worker/worker.js';
import { record } from '../support/records.js';
import { until } from '../support/until.js';

/** One write the worker made through its port. */
interface PortWrite {
  op: 'complete' | 'fail' | 'setStatus' | 'release';
  fence: Fence;
  result?: unknown;
}

/**
 * The worker's port over a map of records, with no store behind it: a claim leases what is due,
 * a write under a fence applies only at the record's version, and the heartbeat answers what the
 * test says. Every write is kept for the test to read.
 */
class FakePort implements WorkerPort {
  readonly app = 'default';
  readonly limits = { pollInterval: 100, maxResultBytes: 2_000, maxStepBytes: 1_000, maxJournalSteps: null, maxJournalBytes: null };
  readonly supports = { shared: false, listenNotify: false };
  readonly changes = new ChangeFeed();
  readonly events = new TaskEvents();
  readonly admissionClaims = new AdmissionClaimers();
  readonly records = new Map<string, TaskRecord>();
  readonly writes: PortWrite[] = [];
  readonly heartbeats: Fence[] = [];
  /** What the next heartbeat answers: false is a fence that no longer holds. */
  holds = true;
  private readonly due: string[] = [];

  add(task: TaskRecord): void {
    this.records.set(task.taskId, task);
    this.due.push(task.taskId);
  }

  now(): number {
    return Date.now();
  }

  async claim(input: ClaimRequest): Promise<TaskRecord[]> {
    return this.due.splice(0, input.limit).map((taskId) => {
      const before = this.records.get(taskId)!;
      const now = this.now();
      const claimed = { ...before, version: before.version + 1, attempt: before.attempt + 1, leaseOwner: input.owner, leaseExpiresAt: now + input.leaseMs };
      this.records.set(taskId, claimed);
      return claimed;
    });
  }

  /** No other worker: every announcement is the only live one. */
  async announceVersions(): Promise<void> {}

  async withdrawVersions(): Promise<void> {}

  async liveVersions(): Promise<{ now: number; announcements: [] }> {
    return { now: this.now(), announcements: [] };
  }

  async heartbeat(input: { fence: Fence; leaseMs: number }): Promise<boolean> {
    this.heartbeats.push(input.fence);
    return this.holds;
  }

  async release(input: { fence: Fence }): Promise<boolean> {
    this.writes.push({ op: 'release', fence: input.fence });
    return true;
  }

  setStatus(input: { fence: Fence; message: string }): Promise<TransitionOutcome> {
    return this.write('setStatus', input.fence, (r) => ({ ...r, statusMessage: input.message }));
  }

  complete(input: { fence: Fence; result: unknown }): Promise<TransitionOutcome> {
    return this.write('complete', input.fence, (r) => ({ ...r, status: 'completed', result: input.result }), input.result);
  }

  fail(input: { fence: Fence; result: unknown }): Promise<TransitionOutcome> {
    return this.write('fail', input.fence, (r) => ({ ...r, status: 'failed', result: input.result }), input.result);
  }

  async ask(input: AskRequest): Promise<AskOutcome> {
    throw new Error(`no tool of these tests asks (task ${input.fence.taskId})`);
  }

  async lookup(input: { auth: string; taskId: string }): Promise<LookupOutcome> {
    const found = this.records.get(input.taskId);
    return found === undefined || found.authKey !== input.auth ? { decision: 'NOT_FOUND', record: null } : { decision: 'FOUND', record: found };
  }

  async lookupInputs(): Promise<StoredInput[]> {
    return [];
  }

  async recordStep(input: RecordStepRequest): Promise<RecordStepOutcome> {
    throw new Error(`no tool of these tests takes a step (task ${input.fence.taskId})`);
  }

  async lookupSteps(): Promise<StepRecord[]> {
    return [];
  }

  async takeEvent(input: { fence: { taskId: string } }): Promise<never> {
    throw new Error(`no tool of these tests waits for an event (task ${input.fence.taskId})`);
  }

  async park(input: { fence: Fence }): Promise<ParkOutcome> {
    throw new Error(`no tool of these tests parks (task ${input.fence.taskId})`);
  }

  private async write(op: PortWrite['op'], fence: Fence, change: (r: TaskRecord) => TaskRecord, result?: unknown): Promise<TransitionOutcome> {
    this.writes.push({ op, fence, ...(result === undefined ? {} : { result }) });
    const stored = this.records.get(fence.taskId);
    if (stored === undefined) return { decision: 'NOT_FOUND', record: null };
    if (stored.status !== 'working') return { decision: 'BLOCK_TERMINAL_REWRITE', record: stored };
    if (stored.version !== fence.version) return { decision: 'BLOCK_STALE_VERSION', record: stored };
    const next = { ...change(stored), version: stored.version + 1 };
    this.records.set(fence.taskId, next);
    return { decision: 'APPLY_TRANSITION', record: next };
  }
}

/** A tool that returns what it was asked to, or waits for its abort signal (`hold: true`). */
function echoTool(): { tool: TaskTool; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const tool = defineTool({
    name: 'echo',
    description: 'answers with its text, or holds until stopped',
    inputSchema: z.object({ text: z.string(), hold: z.boolean().default(false), fail: z.boolean().default(false) }),
    execution: { taskSupport: 'required' },
    handler: async (args, ctx) => {
      signals.push(ctx.signal);
      if (args.hold) {
        await new Promise<void>((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
      }
      return { content: [{ type: 'text', text: args.text }], ...(args.fail ? { isError: true } : {}) };
    },
  }) as unknown as TaskTool;
  return { tool, signals };
}

function task(taskId: string, args: Record<string, unknown>): TaskRecord {
  const request = { method: 'tools/call', params: { name: 'echo', arguments: args, task: {} } };
  return record({ taskId, toolName: 'echo', request, expiresAt: Date.now() + 60_000 });
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe('Worker over a fake WorkerPort (no store)', () => {
  it('claims a due task, runs its handler and ends it with one terminal write at the fence the claim gave', async () => {
    const port = new FakePort();
    port.add(task('t-ok', { text: 'hello' }));
    port.add(task('t-err', { text: 'no', fail: true }));
    port.add(task('t-big', { text: 'x'.repeat(5_000) }));
    const { tool } = echoTool();
    const worker = new Worker(port, new ToolRegistry([tool]), { id: 'w-1', pollMs: 50, heartbeatMs: 1_000 });
    worker.start();
    stops.push(() => worker.stop(100));
    await until(() => (port.writes.filter((w) => w.op === 'complete' || w.op === 'fail').length === 3 ? true : undefined));
    const terminal = new Map(port.writes.map((w) => [w.fence.taskId, w]));
    // The claim moved each task from version 1 to 2; the run writes at 2, as lease owner w-1.
    expect(terminal.get('t-ok')).toEqual({
      op: 'complete',
      fence: { taskId: 't-ok', authKey: 'tenant-a/alice', owner: 'w-1', version: 2 },
      result: { content: [{ type: 'text', text: 'hello' }] },
    });
    // An isError result ends the task failed and keeps the result as the handler returned it.
    expect(terminal.get('t-err')).toMatchObject({ op: 'fail', result: { isError: true, content: [{ type: 'text', text: 'no' }] } });
    // A result over maxResultBytes is never written: the task fails with an error naming both sizes.
    const big = terminal.get('t-big')!;
    expect(big.op).toBe('fail');
    expect((big.result as { error: { code: number; message: string } }).error.message).toMatch(/bytes; at most 2000 bytes are stored/);
    expect([...port.records.values()].map((r) => [r.taskId, r.status, r.version])).toEqual([
      ['t-ok', 'completed', 3],
      ['t-err', 'failed', 3],
      ['t-big', 'failed', 3],
    ]);
    // Exactly one terminal write per task.
    expect(port.writes.filter((w) => w.op !== 'release')).toHaveLength(3);
  });

  it('stops a run whose heartbeat is refused: the handler is aborted and nothing is written', async () => {
    const port = new FakePort();
    const lost: string[] = [];
    port.events.add({ heartbeatFailed: (event) => (event.lost ? lost.push(event.taskId) : undefined) });
    port.add(task('t-held', { text: 'never', hold: true }));
    const [claimed] = await port.claim({ owner: 'w-2', leaseMs: 30_000, limit: 1, maxAttempts: 5, abandonedResult: null });
    const { tool, signals } = echoTool();
    const executor = new TaskExecutor(port, new ToolRegistry([tool]));
    const done = executor.execute(claimed!, { owner: 'w-2', leaseMs: 30_000, heartbeatMs: 20 });
    await until(() => (signals.length === 1 ? true : undefined));
    // The first beats hold; then another holder's claim moves the fence and the store says no.
    await until(() => (port.heartbeats.length >= 2 ? true : undefined));
    port.holds = false;
    expect(await done).toBe('lease lost');
    expect(signals[0]!.aborted).toBe(true);
    expect(lost).toEqual(['t-held']);
    expect(port.heartbeats.every((f) => f.owner === 'w-2' && f.version === 2)).toBe(true);
    // No terminal write, no status write, no release: the task is whoever holds the lease now.
    expect(port.writes).toEqual([]);
    expect(port.records.get('t-held')!.status).toBe('working');
    expect(executor.active).toBe(0);
  });
});
