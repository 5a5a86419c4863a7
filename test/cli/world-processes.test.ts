import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';
import { rpc } from '../support/stateless.js';
import { until } from '../support/until.js';

// Events, child tasks and concurrency keys across processes on one PostgreSQL: one `serve
// --no-workers` admits, two `worker` processes run, and one of them is SIGKILLed while parents
// wait on their children and tasks wait for events. Every side effect is appended to one log
// (appends of one line are atomic) with the pid of the process that ran it, so the test counts
// what ran, where, and in which order, without reading a clock.

const APP = 'world-demo';

const MODULE = `
import { appendFileSync } from 'node:fs';
import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};

const log = (line) => appendFileSync(process.env.WORLD_LOG, JSON.stringify(line) + '\\n');
const held = new Set();

export default [
  {
    name: 'square',
    description: 'n squared, once per child task',
    inputSchema: z.object({ n: z.number().int() }),
    execution: { taskSupport: 'optional' },
    async handler({ n }, ctx) {
      const n2 = await ctx.step.do('square', () => {
        log({ kind: 'square', taskId: ctx.taskId, n, pid: process.pid });
        return n * n;
      });
      return { content: [{ type: 'text', text: String(n2) }], structuredContent: { n2 } };
    },
  },
  {
    name: 'fan_out',
    description: 'the sum of five children',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    async handler(_args, ctx) {
      const results = await Promise.all([1, 2, 3, 4, 5].map((n) => ctx.step.runTool('child-' + n, 'square', { n })));
      const sum = results.reduce((total, r) => total + r.structuredContent.n2, 0);
      return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
    },
  },
  {
    name: 'wait_paid',
    description: 'waits for a payment event',
    inputSchema: z.object({ timeoutMs: z.number().int() }),
    execution: { taskSupport: 'required' },
    async handler({ timeoutMs }, ctx) {
      const paid = await ctx.step.waitForEvent('paid', { type: 'payment.succeeded', timeoutMs });
      return { content: [{ type: 'text', text: 'done' }], structuredContent: { paid } };
    },
  },
  {
    name: 'limited',
    description: 'at most two at once per customer',
    inputSchema: z.object({ customer: z.string(), i: z.number().int() }),
    execution: { taskSupport: 'required' },
    concurrency: { limit: 2, key: (args) => args.customer },
    async handler({ customer, i }, ctx) {
      log({ kind: 'start', customer, i, taskId: ctx.taskId });
      // Long enough for the others to try to start beside it.
      await new Promise((resolve) => setTimeout(resolve, 150));
      log({ kind: 'end', customer, i, taskId: ctx.taskId });
      return { content: [{ type: 'text', text: 'ok' }] };
    },
  },
];
`;

let dir: string;
let url: string;
let serve: ServeProcess;
const workers: WorkerProcess[] = [];

function startWorker(): WorkerProcess {
  const worker = spawnWorker(['--store', url, '--tools', join(dir, 'tools.mjs'), '--app', APP, '--lease-ms', '1000'], {
    env: { WORLD_LOG: join(dir, 'world.log') },
  });
  workers.push(worker);
  return worker;
}

async function create(name: string, args: Record<string, unknown>): Promise<string> {
  const created = await rpc(serve.url, 'tools/call', { name, arguments: args });
  const taskId = (created.result as { taskId?: string } | undefined)?.taskId;
  if (taskId === undefined) throw new Error(`no task: ${JSON.stringify(created)}`);
  return taskId;
}

const get = async (taskId: string) =>
  (await rpc(serve.url, 'tasks/get', { taskId })).result as {
    status: string;
    statusMessage?: string;
    result?: { structuredContent?: Record<string, unknown> };
  };

async function settled(taskIds: string[], ms = 60_000) {
  return until(async () => {
    const tasks = await Promise.all(taskIds.map(get));
    if (tasks.every((t) => t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled')) return tasks;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return undefined;
  }, ms);
}

async function log(): Promise<Array<Record<string, unknown>>> {
  return (await readFile(join(dir, 'world.log'), 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-world-'));
  await writeFile(join(dir, 'tools.mjs'), MODULE);
  await writeFile(join(dir, 'world.log'), '');
  url = await freshPostgresUrl('world_processes');
  serve = await spawnServe(['--no-workers', '--store', url, '--tools', join(dir, 'tools.mjs'), '--app', APP]);
});

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await serve?.stop();
});

describe('events, children and concurrency keys across processes (PostgreSQL)', () => {
  it('waits get their events (one sent early) or time out, a fan-out starts five children once across a kill, a key runs two at a time', async () => {
    const first = startWorker();
    const second = startWorker();
    await Promise.all([first.ready, second.ready]);

    // Three waits: one is sent its event before it can have reached the wait, one while it
    // waits, one is sent nothing and times out.
    const early = await create('wait_paid', { timeoutMs: 120_000 });
    expect((await runCli(['tasks', 'send-event', early, 'payment.succeeded', '--data', '{"amount":1}', '--store', url])).code).toBe(0);
    const later = await create('wait_paid', { timeoutMs: 120_000 });
    const lapsing = await create('wait_paid', { timeoutMs: 1500 });
    const parents = [await create('fan_out', {}), await create('fan_out', {})];
    await until(async () => ((await get(later)).statusMessage?.includes('waiting') === true ? true : undefined));

    // A worker dies while parents wait on their children and tasks wait for events.
    first.child.kill('SIGKILL');
    await first.exited;
    const third = startWorker();
    await third.ready;
    expect((await runCli(['tasks', 'send-event', later, 'payment.succeeded', '--data', '{"amount":2}', '--store', url])).code).toBe(0);

    const [e, l, t] = await settled([early, later, lapsing]);
    expect(e!.status).toBe('completed');
    expect(e!.result?.structuredContent).toEqual({ paid: { amount: 1 } });
    expect(l!.result?.structuredContent).toEqual({ paid: { amount: 2 } });
    expect(t!.result?.structuredContent).toEqual({ paid: null });

    const done = await settled(parents);
    for (const parent of done) expect(parent.result?.structuredContent).toEqual({ sum: 55 });
    // Exactly five child tasks per parent, each squared by a process that lived at most once. A
    // step is at least once, not exactly once: the killed worker may have run a child's body and
    // died before its record committed, and then, only then, a survivor runs it again after the
    // lease. A recorded step never runs again, so no child is squared twice by survivors, nor
    // twice by the killed worker.
    const squares = (await log()).filter((line) => line.kind === 'square');
    const byChild = new Map<string, Array<Record<string, unknown>>>();
    for (const line of squares) byChild.set(String(line.taskId), [...(byChild.get(String(line.taskId)) ?? []), line]);
    expect(byChild.size).toBe(10);
    for (const runs of byChild.values()) {
      const killed = runs.filter((line) => line.pid === first.child.pid);
      expect(killed.length).toBeLessThanOrEqual(1);
      expect(runs.length - killed.length).toBeLessThanOrEqual(1);
      // Run twice: the killed worker's run came first.
      if (runs.length === 2) expect(runs[0]!.pid).toBe(first.child.pid);
    }

    // Eight runs of one customer's key and two of another's: never more than two of a key at once.
    const runs = [];
    for (let i = 0; i < 8; i++) runs.push(await create('limited', { customer: 'acme', i }));
    for (let i = 0; i < 2; i++) runs.push(await create('limited', { customer: 'globex', i }));
    expect((await settled(runs)).every((r) => r.status === 'completed')).toBe(true);
    const most = new Map<string, number>();
    const running = new Map<string, number>();
    for (const line of await log()) {
      if (line.kind !== 'start' && line.kind !== 'end') continue;
      const key = String(line.customer);
      const now = (running.get(key) ?? 0) + (line.kind === 'start' ? 1 : -1);
      running.set(key, now);
      most.set(key, Math.max(most.get(key) ?? 0, now));
    }
    expect(most.get('acme')).toBeGreaterThanOrEqual(1);
    expect(most.get('acme')).toBeLessThanOrEqual(2);
    expect(most.get('globex')).toBeLessThanOrEqual(2);
    expect((await log()).filter((line) => line.kind === 'end')).toHaveLength(10);
  }, 180_000);
});
