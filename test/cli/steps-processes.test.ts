import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openGuard, type Guard } from '../../src/service/guard.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { BIN, ROOT, runCli } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { ALL_CAPS } from '../support/records.js';
import { until } from '../support/until.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

// Durable steps across process deaths: a `tasklatch worker --tools` process runs a tool whose
// steps append to a side-effect log, and is SIGKILLed at each step boundary in turn; a sleep
// outlives the worker that began it. PostgreSQL, a schema per test.

const APP = 'steps-test';
const AUTH = 'acme/alice';
const STEPS = ['reserve', 'charge', 'ship'];
/** Where a worker kills itself, once per task: before a step's side effect, after it (before its record), before the end. */
const KILL_POINTS = [...STEPS.flatMap((s) => [`before-${s}`, `after-${s}`]), 'before-end'];

const MODULE = `
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};

const { STEPS_LOG, STEPS_MARKS } = process.env;

/** SIGKILLs this process the first time any run of the task reaches its kill point. */
function maybeDie(taskId, here, point) {
  if (here !== point) return;
  const mark = join(STEPS_MARKS, taskId);
  if (existsSync(mark)) return;
  writeFileSync(mark, here);
  process.kill(process.pid, 'SIGKILL');
}

export default [
  {
    name: 'three_steps',
    description: 'three steps, each with a side effect',
    inputSchema: z.object({ killAt: z.string().optional() }),
    execution: { taskSupport: 'required' },
    async handler({ killAt }, ctx) {
      const tokens = [];
      for (const step of ${JSON.stringify(STEPS)}) {
        tokens.push(
          await ctx.step.do(step, async () => {
            maybeDie(ctx.taskId, 'before-' + step, killAt);
            const token = randomUUID();
            appendFileSync(STEPS_LOG, JSON.stringify({ taskId: ctx.taskId, step, token }) + '\\n');
            maybeDie(ctx.taskId, 'after-' + step, killAt);
            return token;
          }),
        );
      }
      maybeDie(ctx.taskId, 'before-end', killAt);
      return { content: [{ type: 'text', text: tokens.join(',') }] };
    },
  },
  {
    name: 'nap_between',
    description: 'a step, a durable sleep, a step',
    inputSchema: z.object({ napMs: z.number() }),
    execution: { taskSupport: 'required' },
    async handler({ napMs }, ctx) {
      const before = await ctx.step.do('before', () => Date.now());
      await ctx.step.sleep('nap', napMs);
      const after = await ctx.step.do('after', () => ({ at: Date.now(), by: process.pid }));
      return { content: [{ type: 'text', text: 'rested' }], structuredContent: { before, after: after.at, by: after.by } };
    },
  },
];
`;

let dir: string;
let url: string;
let store: PostgresStore;
let guard: Guard;
const children = new Set<ChildProcess>();

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-steps-'));
  await mkdir(join(dir, 'marks'));
  await writeFile(join(dir, 'tools.mjs'), MODULE);
  await writeFile(join(dir, 'steps.log'), '');
  url = await freshPostgresUrl('steps_processes');
  store = await PostgresStore.open(url);
  guard = openGuard({ store, capabilities: ALL_CAPS, app: APP });
});

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await store.close();
});

interface WorkerProcess {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startWorker(): WorkerProcess {
  // One task at a time: a kill then stops only the task whose kill point it is (each stop is
  // one of the task's attempts).
  const child = spawn(
    process.execPath,
    [BIN, 'worker', '--store', url, '--tools', join(dir, 'tools.mjs'), '--app', APP, '--lease-ms', '1000', '--concurrency', '1'],
    {
      env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn', STEPS_LOG: join(dir, 'steps.log'), STEPS_MARKS: join(dir, 'marks') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => /running/.test(d.toString()) && resolve());
    void exited.then(() => reject(new Error('worker exited before it ran')));
  });
  return { child, ready, exited };
}

async function admit(tool: string, args: Record<string, unknown>): Promise<string> {
  const out = await createTask(guard, {
    auth: AUTH,
    tool: { name: tool, execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: tool, arguments: args, task: { ttl: 600_000 } } },
  });
  return out.record!.taskId;
}

const statusOf = async (taskId: string) => (await guard.worker.lookup({ auth: AUTH, taskId })).record;

describe('durable steps across worker processes (PostgreSQL)', () => {
  it('a worker SIGKILLed at each step boundary in turn: every recorded step’s side effect happens once', async () => {
    const tasks = new Map<string, string>();
    for (const point of KILL_POINTS) tasks.set(await admit('three_steps', { killAt: point }), point);
    let kills = 0;
    const deadline = Date.now() + 120_000;
    // Read at most every 200 ms, whoever asks: three worker slots wait on it.
    let checked: Promise<boolean> | null = null;
    const check = async () => {
      for (const [taskId, point] of tasks) {
        const record = await statusOf(taskId);
        if (record?.status === 'failed') throw new Error(`the task killed at ${point} failed: ${JSON.stringify(record.result)}`);
        if (record?.status !== 'completed') return false;
      }
      return true;
    };
    const allDone = () => (checked ??= check().finally(() => setTimeout(() => (checked = null), 200)));
    const waitDone = async () => {
      while (!(await allDone())) await sleep(200);
      return 'done' as const;
    };
    // Three slots, one worker each (one task at a time): a killed worker's slot starts another
    // once the dead one's lease has lapsed, so its first claim takes the task over.
    const slot = async () => {
      while (!(await allDone())) {
        expect(Date.now()).toBeLessThan(deadline);
        const worker = startWorker();
        await worker.ready.catch(() => undefined);
        const ended = await Promise.race([worker.exited, waitDone()]);
        if (ended === 'done') {
          worker.child.kill('SIGTERM');
          expect((await worker.exited).code).toBe(0);
          return;
        }
        expect(ended.signal).toBe('SIGKILL');
        kills++;
        await sleep(1100);
      }
    };
    await Promise.all([slot(), slot(), slot()]);
    expect(kills).toBe(KILL_POINTS.length);

    const log = (await readFile(join(dir, 'steps.log'), 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { taskId: string; step: string; token: string });
    let reexecuted = 0;
    let unrecordedAttempts = 0;
    for (const [taskId, point] of tasks) {
      const record = await statusOf(taskId);
      const journal = (await store.steps({ authKey: AUTH, taskId, now: Date.now() })).steps!;
      expect(journal.map((s) => [s.name, s.status])).toEqual(STEPS.map((s) => [s, 'completed']));
      expect((record?.result as { content: Array<{ text: string }> }).content[0]!.text).toBe(journal.map((s) => s.value).join(','));
      for (const row of journal) {
        const lines = log.filter((l) => l.taskId === taskId && l.step === row.name);
        const recordedAt = lines.findIndex((l) => l.token === row.value);
        expect(recordedAt, `${point}: the recorded execution of ${row.name} is in the log`).toBeGreaterThanOrEqual(0);
        // After its record, a step never runs again; before it, a run killed inside it may have.
        reexecuted += lines.length - recordedAt - 1;
        unrecordedAttempts += recordedAt;
      }
    }
    expect(reexecuted).toBe(0);
    // Each kill after a side effect and before its record: that step ran twice, recorded once.
    expect(unrecordedAttempts).toBe(STEPS.length);

    // tasks show lists the steps, by name, in text and JSON.
    const [someTask] = tasks.keys();
    const shown = await runCli(['tasks', 'show', someTask!, '--store', url, '--json']);
    expect(shown.code).toBe(0);
    const detail = JSON.parse(shown.stdout) as {
      steps: Array<{ position: number; name: string; kind: string; status: string; attempts: number; valueBytes: number }>;
    };
    expect(detail.steps.map((s) => [s.position, s.name, s.kind, s.status, s.attempts])).toEqual(STEPS.map((s, i) => [i, s, 'do', 'completed', 1]));
    expect(detail.steps.every((s) => s.valueBytes === 38)).toBe(true);
    const text = await runCli(['tasks', 'show', someTask!, '--store', url]);
    expect(text.stdout).toMatch(/\nsteps\n.*POS +NAME +KIND +STATUS/);
    expect(text.stdout).toMatch(/\b1 +charge +do +completed +1\b/);
  }, 180_000);

  it('a sleep outlives the worker that began it: another worker resumes it after its wake time', async () => {
    const first = startWorker();
    await first.ready;
    const taskId = await admit('nap_between', { napMs: 2500 });
    const asleep = await until(async () => {
      const r = await statusOf(taskId);
      return r?.statusMessage?.startsWith('sleeping until') === true && r.leaseOwner === null ? r : undefined;
    });
    expect(asleep.status).toBe('working');
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startWorker();
    await second.ready;
    const done = await until(async () => {
      const r = await statusOf(taskId);
      return r?.status === 'completed' ? r : undefined;
    }, 30_000);
    const rested = (done.result as { structuredContent: { before: number; after: number; by: number } }).structuredContent;
    expect(rested.after - rested.before).toBeGreaterThanOrEqual(2500);
    expect(rested.by).toBe(second.child.pid);
    const journal = (await store.steps({ authKey: AUTH, taskId, now: Date.now() })).steps!;
    expect(journal.map((s) => `${s.name} ${s.kind} ${s.status}`)).toEqual(['before do completed', 'nap sleep woke', 'after do completed']);
    const shown = JSON.parse((await runCli(['tasks', 'show', taskId, '--store', url, '--json'])).stdout) as {
      steps: Array<{ name: string; wakeAt: string | null }>;
    };
    expect(shown.steps.map((s) => s.name)).toEqual(['before', 'nap', 'after']);
    expect(Date.parse(shown.steps[1]!.wakeAt!)).toBe(journal[1]!.wakeAt);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 90_000);
});
