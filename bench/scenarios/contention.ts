import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StatusWrite } from '../../src/core/types.js';
import { openGuard, type Guard } from '../../src/service/guard.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TaskStore } from '../../src/store/types.js';
import type { BenchConfig } from '../lib/config.js';
import { TOOL, toolArgs, TTL_MS } from '../lib/mcp.js';
import type { BenchPostgres } from '../lib/postgres.js';
import type { Results } from '../lib/results.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const AUTH = 'race/alice';

/** Writer i's write: a mix of terminal statuses, two different completed results among them. */
function writeOf(i: number): StatusWrite {
  switch (i % 4) {
    case 0:
      return { status: 'completed', expectedVersion: 1, result: { content: [{ type: 'text', text: 'result A' }] } };
    case 1:
      return { status: 'completed', expectedVersion: 1, result: { content: [{ type: 'text', text: `result B${i}` }] } };
    case 2:
      return { status: 'failed', expectedVersion: 1, result: { content: [{ type: 'text', text: 'boom' }], isError: true } };
    default:
      return { status: 'cancelled', expectedVersion: 1 };
  }
}

/**
 * One race: a fresh task, then `writers` transitions started in the same tick, each to a terminal
 * status at version 1. Exactly one may apply; every other must be classified.
 */
async function race(guard: Guard, writers: number): Promise<{ winner: number; losers: number[]; decisions: Record<string, number> }> {
  const created = await createTask(guard, {
    auth: AUTH,
    tool: { name: TOOL, execution: { taskSupport: 'required' } },
    request: { method: 'tools/call', params: { name: TOOL, arguments: toolArgs(0), task: { ttl: TTL_MS } } },
  });
  if (created.decision !== 'ACCEPT_TASK') throw new Error(`expected ACCEPT_TASK, got ${created.decision}`);
  const taskId = created.record.taskId;
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: writers }, (_, i) =>
      guard.worker.transition({ auth: AUTH, taskId, write: writeOf(i) }).then((out) => ({ decision: out.decision, ms: performance.now() - t0 })),
    ),
  );
  const decisions: Record<string, number> = {};
  for (const a of answers) decisions[a.decision] = (decisions[a.decision] ?? 0) + 1;
  const winners = answers.filter((a) => a.decision === 'APPLY_TRANSITION');
  if (winners.length !== 1) throw new Error(`race on ${taskId}: ${winners.length} winners (${JSON.stringify(decisions)})`);
  const bad = answers.filter((a) => !['APPLY_TRANSITION', 'IDEMPOTENT_TERMINAL', 'BLOCK_TERMINAL_REWRITE', 'BLOCK_STALE_VERSION'].includes(a.decision));
  if (bad.length > 0) throw new Error(`race on ${taskId}: unexpected decisions ${JSON.stringify(decisions)}`);
  return { winner: (winners[0] as { ms: number }).ms, losers: answers.filter((a) => a.decision !== 'APPLY_TRANSITION').map((a) => a.ms), decisions };
}

/** Scenario 6: writers racing to a terminal status on one task. */
export async function contention(results: Results, config: BenchConfig, pg: BenchPostgres): Promise<void> {
  const writers = config.contentionWriters;
  console.log(`\n[6] contention: ${writers} writers racing to a terminal status on one task`);
  const dir = await mkdtemp(join(tmpdir(), 'tasklatch-bench-race-'));
  const stores: Array<[string, () => Promise<TaskStore>]> = [
    ['sqlite', () => SqliteStore.open(join(dir, 'race.db'))],
    ['postgres', () => PostgresStore.open(pg.schemaUrl('race'))],
  ];
  for (const [name, open] of stores) {
    const store = await open();
    const guard = openGuard({ store, capabilities: { cancel: {}, requests: { tools: { call: {} } } } });
    for (let r = 0; r < 3; r++) await race(guard, writers);
    const winners: number[] = [];
    const losers: number[] = [];
    const totals: Record<string, number> = {};
    for (let r = 0; r < config.contentionRounds; r++) {
      const out = await race(guard, writers);
      winners.push(out.winner);
      losers.push(...out.losers);
      for (const [k, v] of Object.entries(out.decisions)) totals[k] = (totals[k] ?? 0) + v;
    }
    const note = `${config.contentionRounds} races; decisions ${JSON.stringify(totals)}`;
    results.addLatency(`contention ${name} (${writers} writers, worker.transition)`, 'single winner: start → APPLY_TRANSITION', winners, note);
    results.addLatency(`contention ${name} (${writers} writers, worker.transition)`, 'every loser: start → classified answer', losers, note);
    await store.close();
  }
  await rm(dir, { recursive: true, force: true });
}
