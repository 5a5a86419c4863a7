import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { CHANGES_CHANNEL } from '../../src/store/postgres/listener.js';
import { admissionStatements } from '../../src/store/postgres/task-writes.js';
import type { BenchConfig } from '../lib/config.js';
import { TOOL, toolArgs, TTL_MS } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { fmt, median, summarize } from '../lib/stats.js';

const run = promisify(execFile);
const CLIENTS = 16;
/** A change notification of one admitted task, as the store sends it. */
const NOTIFY = `pg_notify('${CHANGES_CHANNEL}', current_schema() || ':' || gen_random_uuid()::text || ':' || '1')`;

/**
 * The physical ceiling of admission: pgbench (libpq, C, no Node) runs the statements tasklatch's
 * PostgreSQL store sends for one admission with an idempotency key and the active-task limit
 * (`admissionStatements`: the per-auth-key advisory lock and the one-statement insert of task,
 * outbox entry and audit line), in one transaction sent as one pipeline, as the store sends it
 * in one round trip, prepared once per connection (-M prepared) as the store's connections
 * prepare the insert (prepared.ts); then the change notification in a
 * transaction of its own that commits asynchronously (the store batches these across concurrent
 * writes; pgbench sends one per admission, the dearer case). Values that vary per admission are
 * SQL expressions: a fresh uuid for task and correlation ids, pgbench randoms for the auth key
 * and the idempotency key. Runs on a throwaway schema of its own.
 *
 * `inTransaction` is the diagnostic of the notification sent inside the admission transaction
 * instead (as the store did before): every notifying commit then holds PostgreSQL's notify lock
 * until its WAL flush.
 */
export function pgbenchScript(now: number, inTransaction = false): string {
  const request = { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(1), task: { ttl: TTL_MS } } };
  const statements = admissionStatements({
    taskId: 'PGB_TASK',
    authKey: 'PGB_AUTH',
    toolName: TOOL,
    request,
    requestDigest: randomBytes(32).toString('hex'),
    idempotencyKey: 'PGB_KEY',
    ttl: TTL_MS,
    pollInterval: 1000,
    correlationId: 'PGB_CORR',
    now,
    maxActive: 100,
  });
  if (statements === null) throw new Error('admission statements have no literal form');
  // Variables travel as untyped parameters (-M prepared): cast where text is wanted.
  const auth = `('pgb/' || CAST(:client_id AS text) || '/' || CAST(:r AS text))`;
  const lines = statements.map((statement) => {
    const text = statement
      .replaceAll(`'{"tasklatch:admit:PGB_AUTH"}'`, `ARRAY[('tasklatch' || chr(58) || 'admit' || chr(58) || ${auth})]`)
      .replaceAll(`'PGB_AUTH'`, auth)
      .replaceAll(`'PGB_KEY'`, `('k/' || CAST(:client_id AS text) || '/' || CAST(:k AS text))`)
      .replaceAll(`'PGB_TASK'`, 'gen_random_uuid()::text')
      .replaceAll(`'PGB_CORR'`, 'gen_random_uuid()::text')
      .replace('SELECT inserted.* FROM inserted', inTransaction ? `SELECT inserted.*, ${NOTIFY} AS notified FROM inserted` : 'SELECT inserted.* FROM inserted')
      // pgbench reads ':name' anywhere, in literals too, as a variable (hence chr(58) above): a space after each of the
      // JSON's colons keeps `"rows":1` from becoming a parameter (jsonb stores the same value).
      .replaceAll(JSON.stringify(request), JSON.stringify(request).replaceAll('":', '": '))
      .replace(/\s+/g, ' ')
      .trim();
    if (text.includes('PGB_') || text.includes('--') || text.includes(';')) throw new Error(`pgbench statement not rewritten: ${text}`);
    return `${text};`;
  });
  const notification = inTransaction
    ? []
    : ['\\startpipeline', 'BEGIN;', 'SET LOCAL synchronous_commit = off;', `SELECT ${NOTIFY};`, 'COMMIT;', '\\endpipeline'];
  return [
    '\\set r random(1, 1000000000)',
    '\\set k random(1, 1000000000)',
    '\\startpipeline',
    'BEGIN;',
    ...lines,
    'COMMIT;',
    '\\endpipeline',
    ...notification,
    '',
  ].join('\n');
}

/** Runs the script `config.rounds` times (-c 16, -j 2), adds a throughput cell to `group`, and prints the command. */
export async function pgbenchAdmission(
  results: Results,
  config: BenchConfig,
  pg: BenchPostgres,
  group: string,
  variant: string,
  inTransaction = false,
): Promise<void> {
  const store = await PostgresStore.open(pg.schemaUrl('pgbench'));
  await store.close();
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-pgbench-'));
  try {
    const script = join(dir, 'admission.sql');
    await writeFile(script, pgbenchScript(Date.now(), inTransaction));
    const seconds = Math.max(1, Math.round(config.roundMs / 1000));
    const env = { ...process.env, PGOPTIONS: `-c search_path=${pg.schemaName('pgbench')}` };
    const args = (prefix: string) => [
      '-n',
      '-c',
      String(CLIENTS),
      '-j',
      '2',
      '-T',
      String(seconds),
      '-M',
      'prepared',
      '-f',
      script,
      '-l',
      `--log-prefix=${prefix}`,
      pg.url,
    ];
    const rates: number[] = [];
    const latencies: number[] = [];
    for (let r = 0; r < config.rounds; r++) {
      const prefix = join(dir, `round${r}`);
      const { stdout } = await run('pgbench', args(prefix), { env });
      const tps = /tps = ([\d.]+)/.exec(stdout)?.[1];
      if (tps === undefined) throw new Error(`pgbench printed no tps:\n${stdout}`);
      rates.push(Number(tps));
      for (const file of (await readdir(dir)).filter((f) => f.startsWith(`round${r}.`))) {
        // Per transaction: client_id transaction_no latency_us script_no epoch_s epoch_us.
        for (const line of (await readFile(join(dir, file), 'utf8')).split('\n')) {
          const latencyUs = Number(line.split(' ')[2]);
          if (line !== '' && Number.isFinite(latencyUs)) latencies.push(latencyUs / 1000);
        }
      }
    }
    const s = summarize(latencies);
    results.throughput.push({ group, variant, concurrency: CLIENTS, roundRates: rates, median: median(rates), p50: s.p50, p99: s.p99, ops: latencies.length });
    results.notes.push(`pgbench: pgbench ${args('LOG').join(' ')} (PGOPTIONS search_path), script from bench/scenarios/pgbench.ts`);
    console.log(`  ${group} | ${variant} @${CLIENTS}: ${fmt(median(rates))} ops/s, p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
