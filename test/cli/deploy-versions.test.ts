import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';
import { rpc } from '../support/stateless.js';
import { until } from '../support/until.js';

// A deploy across processes on one PostgreSQL: a user's module in three versions of one tool
// (a step, a durable sleep, a step; version 2 adds a step `a2` after `a` with no gate; version 3
// adds it behind `ctx.step.patched('add-a2')`), one `serve --no-workers` of version 1 and workers
// of each version started and stopped as a rolling deploy would. Every step's side effect is
// appended to a log with the version that ran it, so the test counts what ran where.

const APP = 'deploy-demo';

function moduleOf(version: 1 | 2 | 3): string {
  const a2 =
    version === 1
      ? ''
      : version === 2
        ? `await ctx.step.do('a2', () => effect(ctx, 'a2'));`
        : `if (await ctx.step.patched('add-a2')) await ctx.step.do('a2', () => effect(ctx, 'a2'));`;
  return `
import { appendFileSync } from 'node:fs';
import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};

let reachedB = 0;

/** With DIE_AT_B=N, this process dies (SIGKILL) once N runs have reached step b: their journals end at the sleep. */
async function maybeDie(step) {
  const dieAt = Number(process.env.DIE_AT_B ?? 0);
  if (step !== 'b' || dieAt === 0) return;
  if (++reachedB === dieAt) process.kill(process.pid, 'SIGKILL');
  await new Promise(() => {});
}

async function effect(ctx, step) {
  await maybeDie(step);
  appendFileSync(process.env.DEPLOY_LOG, JSON.stringify({ taskId: ctx.taskId, step, version: ${version} }) + '\\n');
  return step;
}

export default [
  {
    name: 'deploy_demo',
    description: 'a step, a durable sleep, a step',
    inputSchema: z.object({ napMs: z.number().int().min(0) }),
    execution: { taskSupport: 'required' },
    async handler({ napMs }, ctx) {
      await ctx.step.do('a', () => effect(ctx, 'a'));
      ${a2}
      await ctx.step.sleep('nap', napMs);
      await ctx.step.do('b', () => effect(ctx, 'b'));
      return { content: [{ type: 'text', text: 'deployed' }] };
    },
  },
];
`;
}

let dir: string;
let url: string;
let serve: ServeProcess;
const workers: WorkerProcess[] = [];

/**
 * Every worker counts another as gone after 5 s of silence, and a dead worker's lease lapses after
 * 1 s. A version keeps to its own tasks only while its workers are heard from: a renewal that a
 * loaded machine delays past the silence would hand a task of version 1 to version 2 in the middle
 * of the rolling deploy, so the silence is long enough that no stall of a busy machine reaches it.
 */
function startWorker(version: 1 | 2 | 3, env: NodeJS.ProcessEnv = {}): WorkerProcess {
  const args = [
    '--store',
    url,
    '--tools',
    join(dir, `v${version}.mjs`),
    '--app',
    APP,
    '--lease-ms',
    '1000',
    '--version-silence-ms',
    '5000',
    '--concurrency',
    '8',
  ];
  const worker = spawnWorker(args, { env: { DEPLOY_LOG: join(dir, 'deploy.log'), ...env } });
  workers.push(worker);
  return worker;
}

async function stop(worker: WorkerProcess): Promise<void> {
  worker.child.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
}

async function create(napMs: number): Promise<string> {
  const created = await rpc(serve.url, 'tools/call', { name: 'deploy_demo', arguments: { napMs } });
  return (created.result as { taskId: string }).taskId;
}

const get = async (taskId: string) => (await rpc(serve.url, 'tasks/get', { taskId })).result as { status: string; statusMessage?: string };

async function log(): Promise<Array<{ taskId: string; step: string; version: number }>> {
  return (await readFile(join(dir, 'deploy.log'), 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { taskId: string; step: string; version: number });
}

/** Waits for `promise`, failing with `why()` after `ms` instead of at the test's timeout. */
async function within<T>(promise: Promise<T>, ms: number, why: () => Promise<string>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => void why().then((text) => reject(new Error(text)), reject), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until every task satisfies `ok`, reading each at most every 100 ms. */
async function all(taskIds: string[], ok: (task: { status: string; statusMessage?: string }) => boolean, ms = 60_000): Promise<void> {
  await until(async () => {
    const tasks = await Promise.all(taskIds.map(get));
    if (tasks.every(ok)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return undefined;
  }, ms);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-deploy-'));
  for (const version of [1, 2, 3] as const) await writeFile(join(dir, `v${version}.mjs`), moduleOf(version));
  await writeFile(join(dir, 'deploy.log'), '');
  url = await freshPostgresUrl('deploy_versions');
  serve = await spawnServe(['--no-workers', '--store', url, '--tools', join(dir, 'v1.mjs'), '--app', APP]);
});

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await serve?.stop();
});

describe('a deploy that changes a handler, across processes (PostgreSQL)', () => {
  it('old tasks finish on the old worker, park on incompatible code, and complete on the patched version', async () => {
    // A rolling deploy: version 2 starts beside version 1 while version 1's tasks sleep.
    const v1 = startWorker(1);
    await v1.ready;
    const rolling = await Promise.all([0, 1, 2, 3].map(() => create(3000)));
    await all(rolling, (t) => t.statusMessage?.startsWith('sleeping until') === true);
    const v2 = startWorker(2);
    await v2.ready;
    await all(rolling, (t) => t.status === 'completed');
    for (const taskId of rolling) {
      expect((await log()).filter((l) => l.taskId === taskId).map((l) => `${l.step}@${l.version}`)).toEqual(['a@1', 'b@1']);
    }

    // Version 1 leaves, the hard way: a worker of version 1 takes four tasks past their sleep and
    // dies (SIGKILL) as the last of them reaches step b. Their journals end at the sleep; then only
    // version 2 is left, whose handler asks for a2 there.
    // The dying worker starts before the first one stops, and version 2 is stopped while the dying
    // worker takes the four tasks: it is the only worker then, so it takes all four whatever the
    // machine's load (a version 2 worker would take one of them should the dying worker's
    // announcement stall past its silence, and the dying worker would then never die).
    const dying = startWorker(1, { DIE_AT_B: '4' });
    await dying.ready;
    await stop(v1);
    await stop(v2);
    const stranded = await Promise.all([0, 1, 2, 3].map(() => create(0)));
    await within(dying.exited, 60_000, async () => `the dying worker did not die; steps run: ${JSON.stringify(await log())}`);
    const v2again = startWorker(2);
    await v2again.ready;
    await all(stranded, (t) => t.status === 'working' && /parked/.test(t.statusMessage ?? ''));
    for (const taskId of stranded) {
      const task = await get(taskId);
      expect(task.statusMessage).toMatch(/step "a2"/);
      expect(task.statusMessage).toMatch(/sleep "nap"/);
    }
    expect((await log()).filter((l) => stranded.includes(l.taskId) && l.step !== 'a')).toEqual([]);

    // Version 3 arrives: the stranded tasks skip the gated step, new tasks run it once.
    const v3 = startWorker(3);
    await v3.ready;
    const fresh = await Promise.all([0, 1].map(() => create(0)));
    await all([...stranded, ...fresh], (t) => t.status === 'completed');
    const lines = await log();
    for (const taskId of stranded) expect(lines.filter((l) => l.taskId === taskId).map((l) => `${l.step}@${l.version}`)).toEqual(['a@1', 'b@3']);
    for (const taskId of fresh) expect(lines.filter((l) => l.taskId === taskId).map((l) => l.step)).toEqual(['a', 'a2', 'b']);
    await stop(v2again);
    await stop(v3);
  }, 180_000);
});
