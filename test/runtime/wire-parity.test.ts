import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTools } from '../../src/demo/demo-tools.js';
import { startHttpServer, type RunningHttp } from '../../src/http/http-server.js';
import { createLogger } from '../../src/runtime/log.js';
import { createRuntime, type TaskRuntime } from '../../src/runtime/task-runtime.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { authKeyOf, type Principal } from '../../src/tools/principal.js';
import { listen, readEvents, rpc, type RpcOptions } from '../support/stateless.js';
import { holdTool, messageOf, openSession, postRaw } from '../support/wire-server.js';

// One table of cases sent through both protocol generations over real HTTP, on one SQLite
// store: each case's reply and the audit lines its request left are compared between the two.
// Where they differ, the case says how and with the spec's reason (ALLOWED): only what each
// spec encodes differently, since every method is decided once by the request layer.

type Generation = '2025-11-25' | '2026-07-28';

/** A reply, as much of it as both generations can be compared on. */
type Reply = { error: number; message: string } | { task: true } | { result: 'ok' | 'isError' } | { acknowledged: string[] };

/** What a request left in the audit trail: `line` (an exact line) or `count` (the aggregated audit), surface, decision, how many. */
type AuditLines = string[];

interface Caller {
  token: string;
  authKey: string;
}

interface Case {
  name: string;
  /** State the case needs, made for its caller before the request (through the 2026-07-28 wire unless said). */
  setup?: (caller: Caller) => Promise<Record<string, string>>;
  send: Record<Generation, (caller: Caller, state: Record<string, string>) => Promise<Reply>>;
  /** What 2025-11-25 answers and audits (the reference). */
  expect: { reply: Reply; audit: AuditLines };
  /** Where 2026-07-28 differs, what it shows instead, and why that is right. */
  allowed?: { reply?: Reply; audit?: AuditLines; why: string };
}

const LIMITS = { maxActiveTasks: 1, maxStoredTasks: 2, minTtl: 1 };

let store: SqliteStore;
let runtime: TaskRuntime;
let http: RunningHttp;
let url: string;
const tokens = new Map<string, Principal>();
const sessions = new Map<string, Record<string, string>>();
let bobsTask: string;
let nextId = 1;

/** A caller of its own per case and generation: per-caller limits and audit rows stay apart. */
function callerFor(name: string, generation: Generation): Caller {
  const principal = { tenant: `parity-${name.replace(/\W+/g, '-')}`, subject: generation };
  const token = `token-${principal.tenant}-${generation}`;
  tokens.set(token, principal);
  return { token, authKey: authKeyOf(principal) };
}

/** One 2025-11-25 request on the caller's session (opened on first use, declaring no client capabilities). */
async function legacy(caller: Caller, method: string, params: Record<string, unknown>) {
  let headers = sessions.get(caller.token);
  if (headers === undefined) {
    headers = (await openSession(url, caller.token)).headers;
    sessions.set(caller.token, headers);
  }
  const res = await postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }), headers);
  return (await messageOf(res)) ?? {};
}

function replyOf(message: { result?: Record<string, unknown>; error?: { code: number; message: string } }): Reply {
  if (message.error !== undefined) return { error: message.error.code, message: message.error.message };
  const result = message.result ?? {};
  if (result.task !== undefined || result.resultType === 'task') return { task: true };
  return { result: result.isError === true ? 'isError' : 'ok' };
}

/** One 2026-07-28 request; `options` replace the caller's capabilities or add to its `_meta`. */
const modern = async (caller: Caller, method: string, params: Record<string, unknown>, options: Omit<RpcOptions, 'token'> = {}) =>
  replyOf(await rpc(url, method, params, { token: caller.token, ...options }));
const old = async (caller: Caller, method: string, params: Record<string, unknown>) => replyOf(await legacy(caller, method, params));

/** A task of `hold` for the caller (it stays working: nothing runs here), through 2026-07-28. */
async function holdTask(caller: Caller, note: string, key?: string): Promise<string> {
  const meta = key === undefined ? {} : { meta: { 'io.tasklatch/idempotency-key': key } };
  const created = await rpc(url, 'tools/call', { name: 'hold', arguments: { note } }, { token: caller.token, ...meta });
  const taskId = created.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created)}`);
  return taskId;
}

/** The audit rows of one auth key, as `kind surface decision` → how many decisions. */
async function auditOf(authKey: string): Promise<Map<string, number>> {
  // Reading a trail first waits until the aggregated audit's queue is stored.
  await store.auditTrail({ taskId: randomUUID() });
  const counts = new Map<string, number>();
  const add = (key: string, n: number) => counts.set(key, (counts.get(key) ?? 0) + n);
  for (const row of store.db.prepare('SELECT surface, decision FROM task_audit WHERE auth_key = ?').all(authKey) as Array<Record<string, string>>)
    add(`line ${row.surface} ${row.decision}`, 1);
  for (const row of store.db.prepare('SELECT surface, decision, count FROM task_read_audit WHERE auth_key = ?').all(authKey) as Array<Record<string, unknown>>)
    add(`count ${String(row.surface)} ${String(row.decision)}`, Number(row.count));
  return counts;
}

/** What the rows gained between two readings, as sorted `kind surface decision ×n`. */
function added(before: Map<string, number>, after: Map<string, number>): AuditLines {
  return [...after]
    .map(([key, n]) => [key, n - (before.get(key) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .map(([key, n]) => `${key} ×${n}`)
    .sort();
}

const NOT_FOUND: Reply = { error: -32602, message: 'Task not found' };

const CASES: Case[] = [
  {
    name: 'a plain call',
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'lookup', arguments: { account: 'cash' } }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'lookup', arguments: { account: 'cash' } }),
    },
    expect: { reply: { result: 'ok' }, audit: ['count create ACCEPT_NORMAL ×1'] },
  },
  {
    name: 'a plain call with bad arguments',
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'lookup', arguments: {} }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'lookup', arguments: {} }),
    },
    // The tool's result says what is wrong; the call itself was decided and run.
    expect: { reply: { result: 'isError' }, audit: ['count create ACCEPT_NORMAL ×1'] },
  },
  {
    name: 'a task call with bad arguments',
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'export_ledger', arguments: { month: 5 }, task: {} }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'export_ledger', arguments: { month: 5 } }),
    },
    // A malformed request, refused before any decision: no audit line on either, as for any -32602 of the input.
    expect: {
      reply: { error: -32602, message: 'Invalid arguments for tool export_ledger: ' + badMonthMessage() },
      audit: [],
    },
  },
  {
    name: 'an unknown tool',
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'nope', arguments: {} }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'nope', arguments: {} }),
    },
    expect: { reply: { error: -32602, message: 'Unknown tool: nope' }, audit: [] },
  },
  {
    name: 'a task-required tool called by a client without task support',
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-01' } }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-01' } }, { capabilities: {} }),
    },
    expect: {
      reply: { error: -32601, message: 'Tool export_ledger must be called as a task (params.task)' },
      audit: ['count create BLOCK_TASK_REQUIRED ×1'],
    },
    allowed: {
      reply: {
        error: -32021,
        message: "Tool export_ledger needs the io.modelcontextprotocol/tasks extension in this request's client capabilities",
      },
      why: 'spec: a plain call of a required tool is -32601 on 2025-11-25 (MUST); on 2026-07-28 it is -32021 MissingRequiredClientCapability naming the extension (MUST)',
    },
  },
  {
    name: 'a task asked of a tool that forbids tasks',
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'lookup', arguments: { account: 'cash' }, task: {} }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'lookup', arguments: { account: 'cash' } }),
    },
    expect: {
      reply: { error: -32601, message: 'Tool lookup does not support task-augmented calls' },
      audit: ['count create BLOCK_TASK_FORBIDDEN ×1'],
    },
    allowed: {
      reply: { result: 'ok' },
      audit: ['count create ACCEPT_NORMAL ×1'],
      why: 'spec: 2025-11-25 answers a task-augmented call of a forbidden tool -32601 (SHOULD); the 2026-07-28 extension ignores params.task (MUST) and the server alone decides, so the tool runs plainly',
    },
  },
  {
    name: 'the active-task limit',
    setup: async (c) => ({ held: await holdTask(c, 'first') }),
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'hold', arguments: { note: 'second' }, task: {} }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'hold', arguments: { note: 'second' } }),
    },
    expect: {
      reply: { error: -32000, message: 'Too many active tasks: at most 1 non-terminal tasks per caller' },
      audit: ['line create BLOCK_TASK_LIMIT ×1'],
    },
  },
  {
    name: 'the stored-task limit',
    setup: async (c) => {
      for (const note of ['one', 'two']) await rpc(url, 'tasks/cancel', { taskId: await holdTask(c, note) }, { token: c.token });
      return {};
    },
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'hold', arguments: { note: 'three' }, task: {} }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'hold', arguments: { note: 'three' } }),
    },
    expect: {
      reply: { error: -32000, message: 'Too many stored tasks: at most 2 unexpired tasks per caller, finished ones included' },
      audit: ['line create BLOCK_STORED_LIMIT ×1'],
    },
  },
  {
    name: 'an idempotency key used by another request',
    setup: async (c) => ({ held: await holdTask(c, 'first', 'key-1') }),
    send: {
      '2025-11-25': (c) => old(c, 'tools/call', { name: 'hold', arguments: { note: 'other' }, task: {}, _meta: { 'io.tasklatch/idempotency-key': 'key-1' } }),
      '2026-07-28': (c) => modern(c, 'tools/call', { name: 'hold', arguments: { note: 'other' } }, { meta: { 'io.tasklatch/idempotency-key': 'key-1' } }),
    },
    expect: {
      reply: { error: -32602, message: 'Idempotency key "key-1" is already used by a different request' },
      audit: ['line create BLOCK_IDEMPOTENCY_COLLISION ×1'],
    },
  },
  {
    name: "another caller's task id",
    send: {
      '2025-11-25': (c) => old(c, 'tasks/get', { taskId: bobsTask }),
      '2026-07-28': (c) => modern(c, 'tasks/get', { taskId: bobsTask }),
    },
    expect: { reply: NOT_FOUND, audit: ['count read BLOCK_AUTH ×1'] },
  },
  {
    name: 'a task id no store could hold',
    send: {
      '2025-11-25': (c) => old(c, 'tasks/get', { taskId: 'x'.repeat(300) }),
      '2026-07-28': (c) => modern(c, 'tasks/get', { taskId: 'x'.repeat(300) }),
    },
    // Decided by the request layer before any lookup: no one's task, and nothing to audit.
    expect: { reply: NOT_FOUND, audit: [] },
  },
  {
    name: "a cancel of another caller's task",
    send: {
      '2025-11-25': (c) => old(c, 'tasks/cancel', { taskId: bobsTask }),
      '2026-07-28': (c) => modern(c, 'tasks/cancel', { taskId: bobsTask }),
    },
    // A cancel is a write: the store writes its line, a miss included.
    expect: { reply: NOT_FOUND, audit: ['line read BLOCK_AUTH ×1'] },
  },
  {
    name: 'an expired task id',
    // A ttl of 50 ms is asked on 2025-11-25 (2026-07-28 requests name none), for both callers.
    setup: async (c) => {
      const created = await legacy(c, 'tools/call', { name: 'hold', arguments: { note: 'brief' }, task: { ttl: 50 } });
      await new Promise((r) => setTimeout(r, 150));
      return { taskId: (created.result?.task as { taskId: string }).taskId };
    },
    send: {
      '2025-11-25': (c, s) => old(c, 'tasks/get', { taskId: s.taskId! }),
      '2026-07-28': (c, s) => modern(c, 'tasks/get', { taskId: s.taskId! }),
    },
    expect: { reply: NOT_FOUND, audit: ['count read BLOCK_EXPIRED ×1'] },
  },
  {
    name: "an answer to another caller's task",
    send: {
      // 2025-11-25 answers arrive on the task's tasks/result stream, which another caller cannot open.
      '2025-11-25': (c) => old(c, 'tasks/result', { taskId: bobsTask }),
      '2026-07-28': (c) => modern(c, 'tasks/update', { taskId: bobsTask, inputResponses: { confirm: { action: 'accept', content: {} } } }),
    },
    expect: { reply: NOT_FOUND, audit: ['count read BLOCK_AUTH ×1'] },
    allowed: {
      audit: ['count input BLOCK_AUTH ×1'],
      why: 'spec: 2025-11-25 has no answer method (answers are responses to server→client requests on the tasks/result stream, a read first); 2026-07-28 answers with tasks/update, an input decision',
    },
  },
  {
    name: "a subscription naming another caller's task and an unknown id",
    send: {
      // 2025-11-25 has no subscriptions: a session hears only of the tasks it created; the nearest request is a read.
      '2025-11-25': (c) => old(c, 'tasks/get', { taskId: bobsTask }),
      '2026-07-28': async (c) => {
        const { res, abort } = await listen(url, c.token, [bobsTask, randomUUID()], 'parity');
        const [ack] = await readEvents(res, abort, (m) => m.length >= 1);
        return { acknowledged: (ack?.params.notifications as { taskIds: string[] }).taskIds };
      },
    },
    expect: { reply: NOT_FOUND, audit: ['count read BLOCK_AUTH ×1'] },
    allowed: {
      reply: { acknowledged: [] },
      audit: ['count read NOT_FOUND ×1'],
      why: 'spec: 2025-11-25 has no subscriptions (the nearest request is a read); a 2026-07-28 listen acknowledges only the ids it serves, and its one read for all ids audits one NOT_FOUND per listen',
    },
  },
];

/** zod's message for `month: 5` in export_ledger, as the schema itself words it. */
function badMonthMessage(): string {
  const tool = demoTools({ exportsDir: tmpdir() }).find((t) => t.name === 'export_ledger')!;
  const parsed = tool.inputSchema.safeParse({ month: 5 });
  return parsed.success ? '' : parsed.error.message;
}

beforeAll(async () => {
  store = await SqliteStore.open(join(await mkdtemp(join(tmpdir(), 'tasklatch-parity-')), 'parity.db'));
  runtime = createRuntime({
    store,
    tools: [...demoTools({ exportsDir: await mkdtemp(join(tmpdir(), 'tasklatch-parity-')) }), holdTool],
    callersIdentified: true,
    execute: false,
    limits: LIMITS,
    logger: createLogger('silent'),
  });
  await runtime.start();
  tokens.set('token-bob', { tenant: 'parity-owner', subject: 'bob' });
  http = await startHttpServer({ runtime, host: '127.0.0.1', port: 0, tokens });
  url = http.url;
  bobsTask = await holdTask({ token: 'token-bob', authKey: 'parity-owner/bob' }, 'bob');
});

afterAll(async () => {
  await http.close();
  await runtime.close();
  await store.close();
});

describe('the same request through 2025-11-25 and 2026-07-28', () => {
  it.each(CASES)('$name: the same decision and audit line, or an allowed difference', async (c) => {
    const seen = {} as Record<Generation, { reply: Reply; audit: AuditLines }>;
    for (const generation of ['2025-11-25', '2026-07-28'] as const) {
      const caller = callerFor(c.name, generation);
      const state = (await c.setup?.(caller)) ?? {};
      const before = await auditOf(caller.authKey);
      const reply = await c.send[generation](caller, state);
      seen[generation] = { reply, audit: added(before, await auditOf(caller.authKey)) };
    }
    expect(seen['2025-11-25']).toEqual(c.expect);
    expect(seen['2026-07-28']).toEqual({ reply: c.allowed?.reply ?? c.expect.reply, audit: c.allowed?.audit ?? c.expect.audit });
  });

  it('lists every allowed difference with its reason, and no case allows what it does not differ in', () => {
    const allowed = CASES.filter((c) => c.allowed !== undefined).map((c) => c.name);
    expect(allowed).toEqual([
      'a task-required tool called by a client without task support',
      'a task asked of a tool that forbids tasks',
      "an answer to another caller's task",
      "a subscription naming another caller's task and an unknown id",
    ]);
    for (const c of CASES.filter((c) => c.allowed !== undefined)) {
      // Only a difference the two specs encode: the reason names the spec.
      expect(c.allowed!.why).toMatch(/^spec: .{20,}/);
      if (c.allowed!.reply !== undefined) expect(c.allowed!.reply).not.toEqual(c.expect.reply);
      if (c.allowed!.audit !== undefined) expect(c.allowed!.audit).not.toEqual(c.expect.audit);
    }
  });
});
