import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// Two applications on one PostgreSQL schema, each with a tool named `build_report` (other
// arguments, another result), each served by `serve --no-workers` and run by `worker`: every
// client gets its own application's result, whichever worker looks at the outbox first.

const ZOD = `import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};`;

const BILLING_TOOLS = `${ZOD}
export default [{
  name: 'build_report',
  description: 'the month of invoices',
  inputSchema: z.object({ month: z.string() }),
  execution: { taskSupport: 'required' },
  handler: async ({ month }) => ({ content: [{ type: 'text', text: 'invoices of ' + month }], structuredContent: { app: 'billing', month } }),
}];
`;

const SALES_TOOLS = `${ZOD}
export default [{
  name: 'build_report',
  description: 'the region of orders',
  inputSchema: z.object({ region: z.string() }),
  execution: { taskSupport: 'required' },
  handler: async ({ region }) => ({ content: [{ type: 'text', text: 'orders of ' + region }], structuredContent: { app: 'sales', region } }),
}];
`;

/** Starts `tasklatch worker …` and waits for its line saying which app it runs. */
async function startWorker(args: string[]): Promise<WorkerProcess> {
  const worker = spawnWorker(['--lease-ms', '5000', ...args]);
  await worker.ready;
  return worker;
}

describe('two applications with a tool of the same name on one PostgreSQL schema', () => {
  let dir: string;
  let store: string;
  const servers: ServeProcess[] = [];
  const workers: WorkerProcess[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-apps-'));
    store = await freshPostgresUrl('cli_two_apps');
    // Billing's tools ship in a package: its name is the app. Sales names its app on the command line.
    await mkdir(join(dir, 'billing'));
    await writeFile(join(dir, 'billing', 'package.json'), JSON.stringify({ name: 'billing-reports', type: 'module' }));
    await writeFile(join(dir, 'billing', 'tools.mjs'), BILLING_TOOLS);
    await mkdir(join(dir, 'sales'));
    await writeFile(join(dir, 'sales', 'tools.mjs'), SALES_TOOLS);
    await writeFile(join(dir, 'tokens.json'), JSON.stringify({ t: { tenant: 'acme', subject: 'alice' } }));
  });

  afterAll(async () => {
    for (const client of clients) await client.close();
    for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
    await Promise.all(servers.map((s) => s.stop()));
  });

  const connect = async (url: string) => {
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer t' } } }));
    clients.push(client);
    return client;
  };

  it("gives each application's client its own application's result", async () => {
    const common = ['--no-workers', '--store', store, '--auth-tokens', join(dir, 'tokens.json')];
    const billingServe = await spawnServe([...common, '--tools', join(dir, 'billing', 'tools.mjs')]);
    servers.push(billingServe);
    const salesServe = await spawnServe([...common, '--tools', join(dir, 'sales', 'tools.mjs'), '--app', 'sales']);
    servers.push(salesServe);
    const billing = await connect(billingServe.url);
    const sales = await connect(salesServe.url);

    // Every task is due before any worker looks: each worker's first claim sees all of them.
    const call = (client: Client, args: Record<string, unknown>) =>
      client.request({ method: 'tools/call', params: { name: 'build_report', arguments: args, task: {} } }, CreateTaskResultSchema);
    const billed = await Promise.all(['2026-05', '2026-06', '2026-07'].map((month) => call(billing, { month })));
    const sold = await Promise.all(['north', 'south', 'east'].map((region) => call(sales, { region })));

    const salesWorker = await startWorker(['--store', store, '--tools', join(dir, 'sales', 'tools.mjs'), '--app', 'sales']);
    workers.push(salesWorker);
    const billingWorker = await startWorker(['--store', store, '--tools', join(dir, 'billing', 'tools.mjs')]);
    workers.push(billingWorker);
    expect(salesWorker.stdout()).toMatch(/running for app sales$/m);
    expect(billingWorker.stdout()).toMatch(/running for app billing-reports$/m);

    for (const [i, created] of billed.entries()) {
      const result = await billing.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      expect(result.structuredContent).toEqual({ app: 'billing', month: ['2026-05', '2026-06', '2026-07'][i] });
    }
    for (const [i, created] of sold.entries()) {
      const result = await sales.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      expect(result.structuredContent).toEqual({ app: 'sales', region: ['north', 'south', 'east'][i] });
    }

    // The operator sees which app each task belongs to, and one app's tasks alone.
    const listed = await runCli(['tasks', 'ls', '--store', store, '--json', '--app', 'sales']);
    expect(listed.code).toBe(0);
    const tasks = (JSON.parse(listed.stdout) as { tasks: Array<{ taskId: string; app: string; status: string }> }).tasks;
    expect(tasks.map((t) => t.taskId).sort()).toEqual(sold.map((c) => c.task.taskId).sort());
    expect(tasks.every((t) => t.app === 'sales' && t.status === 'completed')).toBe(true);
    const shown = await runCli(['tasks', 'show', billed[0]!.task.taskId, '--store', store, '--json']);
    expect((JSON.parse(shown.stdout) as { task: { app: string } }).task.app).toBe('billing-reports');
  });
});

describe('--app on the command line', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-app-flag-'));
    await writeFile(join(dir, 'reports.mjs'), SALES_TOOLS);
  });

  const bad: Array<[string, RegExp]> = [
    ['', /--app must not be empty/],
    ['x'.repeat(101), /--app must be at most 100 characters/],
    ['two\nlines', /--app "two\\nlines" holds a character that does not print/],
    [' padded', /--app " padded" must not start or end with a space/],
  ];

  for (const command of ['serve', 'worker'] as const) {
    it.each(bad)(`${command} --app %j: exit 2, one line, nothing started`, async (app, problem) => {
      const db = join(dir, `${command}-${bad.findIndex(([a]) => a === app)}.db`);
      const run = await runCli([command, '--store', `sqlite:${db}`, '--app', app, ...(command === 'serve' ? ['--http', '127.0.0.1:0'] : [])]);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(new RegExp(`^tasklatch ${command}: `));
      expect(run.stderr).toMatch(problem);
      expect(run.stdout).not.toMatch(/listening|running/);
      expect(existsSync(db)).toBe(false);
    });
  }

  it('defaults to the module file name without a package.json above it, and to tasklatch-demo for the demo tools', async () => {
    // The temporary directory has no package.json above it.
    const derived = await startWorker(['--store', `sqlite:${join(dir, 'derived.db')}`, '--tools', join(dir, 'reports.mjs')]);
    const demo = await startWorker(['--store', `sqlite:${join(dir, 'demo.db')}`, '--exports', join(dir, 'exports')]);
    try {
      expect(derived.stdout()).toMatch(/running for app reports$/m);
      expect(demo.stdout()).toMatch(/running for app tasklatch-demo$/m);
    } finally {
      derived.child.kill('SIGTERM');
      demo.child.kill('SIGTERM');
      expect(await derived.exited).toBe(0);
      expect(await demo.exited).toBe(0);
    }
  });
});
