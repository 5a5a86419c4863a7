import type { ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadToolsModule } from '../../src/cli/tools-module.js';
import { createTask } from '../../src/runtime/requests/create-task.js';
import { openGuard } from '../../src/service/guard.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { ToolRegistry } from '../../src/tools/tool-registry.js';
import { ROOT } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { ALL_CAPS } from '../support/records.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';
import { until } from '../support/until.js';

// A rolling deploy of `tasklatch worker --tools` processes on one PostgreSQL schema: two modules
// that differ only in their handler's text (so in their default version), workers of both
// running side by side, then the old ones gone (stopped cleanly, or killed and silent).

const APP = 'version-test';
const AUTH = 'acme/alice';

const moduleOf = (label: string) => `
import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};
export default [
  {
    name: 'deploy_demo',
    description: 'says which code ran it',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    async handler() {
      return { content: [{ type: 'text', text: ${JSON.stringify(label)} }], structuredContent: { ranOn: ${JSON.stringify(label)}, pid: process.pid } };
    },
  },
];
`;

/**
 * How long an announcement counts after its last renewal, for the workers and the test's own
 * reads alike. Versions keep to their own tasks only while their workers are heard from: a
 * renewal that a loaded machine delays past this would hand an old version's task to the newest
 * code in the middle of the deploy, so it is long enough that no stall of a busy machine reaches
 * it, and short enough that the killed worker's silence is waited out soon.
 */
const SILENCE_MS = 5000;

let dir: string;
let url: string;
let store: PostgresStore;
const children = new Set<ChildProcess>();

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-versions-'));
  await writeFile(join(dir, 'v1.mjs'), moduleOf('one'));
  await writeFile(join(dir, 'v2.mjs'), moduleOf('two'));
  url = await freshPostgresUrl('version_processes');
  store = await PostgresStore.open(url);
});

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await store.close();
});

function startWorker(module: string): WorkerProcess {
  const worker = spawnWorker(['--store', url, '--tools', join(dir, module), '--app', APP, '--lease-ms', '2000', '--version-silence-ms', String(SILENCE_MS)]);
  children.add(worker.child);
  void worker.exited.then(() => children.delete(worker.child));
  return worker;
}

/** The version a process loading `module` runs: computed here from the same file, as every process does. */
async function versionOf(module: string): Promise<string> {
  return new ToolRegistry(await loadToolsModule(join(dir, module))).version('deploy_demo')!;
}

describe('a rolling deploy of worker processes (PostgreSQL)', () => {
  it('old tasks finish on the old workers while they live; once they stop or fall silent, the newest code takes them', async () => {
    const [v1, v2] = [await versionOf('v1.mjs'), await versionOf('v2.mjs')];
    expect(v1).not.toBe(v2);
    // Admitting as `serve --no-workers` would with each module loaded.
    const admitter = (version: string) => openGuard({ store, capabilities: ALL_CAPS, app: APP, toolVersion: () => version });
    const admit = async (version: string) =>
      (
        await createTask(admitter(version), {
          auth: AUTH,
          tool: { name: 'deploy_demo', execution: { taskSupport: 'required' } },
          request: { method: 'tools/call', params: { name: 'deploy_demo', arguments: {}, task: { ttl: 600_000 } } },
        })
      ).record!.taskId;
    const ranOn = (taskId: string) =>
      until(async () => {
        const record = (await store.get({ authKey: AUTH, taskId, now: Date.now() })).record!;
        return record.status === 'completed' ? (record.result as { structuredContent: { ranOn: string } }).structuredContent.ranOn : undefined;
      });
    const live = async () => (await store.liveVersions({ app: APP, now: Date.now(), silenceMs: SILENCE_MS })).map((a) => a.version).sort();

    const old = startWorker('v1.mjs');
    const next = startWorker('v2.mjs');
    await until(async () => ((await live()).length === 2 ? true : undefined));
    expect(await live()).toEqual([v1, v2].sort());
    // A worker reads the live versions right after each renewal of its own, and claims with what
    // it read: once each has renewed twice after both were announced, each claim knows of both.
    const announced = async () => store.liveVersions({ app: APP, now: Date.now(), silenceMs: SILENCE_MS });
    const renewedAfter = async (at: number) => until(async () => ((await announced()).every((a) => a.lastSeen > at) ? true : undefined));
    const bothSeen = Math.max(...(await announced()).map((a) => a.firstSeen));
    await renewedAfter(bothSeen);
    await renewedAfter(Math.max(...(await announced()).map((a) => a.lastSeen)));

    // During the deploy each version's tasks run on their own code.
    const during = [await admit(v1), await admit(v2), await admit(v1), await admit(v2)];
    expect(await Promise.all(during.map(ranOn))).toEqual(['one', 'two', 'one', 'two']);

    // A clean stop withdraws at once: the old version's tasks go to the newest.
    old.child.kill('SIGTERM');
    expect(await old.exited).toBe(0);
    expect(await live()).toEqual([v2]);
    expect(await ranOn(await admit(v1))).toBe('two');

    // A killed worker of the old version holds its version's tasks only until it falls silent.
    const killed = startWorker('v1.mjs');
    await until(async () => ((await live()).length === 2 ? true : undefined));
    killed.child.kill('SIGKILL');
    await killed.exited;
    const orphan = await admit(v1);
    expect(await ranOn(orphan)).toBe('two');
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  }, 90_000);
});
