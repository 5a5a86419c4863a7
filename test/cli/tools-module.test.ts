import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, runCli } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { rpc, settle } from '../support/stateless.js';
import { until } from '../support/until.js';

const TOOLS = join(ROOT, 'examples/own-tools/tools.mjs');

describe('--tools PATH: bad modules', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-tools-'));
    const zod = `import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};`;
    const tool = (name: string) => `{ name: '${name}', description: 'd', inputSchema: z.object({}), handler: async () => ({ content: [] }) }`;
    await writeFile(join(dir, 'broken.mjs'), 'export default [;\n');
    await writeFile(join(dir, 'throws.mjs'), "throw new Error('boom at load');\n");
    await writeFile(join(dir, 'nothing.mjs'), 'export const other = 1;\n');
    await writeFile(join(dir, 'object.mjs'), 'export default { tools: true };\n');
    await writeFile(join(dir, 'empty.mjs'), 'export const tools = () => [];\n');
    await writeFile(join(dir, 'twice.mjs'), `${zod}\nexport default [${tool('same')}, ${tool('same')}];\n`);
    await writeFile(join(dir, 'no-handler.mjs'), `${zod}\nexport default [{ name: 'x', description: 'd', inputSchema: z.object({}) }];\n`);
    // Looks like a zod object (safeParse, shape) but is neither zod 4 nor zod 3.
    const fake = `{ safeParse: () => ({ success: true, data: {} }), shape: {} }`;
    await writeFile(
      join(dir, 'not-zod.mjs'),
      `export default [{ name: 'x', description: 'd', inputSchema: ${fake}, handler: async () => ({ content: [] }) }];\n`,
    );
    const dated = `{ name: 'when', description: 'd', inputSchema: z.object({ at: z.date() }), handler: async () => ({ content: [] }) }`;
    await writeFile(join(dir, 'no-json-schema.mjs'), `${zod}\nexport default [${dated}];\n`);
  });

  const cases: Array<[string, RegExp]> = [
    ['missing.mjs', /no such file/],
    ['broken.mjs', /does not load: .*Unexpected token/],
    ['throws.mjs', /does not load: boom at load/],
    ['nothing.mjs', /exports no tools/],
    ['object.mjs', /exports an object, not an array of tool definitions/],
    ['empty.mjs', /exports an empty list of tools/],
    ['twice.mjs', /defines tool "same" twice/],
    ['no-handler.mjs', /tool #1 \(x\): has no handler function/],
    ['not-zod.mjs', /tool #1 \(x\): has no zod object inputSchema/],
    ['no-json-schema.mjs', /tool #1 \(when\): its inputSchema has no JSON Schema: Date cannot be represented/],
  ];

  for (const command of ['serve', 'worker'] as const) {
    it.each(cases)(`${command} --tools %s: exit 2, the file and the problem named, nothing started`, async (file, problem) => {
      const db = join(dir, `${command}-${file}.db`);
      const run = await runCli([command, '--store', `sqlite:${db}`, '--tools', join(dir, file), ...(command === 'serve' ? ['--http', '127.0.0.1:0'] : [])]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`tasklatch ${command}: --tools ${join(dir, file)}: `);
      expect(run.stderr).toMatch(problem);
      expect(run.stdout).not.toMatch(/listening|running/);
      // Nothing started: the store was never opened.
      expect(existsSync(db)).toBe(false);
    });
  }
});

describe('--tools PATH: two servers and two workers on one PostgreSQL', () => {
  let store: string;
  const servers: ServeProcess[] = [];
  const workers: WorkerProcess[] = [];
  const clients: Client[] = [];

  interface WorkerProcess {
    child: ChildProcess;
    ready: Promise<void>;
    exited: Promise<number | null>;
    log(): string;
  }

  function startWorker(tools: string): WorkerProcess {
    const child = spawn(process.execPath, [BIN, 'worker', '--store', store, '--tools', tools, '--lease-ms', '5000'], {
      env: { ...process.env, TASKLATCH_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const ready = new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => /running/.test(d.toString()) && resolve()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const worker = { child, ready, exited, log: () => log };
    workers.push(worker);
    return worker;
  }

  beforeAll(async () => {
    store = await freshPostgresUrl('cli_tools_module');
    for (let i = 0; i < 2; i++) servers.push(await spawnServe(['--no-workers', '--store', store, '--tools', TOOLS]));
    for (const server of servers) {
      const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      clients.push(client);
    }
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
    await Promise.all(servers.map((s) => s.stop()));
  });

  const create = (client: Client, below: number) =>
    client.request({ method: 'tools/call', params: { name: 'count_primes', arguments: { below }, task: { ttl: 120_000 } } }, CreateTaskResultSchema);

  it('leaves a task of an unknown tool to a worker that knows it, then runs every task once', async () => {
    const demoWorker = startWorker('demo');
    await demoWorker.ready;
    const [one, two] = clients as [Client, Client];
    expect((await one.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport])).toEqual([
      ['count_primes', 'required'],
      ['is_prime', undefined],
      ['place_order', 'required'],
    ]);
    const early = await create(one, 1000);
    // A worker with only the demo tools is running, and says what it leaves: the task stays working
    // and unclaimed (given time to be wrongly claimed; on a slow machine that time only grows).
    await until(() => (/tasks of other apps and tools are left for workers that know them/.test(demoWorker.log()) ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await two.experimental.tasks.getTask(early.task.taskId)).status).toBe('working');

    const own = [startWorker(TOOLS), startWorker(TOOLS)];
    await Promise.all(own.map((w) => w.ready));
    const tasks = [early.task.taskId];
    for (let i = 0; i < 6; i++) tasks.push((await create(i % 2 === 0 ? one : two, 2000 + i)).task.taskId);
    await until(async () => {
      const statuses = await Promise.all(tasks.map(async (id) => (await two.experimental.tasks.getTask(id)).status));
      if (statuses.every((s) => s === 'completed')) return true;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return undefined;
    }, 60_000);
    const pids = new Set<number>();
    for (const id of tasks) {
      const result = await one.request({ method: 'tasks/result', params: { taskId: id } }, CallToolResultSchema);
      const content = result.structuredContent as { count: number; by: number };
      expect(content.count).toBeGreaterThan(100);
      pids.add(content.by);
    }
    // Only the workers with the module ran them; the demo worker never did.
    expect(pids.has(demoWorker.child.pid ?? -1)).toBe(false);
    for (const pid of pids) expect(own.map((w) => w.child.pid)).toContain(pid);

    // The 2026-07-28 generation on the same fleet: created through one server, read through the other.
    const created = await rpc(servers[1]!.url, 'tools/call', { name: 'count_primes', arguments: { below: 3000 } });
    const modern = (created.result as { taskId: string }).taskId;
    const done = await settle(servers[0]!.url, modern, {}, 30_000);
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { below: 3000, count: 430 } } });
  });
});
