import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { isTerminal, type TaskStatus } from '../../src/core/types.js';
import { openStore } from '../../src/store/open-store.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../support/embedded-postgres.js';
import { freePort } from '../support/embedded-postgres.js';
import { ChaosClients } from './chaos-clients.js';
import { Slot } from './fleet.js';
import { checkSteps } from './chaos-steps.js';

export interface ChaosConfig {
  kind: 'postgres' | 'sqlite';
  tasks: number;
  /** `serve --http` processes. On PostgreSQL they only admit (--no-workers); on SQLite they also run tasks. */
  servers: number;
  /** `tasklatch worker` processes (PostgreSQL). */
  workers: number;
  /** Submissions in flight at once. */
  concurrency: number;
  cancelRatio: number;
  /** Share of tasks submitted a second time with the same idempotency key, to another server. */
  duplicateRatio: number;
  /** SIGKILL a random killable process every [min, max] ms while the run is hot. */
  killEveryMs: [number, number];
  /** TASKLATCH_CRASH_BEFORE_COMPLETE for every process that runs tasks. */
  crashBeforeComplete: number;
  restartPostgres: boolean;
  leaseMs: number;
  timeoutMs: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  figures: Record<string, number | string>;
  violations: string[];
  /** How processes died that neither the run nor the crash switch killed. */
  otherExits: string[];
}

interface Submitted {
  index: number;
  /** `export_ledger`, or `ledger_steps` (every fourth task): durable steps logging each execution. */
  tool: 'export_ledger' | 'ledger_steps';
  tenant: number;
  key: string;
  taskId: string;
  rows: number;
  cancelAt: number | null;
  status?: TaskStatus;
  result?: { structuredContent?: { file?: string; sha256?: string; rows?: number } };
}

const TENANTS = 4;
const token = (t: number) => `chaos-token-${t}`;

/**
 * The chaos run: servers and workers on one store, tasks submitted through the official SDK
 * client, processes SIGKILLed at random (and by the crash switch right before completion
 * writes), PostgreSQL restarted once; then every invariant checked through the protocol, the
 * audit trail and the exports directory.
 */
export async function runChaos(config: ChaosConfig): Promise<ChaosReport> {
  const log = config.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + config.timeoutMs;
  const dir = await mkdtemp(join(tmpdir(), `tasklatch-chaos-${config.kind}-`));
  const exportsDir = join(dir, 'exports');
  const tokensFile = join(dir, 'tokens.json');
  await writeFile(
    tokensFile,
    JSON.stringify(Object.fromEntries(Array.from({ length: TENANTS }, (_, t) => [token(t), { tenant: `tenant${t}`, subject: 'chaos' }]))),
  );
  let pg: EmbeddedServer | null = null;
  const storeUrl = config.kind === 'postgres' ? ((pg = await startEmbeddedPostgres()), pg.url) : `sqlite:${join(dir, 'tasks.db')}`;
  const violations: string[] = [];
  const slots: Slot[] = [];
  const restartLater = (slot: Slot) => {
    setTimeout(() => void slot.restart(), 150);
  };
  const stepsLog = join(dir, 'steps.log');
  await writeFile(stepsLog, '');
  const tools = fileURLToPath(new URL('./chaos-tools.mjs', import.meta.url));
  const common = ['--store', storeUrl, '--tools', tools, '--lease-ms', String(config.leaseMs), '--poll-interval', '200'];
  const toolsEnv = { CHAOS_EXPORTS: exportsDir, CHAOS_STEPS_LOG: stepsLog };
  const crashEnv = { ...toolsEnv, TASKLATCH_CRASH_BEFORE_COMPLETE: String(config.crashBeforeComplete) };
  const ports = await Promise.all(Array.from({ length: config.servers }, () => freePort()));
  for (const [i, port] of ports.entries()) {
    const workersHere = config.kind === 'sqlite';
    slots.push(
      new Slot(
        `serve${i}`,
        ['serve', '--http', `127.0.0.1:${port}`, '--auth-tokens', tokensFile, '--max-active', '100000', ...(workersHere ? [] : ['--no-workers']), ...common],
        workersHere ? crashEnv : toolsEnv,
        /listening on/,
        restartLater,
      ),
    );
  }
  for (let i = 0; i < config.workers; i++) {
    slots.push(new Slot(`worker${i}`, ['worker', '--concurrency', '4', ...common], crashEnv, /worker .* running/, restartLater));
  }
  try {
    return await drive(config, { slots, ports, storeUrl, exportsDir, stepsLog, pg, started, deadline, violations, log });
  } finally {
    // Whatever happened, leave no process behind.
    await Promise.all(slots.map((s) => s.stop(5_000)));
    await pg?.stop();
  }
}

interface Fleet {
  slots: Slot[];
  ports: number[];
  storeUrl: string;
  exportsDir: string;
  stepsLog: string;
  pg: EmbeddedServer | null;
  started: number;
  deadline: number;
  violations: string[];
  log: (line: string) => void;
}

async function drive(config: ChaosConfig, fleet: Fleet): Promise<ChaosReport> {
  const { slots, ports, storeUrl, exportsDir, stepsLog, pg, started, deadline, violations, log } = fleet;
  let hot = true;
  // Servers first and one at a time: the first migrates the fresh store.
  for (const slot of slots) await slot.start();
  const killable = slots.filter((s) => config.kind === 'sqlite' || s.name.startsWith('worker'));
  const clients = new ChaosClients(ports.map((p) => `http://127.0.0.1:${p}/mcp`));

  // Chaos: random SIGKILLs while hot; one PostgreSQL restart when 40% are accepted.
  let pgRestarts = 0;
  const chaos = (async () => {
    while (hot) {
      const [min, max] = config.killEveryMs;
      await sleep(min + Math.random() * (max - min));
      if (!hot) break;
      const alive = killable.filter((s) => s.alive);
      // On SQLite keep one server up: the clients need someone to talk to.
      if (config.kind === 'sqlite' && alive.length <= 1) continue;
      const victim = alive[Math.floor(Math.random() * alive.length)];
      if (victim === undefined) continue;
      await victim.kill();
      await sleep(100 + Math.random() * 300);
      await victim.restart();
    }
  })();

  const submitted: Submitted[] = [];
  let accepted = 0;
  let duplicates = 0;
  const cancels = { asked: 0, latched: 0, tooLate: 0 };
  let next = 0;
  const submitOne = async (index: number): Promise<void> => {
    const tenant = index % TENANTS;
    const key = `chaos-${index}`;
    const rows = 10 + (index % 40);
    const tool = index % 4 === 3 ? 'ledger_steps' : 'export_ledger';
    const delayMs = 50 + Math.floor(Math.random() * 350);
    const args = tool === 'ledger_steps' ? { steps: 4, delayMs } : { month: `2026-${String((index % 12) + 1).padStart(2, '0')}`, rows, delayMs };
    const params = { name: tool, arguments: args, task: { ttl: 30 * 60_000 }, _meta: { 'io.tasklatch/idempotency-key': key } };
    const created = await clients.run(token(tenant), (c) => c.request({ method: 'tools/call', params }, CreateTaskResultSchema), deadline);
    const entry: Submitted = { index, tool, tenant, key, taskId: created.task.taskId, rows, cancelAt: null };
    submitted.push(entry);
    accepted++;
    if (pg !== null && pgRestarts === 0 && config.restartPostgres && accepted >= config.tasks * 0.4) {
      pgRestarts++;
      log('restarting PostgreSQL');
      await pg.restart();
    }
    if (Math.random() < config.duplicateRatio) {
      duplicates++;
      const again = await clients.run(token(tenant), (c) => c.request({ method: 'tools/call', params }, CreateTaskResultSchema), deadline);
      if (again.task.taskId !== entry.taskId) violations.push(`key ${key}: retry returned ${again.task.taskId}, first ${entry.taskId}`);
    }
    if (Math.random() < config.cancelRatio) {
      await sleep(Math.random() * 500);
      cancels.asked++;
      try {
        const out = await clients.run(token(tenant), (c) => c.experimental.tasks.cancelTask(entry.taskId), deadline);
        if (out.status === 'cancelled') {
          cancels.latched++;
          entry.cancelAt = Date.now();
        }
      } catch (error) {
        if ((error as { code?: unknown }).code === -32602) cancels.tooLate++;
        else throw error;
      }
    }
  };
  await Promise.all(
    Array.from({ length: config.concurrency }, async () => {
      while (next < config.tasks) await submitOne(next++);
    }),
  );
  log(`${accepted} tasks accepted in ${Date.now() - started} ms`);

  // Keep killing until most tasks finished, then let the fleet converge.
  const terminal = async (entry: Submitted) => {
    const task = await clients.run(token(entry.tenant), (c) => c.experimental.tasks.getTask(entry.taskId), deadline);
    entry.status = task.status;
    return isTerminal(task.status);
  };
  for (;;) {
    const open = [];
    for (const entry of submitted) if (entry.status === undefined || !isTerminal(entry.status)) open.push(entry);
    for (const entry of open) await terminal(entry).catch(() => false);
    const remaining = submitted.filter((e) => e.status === undefined || !isTerminal(e.status)).length;
    if (hot && remaining <= config.tasks * 0.1) {
      hot = false;
      await chaos;
      for (const slot of killable) if (!slot.alive) await slot.restart();
      log('chaos stopped; converging');
    }
    if (remaining === 0) break;
    if (Date.now() > deadline) {
      violations.push(`${remaining} accepted tasks not terminal by the deadline`);
      break;
    }
    await sleep(300);
  }
  hot = false;
  await chaos;

  // Results through the protocol.
  const failedReasons = new Set<string>();
  const abandoned = new Set<string>();
  for (const entry of submitted.filter((e) => e.status === 'failed')) {
    const result = await clients.run(token(entry.tenant), (c) => c.experimental.tasks.getTaskResult(entry.taskId, CallToolResultSchema), deadline);
    const first = result.content[0];
    const reason = first?.type === 'text' ? first.text : JSON.stringify(result.content);
    failedReasons.add(reason);
    if (/abandoned after/.test(reason)) abandoned.add(entry.taskId);
  }
  for (const entry of submitted.filter((e) => e.status === 'completed')) {
    entry.result = await clients.run(token(entry.tenant), (c) => c.experimental.tasks.getTaskResult(entry.taskId, CallToolResultSchema), deadline);
  }
  const exitCodes = await Promise.all(slots.map((s) => s.stop()));
  await clients.close();
  exitCodes.forEach((code, i) => code !== 0 && violations.push(`${slots[i]!.name} exited ${code} on SIGTERM`));

  // The stored facts: audit trail, tasks per key.
  const store = await openStore(storeUrl);
  let auditChecked = 0;
  let stepFigures: Record<string, number> = {};
  try {
    for (const entry of submitted) {
      const trail = await store.auditTrail({ taskId: entry.taskId });
      const terminalWrites = trail.filter(
        (e) => (e.decision === 'APPLY_TRANSITION' || e.decision === 'CANCEL_TASK') && typeof e.status === 'string' && isTerminal(e.status as TaskStatus),
      );
      if (terminalWrites.length !== 1) violations.push(`task ${entry.taskId}: ${terminalWrites.length} applied terminal writes`);
      auditChecked++;
    }
    const tenantsSeen = new Set<string>();
    for (let t = 0; t < TENANTS; t++) {
      let after = null;
      for (;;) {
        const page = await store.list({ authKey: `tenant${t}/chaos`, now: Date.now(), after, limit: 500 });
        for (const r of page.records) {
          if (tenantsSeen.has(r.taskId)) violations.push(`task ${r.taskId} listed twice`);
          tenantsSeen.add(r.taskId);
        }
        const last = page.records.at(-1);
        if (!page.hasMore || last === undefined) break;
        after = { createdAt: last.createdAt, taskId: last.taskId };
      }
    }
    if (tenantsSeen.size !== submitted.length) violations.push(`${tenantsSeen.size} tasks stored for ${submitted.length} idempotency keys`);
    const stepTasks = submitted.filter((e) => e.tool === 'ledger_steps').map((e) => ({ ...e, authKey: `tenant${e.tenant}/chaos` }));
    stepFigures = await checkSteps(store, stepTasks, stepsLog, violations);
  } finally {
    await store.close();
  }

  // The exports directory: one file per completed task, matching its result; none made after a cancel.
  let files = 0;
  let partials = 0;
  let cancelledAfterEffect = 0;
  let abandonedAfterEffect = 0;
  const exported = submitted.filter((e) => e.tool === 'export_ledger');
  for (const entry of exported) {
    const file = join(exportsDir, `tenant${entry.tenant}`, `task_${entry.taskId}.csv`);
    const exists = existsSync(file);
    if (entry.status === 'completed') {
      const content = entry.result?.structuredContent;
      if (!exists) violations.push(`completed task ${entry.taskId} has no export file`);
      else {
        const bytes = await readFile(file);
        if (createHash('sha256').update(bytes).digest('hex') !== content?.sha256) violations.push(`export of ${entry.taskId} does not match its result`);
        if (content?.rows !== entry.rows) violations.push(`export of ${entry.taskId} has ${String(content?.rows)} rows, asked ${entry.rows}`);
      }
    } else if (exists && entry.status === 'cancelled' && entry.cancelAt !== null) {
      const written = (await stat(file)).mtimeMs;
      // Renamed before the cancellation was answered: the effect came first (cooperative cancel).
      if (written > entry.cancelAt + 50)
        violations.push(`cancelled task ${entry.taskId} got its export ${Math.round(written - entry.cancelAt)} ms after the cancel`);
      else cancelledAfterEffect++;
    } else if (exists && abandoned.has(entry.taskId)) {
      // Every attempt died after its side effect and before its completion write, until the
      // attempts ran out: the export is real, the task is failed. Counted, not hidden.
      abandonedAfterEffect++;
    } else if (exists) {
      violations.push(`${entry.status ?? 'unknown'} task ${entry.taskId} has an export file`);
    }
  }
  for (let t = 0; t < TENANTS; t++) {
    const tenantDir = join(exportsDir, `tenant${t}`);
    if (!existsSync(tenantDir)) continue;
    for (const name of await readdir(tenantDir)) {
      if (name.endsWith('.partial')) partials++;
      else files++;
    }
  }
  const byStatus = (s: TaskStatus) => submitted.filter((e) => e.status === s).length;
  const exportsCompleted = exported.filter((e) => e.status === 'completed').length;
  if (files !== exportsCompleted + cancelledAfterEffect + abandonedAfterEffect) violations.push(`${files} export files for ${exportsCompleted} completed exports`);

  const figures = {
    store: config.kind,
    tasks: config.tasks,
    accepted,
    completed: byStatus('completed'),
    failed: byStatus('failed'),
    cancelled: byStatus('cancelled'),
    duplicateSubmissions: duplicates,
    cancelsAsked: cancels.asked,
    cancelsLatched: cancels.latched,
    cancelsTooLate: cancels.tooLate,
    cancelledAfterSideEffect: cancelledAfterEffect,
    abandonedAfterSideEffect: abandonedAfterEffect,
    kills: slots.reduce((n, s) => n + s.kills, 0),
    crashesBeforeCompletion: slots.reduce((n, s) => n + s.selfCrashes, 0),
    restarts: slots.reduce((n, s) => n + s.restarts, 0),
    postgresRestarts: pgRestarts,
    clientRetries: clients.retries,
    exportFiles: files,
    leftoverPartialFiles: partials,
    ...stepFigures,
    auditTrailsChecked: auditChecked,
    elapsedMs: Date.now() - started,
    failedReasons: [...failedReasons].join(' | '),
    otherExits: slots.flatMap((s) => s.otherExits).length,
    run: randomBytes(2).toString('hex'),
  };
  return { figures, violations, otherExits: slots.flatMap((s) => s.otherExits) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
