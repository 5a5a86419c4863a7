import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { createLogger } from '../../src/runtime/log.js';
import { openStore } from '../../src/store/open-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';
import { main } from '../../src/cli/run.js';
import { runCli, runMain as inProcess } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { admission } from '../store/suite/store-suite.js';

// `tasklatch tasks` run as a user would (a few runs through the built binary, the rest through its
// entry point in this process), against a store that a runtime in this process fills
// with the tasks of several tenants: every subcommand, its JSON parsed, on SQLite and PostgreSQL.

const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** `hold` waits for its abort signal (a cancel must reach it); `quick` finishes at once. */
function tools(aborted: string[]): TaskTool[] {
  const hold = defineTool({
    name: 'hold',
    description: 'waits until stopped',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    handler: async (_args, ctx) => {
      await new Promise<void>((_resolve, reject) =>
        ctx.signal.addEventListener(
          'abort',
          () => {
            aborted.push(ctx.taskId ?? '');
            reject(ctx.signal.reason as Error);
          },
          { once: true },
        ),
      );
      return { content: [] };
    },
  });
  const quick = defineTool({
    name: 'quick',
    description: 'done at once',
    inputSchema: z.object({}),
    execution: { taskSupport: 'optional' },
    handler: async () => ({ content: [{ type: 'text', text: 'ok' }] }),
  });
  return [hold, quick];
}

async function call(runtime: TaskRuntime, auth: string, name: string): Promise<string> {
  const out = await createTask(runtime.guard, {
    auth,
    tool: { name, execution: { taskSupport: name === 'hold' ? 'required' : 'optional' } },
    request: { method: 'tools/call', params: { name, arguments: {}, task: { ttl: 600_000 } } },
  });
  return out.record!.taskId;
}

async function parsed(run: Promise<{ code: number | null; stdout: string; stderr: string }>): Promise<Record<string, unknown>> {
  const { code, stdout, stderr } = await run;
  expect(stderr).toBe('');
  expect(code).toBe(0);
  return JSON.parse(stdout) as Record<string, unknown>;
}

const json = (args: string[]) => parsed(inProcess(args));
const spawnedJson = (args: string[]) => parsed(runCli(args));

const STORES = [
  { name: 'sqlite', url: async () => `sqlite:${join(await mkdtemp(join(tmpdir(), 'tasklatch-ops-')), 'tasks.db')}` },
  { name: 'postgres', url: () => freshPostgresUrl('cli_tasks') },
];

describe.each(STORES)('tasklatch tasks on $name', ({ name, url: makeUrl }) => {
  async function filled(): Promise<{ url: string; store: TaskStore; runtime: TaskRuntime; ids: Record<'a1' | 'b1' | 'a2' | 'c1', string>; aborted: string[] }> {
    const url = await makeUrl();
    const store = await openStore(url);
    const aborted: string[] = [];
    const runtime = createRuntime({ store, app: 'ledger-app', tools: tools(aborted), logger: createLogger('silent'), worker: { pollMs: 100 } });
    await runtime.start();
    stops.push(
      () => store.close(),
      () => runtime.close(100),
    );
    const ids = {
      a1: await call(runtime, 'acme/alice', 'quick'),
      b1: await call(runtime, 'beta/bob', 'quick'),
      a2: await call(runtime, 'acme/alice', 'hold'),
      c1: await call(runtime, 'acme/carol', 'hold'),
    };
    await until(async () => ((await runtime.guard.worker.lookup({ auth: 'beta/bob', taskId: ids.b1 })).record?.status === 'completed' ? true : undefined));
    await until(async () => ((await runtime.guard.worker.lookup({ auth: 'acme/alice', taskId: ids.a1 })).record?.status === 'completed' ? true : undefined));
    await until(() => (runtime.worker?.executor.active === 2 ? true : undefined));
    return { url, store, runtime, ids, aborted };
  }

  // One store per kind for every case: filling it is the slow part. The cancel case comes last.
  let filledStore: Awaited<ReturnType<typeof filled>>;
  beforeAll(async () => {
    filledStore = await filled();
  }, 60_000);

  it('lists, filters, pages, shows, audits and counts every tenant’s tasks', async () => {
    const { url, ids } = filledStore;
    const all = (await spawnedJson(['tasks', 'ls', '--store', url, '--json'])) as {
      tasks: Array<{ taskId: string; tenant: string; status: string; app: string }>;
      nextPage: null;
    };
    expect(all.tasks.map((t) => t.taskId).sort()).toEqual(Object.values(ids).sort());
    expect(all.tasks.map((t) => t.app)).toEqual(['ledger-app', 'ledger-app', 'ledger-app', 'ledger-app']);
    expect(all.nextPage).toBeNull();
    const ofApp = (await json(['tasks', 'ls', '--store', url, '--json', '--app', 'ledger-app'])) as { tasks: Array<{ taskId: string }> };
    expect(ofApp.tasks.map((t) => t.taskId)).toEqual(all.tasks.map((t) => t.taskId));
    expect(((await json(['tasks', 'ls', '--store', url, '--json', '--app', 'other-app'])) as { tasks: unknown[] }).tasks).toEqual([]);
    const acme = (await json(['tasks', 'ls', '--store', url, '--json', '--tenant', 'acme', '--status', 'working'])) as { tasks: Array<{ taskId: string }> };
    expect(acme.tasks.map((t) => t.taskId).sort()).toEqual([ids.a2, ids.c1].sort());

    const seen: string[] = [];
    let page: string | null = null;
    do {
      const got = (await json(['tasks', 'ls', '--store', url, '--json', '--limit', '3', ...(page === null ? [] : ['--page', page])])) as {
        tasks: Array<{ taskId: string }>;
        nextPage: string | null;
      };
      seen.push(...got.tasks.map((t) => t.taskId));
      page = got.nextPage;
    } while (page !== null && seen.length < 10);
    expect(seen).toEqual(all.tasks.map((t) => t.taskId));

    const table = await runCli(['tasks', 'ls', '--store', url]);
    expect(table.stdout.split('\n')[0]).toMatch(/^TASK\s+PRINCIPAL\s+APP\s+TOOL\s+TOOL VERSION\s+STATUS\s+ATTEMPT/);
    const quickVersion = filledStore.runtime.tools.version('quick')!;
    expect(table.stdout).toMatch(new RegExp(`beta/bob\\s+ledger-app\\s+quick\\s+${quickVersion}\\s+completed`));

    // By the version of its tool each task was admitted with.
    const holdVersion = filledStore.runtime.tools.version('hold')!;
    const ofVersion = (await json(['tasks', 'ls', '--store', url, '--json', '--version', holdVersion])) as {
      tasks: Array<{ taskId: string; toolVersion: string }>;
    };
    expect(ofVersion.tasks.map((t) => t.taskId).sort()).toEqual([ids.a2, ids.c1].sort());
    expect(ofVersion.tasks.map((t) => t.toolVersion)).toEqual([holdVersion, holdVersion]);
    expect(((await json(['tasks', 'ls', '--store', url, '--json', '--version', 'v-none'])) as { tasks: unknown[] }).tasks).toEqual([]);
    const badVersion = await inProcess(['tasks', 'ls', '--store', url, '--version', '']);
    expect([badVersion.code, badVersion.stderr]).toEqual([2, expect.stringMatching(/--version must not be empty/)]);

    const shown = (await json(['tasks', 'show', ids.a2, '--store', url, '--json'])) as {
      task: Record<string, unknown>;
      lease: Record<string, unknown>;
      dispatch: Record<string, unknown>;
    };
    expect(shown.task).toMatchObject({ taskId: ids.a2, tenant: 'acme', subject: 'alice', app: 'ledger-app', tool: 'hold', status: 'working', attempt: 1 });
    expect(shown.task.toolDigest).toBe(filledStore.runtime.tools.digest('hold'));
    expect(shown.task.toolVersion).toBe(holdVersion);
    const shownText = await inProcess(['tasks', 'show', ids.a2, '--store', url]);
    expect(shownText.stdout).toMatch(/^app\s+ledger-app$/m);
    expect(shownText.stdout).toMatch(new RegExp(`^tool\\s+hold   version ${holdVersion}   definition `, 'm'));
    expect(shownText.stdout).toMatch(/^version\s+\d+\s+attempt 1, 0 takeovers/m);
    expect(shown.task).toMatchObject({ takeovers: 0 });
    expect(shown.lease).toMatchObject({ held: true });
    expect(shown.dispatch).toMatchObject({ open: true, attempt: 1 });

    const audit = (await json(['tasks', 'audit', ids.b1, '--store', url, '--json'])) as {
      audit: Array<{ decision: string; authKey: string; correlationId: string; detail: string | null }>;
    };
    expect(audit.audit.map((l) => l.decision)).toEqual(['ACCEPT_TASK', 'APPLY_TRANSITION', 'APPLY_TRANSITION']);
    expect(audit.audit.every((l) => l.authKey === 'beta/bob' && l.correlationId !== '')).toBe(true);
    expect(audit.audit[1]?.detail).toMatch(/^claim /);

    const stats = (await json(['tasks', 'stats', '--store', url, '--json'])) as {
      total: number;
      byStatus: Record<string, number>;
      byTool: unknown[];
      oldestWorking: { taskId: string };
    };
    expect(stats.total).toBe(4);
    expect(stats.byStatus).toMatchObject({ working: 2, completed: 2 });
    expect(stats.byTool).toEqual([
      { tool: 'hold', status: 'working', count: 2 },
      { tool: 'quick', status: 'completed', count: 2 },
    ]);
    expect([ids.a2, ids.c1]).toContain(stats.oldestWorking.taskId);
  });

  it('counts the takeovers of a task whose lease lapsed, from the claims its audit trail marks', async () => {
    const url = await makeUrl();
    const store = await openStore(url);
    stops.push(() => store.close());
    const now = Date.now();
    const { taskId } = (await store.admit(admission({ now }))).record!;
    const claimBy = (owner: string, at: number) =>
      store.claim({ owner, now: at, leaseMs: 50, limit: 1, maxAttempts: 5, abandonedResult: { content: [] }, correlationId: `claim-${owner}` });
    // Worker A claims and never heartbeats; its 50 ms lease lapses and worker B takes the task over.
    expect(await claimBy('worker-a', now + 1)).toMatchObject([{ taskId, leaseOwner: 'worker-a', attempt: 1 }]);
    expect(await claimBy('worker-b', now + 20)).toEqual([]);
    expect(await claimBy('worker-b', now + 60)).toMatchObject([{ taskId, leaseOwner: 'worker-b', attempt: 2 }]);

    const audit = (await json(['tasks', 'audit', taskId, '--store', url, '--json'])) as { audit: Array<{ detail: string | null }> };
    expect(audit.audit.map((l) => l.detail).filter((d) => d !== null && /^(claim|takeover) /.test(d))).toEqual([
      'claim worker-a',
      'takeover worker-b (lease of worker-a expired)',
    ]);
    const shown = (await json(['tasks', 'show', taskId, '--store', url, '--json'])) as { task: Record<string, unknown> };
    expect(shown.task).toMatchObject({ taskId, attempt: 2, takeovers: 1, leaseOwner: 'worker-b' });
    const text = await inProcess(['tasks', 'show', taskId, '--store', url]);
    expect(text.stdout).toMatch(/^version\s+3\s+attempt 2, 1 takeover$/m);
  });

  it('lists parked tasks (--parked) and shows since when and how many times they parked', async () => {
    const url = await makeUrl();
    const store = await openStore(url);
    stops.push(() => store.close());
    const now = Date.now();
    const parked = (await store.admit(admission({ now }))).record!;
    const other = (await store.admit(admission({ now: now + 1 }))).record!;
    const held = await store.claim({
      owner: 'w',
      now: now + 2,
      leaseMs: 60_000,
      limit: 5,
      maxAttempts: 5,
      abandonedResult: { content: [] },
      correlationId: 'c',
    });
    const mine = held.find((r) => r.taskId === parked.taskId)!;
    const reason = 'step order changed at position 1: the journal has sleep "wait" and this run asked for step "a2" (version 3f2a9c01)';
    const fence = { taskId: mine.taskId, authKey: mine.authKey, owner: 'w', version: mine.version };
    expect((await store.park({ fence, reason, now: now + 3, correlationId: 'p' })).decision).toBe('APPLY_PARK');

    const listed = (await json(['tasks', 'ls', '--store', url, '--json', '--parked'])) as { tasks: Array<{ taskId: string; statusMessage: string }> };
    expect(listed.tasks.map((t) => t.taskId)).toEqual([parked.taskId]);
    expect(listed.tasks[0]!.statusMessage).toMatch(/^parked: step order changed at position 1: .* \(version 3f2a9c01\); retrying at /);
    const all = (await json(['tasks', 'ls', '--store', url, '--json'])) as { tasks: Array<{ taskId: string }> };
    expect(all.tasks.map((t) => t.taskId).sort()).toEqual([parked.taskId, other.taskId].sort());

    const shown = (await json(['tasks', 'show', parked.taskId, '--store', url, '--json'])) as { parked: unknown; task: Record<string, unknown> };
    expect(shown.parked).toEqual({ since: new Date(now + 3).toISOString(), parks: 1 });
    expect(shown.task).toMatchObject({ status: 'working', leaseOwner: null });
    const text = await inProcess(['tasks', 'show', parked.taskId, '--store', url]);
    expect(text.stdout).toMatch(/^status\s+working — parked: step order changed at position 1/m);
    expect(text.stdout).toMatch(/^parked\s+since \S+ \S+, 1 time in a row$/m);
    const notParked = (await json(['tasks', 'show', other.taskId, '--store', url, '--json'])) as { parked: unknown };
    expect(notParked.parked).toBeNull();
    expect((await inProcess(['tasks', 'show', other.taskId, '--store', url])).stdout).not.toMatch(/^parked/m);
  });

  it('shows a journal’s patch markers, woken sleeps and concurrent steps', async () => {
    const url = await makeUrl();
    const store = await openStore(url);
    stops.push(() => store.close());
    const now = Date.now();
    const { taskId } = (await store.admit(admission({ now }))).record!;
    const row = { taskId, attempts: 0, value: undefined, error: null, valueBytes: 0, wakeAt: null, concurrent: false, startedAt: now, updatedAt: now };
    await store.seed(
      [],
      [],
      [
        Object.assign({}, row, { position: 0, name: 'a', kind: 'do' as const, status: 'completed' as const, attempts: 1, concurrent: true }),
        Object.assign({}, row, { position: 1, name: 'add-a2', kind: 'patch' as const, status: 'completed' as const }),
        Object.assign({}, row, { position: 2, name: 'rest', kind: 'sleep' as const, status: 'woke' as const, wakeAt: now + 5 }),
      ],
    );
    const shown = (await json(['tasks', 'show', taskId, '--store', url, '--json'])) as { steps: Array<Record<string, unknown>> };
    expect(shown.steps.map((s) => [s.position, s.name, s.kind, s.status, s.concurrent])).toEqual([
      [0, 'a', 'do', 'completed', true],
      [1, 'add-a2', 'patch', 'completed', false],
      [2, 'rest', 'sleep', 'woke', false],
    ]);
    expect(shown.steps[2]!.wakeAt).toBe(new Date(now + 5).toISOString());
    const text = (await inProcess(['tasks', 'show', taskId, '--store', url])).stdout;
    expect(text).toMatch(/POS +NAME +KIND +STATUS +CONCURRENT/);
    expect(text).toMatch(/\n0 +a +do +completed +yes /);
    expect(text).toMatch(/\n1 +add-a2 +patch +completed +0 /);
    expect(text).toMatch(/\n2 +rest +sleep +woke +0 /);
  });

  it('refuses bad input in one line with exit 2, before touching the store', async () => {
    const { url, ids } = filledStore;
    // A miss through the built binary, another in this process; and a server that does not answer.
    const runs = [
      { args: ['tasks', 'show', 'no-such-task', '--store', url], run: runCli },
      { args: ['tasks', 'audit', 'no-such-task', '--store', url], run: inProcess },
      ...(name === 'sqlite' ? [{ args: ['tasks', 'stats', '--store', 'postgres://postgres@127.0.0.1:1/none'], run: runCli }] : []),
    ];
    for (const { args, run: runIt } of runs) {
      const run = await runIt(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(run.stderr, args.join(' ')).toMatch(/^tasklatch tasks: /);
    }
    if (name !== 'sqlite') return;
    // What does not depend on the store, through the same entry point in this process (faster).
    const parsed = [
      ['tasks', 'ls', '--status', 'done', '--store', url],
      ['tasks', 'ls', '--since', 'yesterday', '--store', url],
      ['tasks', 'ls', '--before', '2026-13-45', '--store', url],
      ['tasks', 'ls', '--limit', '0', '--store', url],
      ['tasks', 'ls', '--page', 'bm9wZQ', '--store', url],
      ['tasks', 'ls', '--tenant', 'a/b', '--store', url],
      ['tasks', 'ls', '--app', '', '--store', url],
      ['tasks', 'ls', '--app', 'two\nlines', '--store', url],
      ['tasks', 'ls', '--app', 'x'.repeat(101), '--store', url],
      ['tasks', 'show', ids.c1, '--app', 'ledger-app', '--store', url],
      ['tasks', 'show', ids.c1, '--parked', '--store', url],
      ['tasks', 'ls', '--as', 'a/b', '--store', url],
      ['tasks', 'ls', '--bogus', '--store', url],
      ['tasks', 'cancel', ids.c1, '--store', url],
      ['tasks', 'cancel', 'x', '--as', 'nobody', '--store', url],
      ['tasks', 'show', '--store', url],
      ['tasks', 'frobnicate', '--store', url],
      ['tasks', 'ls', '--store', 'memory'],
      ['tasks', 'ls', '--store', 'sqlite:/nonexistent/dir/tasks.db'],
    ];
    for (const args of parsed) {
      const err: string[] = [];
      const code = await main(args, { out: () => undefined, err: (line) => err.push(line) });
      expect(code, args.join(' ')).toBe(2);
      expect(err.join('\n').split('\n'), args.join(' ')).toHaveLength(1);
      expect(err[0], args.join(' ')).toMatch(/^tasklatch tasks: /);
    }
    expect(await statusIn(url, ids.c1)).toBe('working');
  });

  it('cancels as the named principal only: latched, signalled to the running handler, audited as an operator', async () => {
    const { url, runtime, ids, aborted } = filledStore;
    const wrong = await inProcess(['tasks', 'cancel', ids.c1, '--as', 'acme/alice', '--store', url]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
    expect(wrong.stderr).toContain('nothing changed');
    const untouched = (await runtime.guard.worker.lookup({ auth: 'acme/carol', taskId: ids.c1 })).record!;
    expect(untouched).toMatchObject({ status: 'working', cancelRequested: false });

    const done = (await spawnedJson(['tasks', 'cancel', ids.c1, '--as', 'acme/carol', '--store', url, '--json'])) as {
      decision: string;
      correlationId: string;
    };
    expect(done.decision).toBe('CANCEL_TASK');
    // The handler runs in this process; the cancel was written by another one.
    expect(await until(() => (aborted.includes(ids.c1) ? true : undefined))).toBe(true);
    expect((await runtime.guard.worker.lookup({ auth: 'acme/carol', taskId: ids.c1 })).record?.status).toBe('cancelled');
    const trail = await runtime.guard.context.store.auditTrail({ taskId: ids.c1 });
    expect(trail.filter((l) => l.decision === 'CANCEL_TASK').map((l) => l.correlationId)).toEqual([done.correlationId]);
    expect(done.correlationId).toMatch(/^operator:/);
    const again = (await json(['tasks', 'cancel', ids.c1, '--as', 'acme/carol', '--store', url, '--json'])) as { decision: string };
    expect(again.decision).toBe('ALREADY_TERMINAL');
  });
});

/** The status of a task as another handle on the store reads it. */
async function statusIn(url: string, taskId: string): Promise<string | undefined> {
  const store = await openStore(url);
  try {
    return (await store.inspectTask({ taskId }))?.record.status;
  } finally {
    await store.close();
  }
}
