import { K, KEYED_GROUP, L, LIFE_GROUP } from '../scenarios/lifecycle.js';
import { P, POOLER_GROUP } from '../scenarios/pooler.js';
import { fmt } from './stats.js';
import { cpuFactNames, type Results } from './results.js';
import { runsOf } from './trials.js';

const E2E = 'end to end (MCP in-memory, in-process executor)';
/** The concurrency the targets are judged at. */
const AT = 16;

/**
 * Ratios and targets of the lifecycle scenarios and of end to end; appended to those of
 * `computeRatiosAndTargets` (call it after that).
 */
export function addLifecycleTargets(results: Results): void {
  for (const c of [1, AT]) {
    results.addRatio('lifecycle tasklatch via worker ÷ pg-boss send→fetch→complete', c, [LIFE_GROUP, L.worker], [LIFE_GROUP, L.boss]);
    results.addRatio('lifecycle tasklatch via worker ÷ graphile-worker', c, [LIFE_GROUP, L.worker], [LIFE_GROUP, L.graphile]);
    results.addRatio('lifecycle tasklatch create→claim→complete ÷ pg-boss send→fetch→complete', c, [LIFE_GROUP, L.direct], [LIFE_GROUP, L.boss]);
    results.addRatio('lifecycle tasklatch create→claim→complete ÷ graphile-worker', c, [LIFE_GROUP, L.direct], [LIFE_GROUP, L.graphile]);
    results.addRatio('keyed admission ÷ pg-boss send', c, [KEYED_GROUP, K.keyed], [KEYED_GROUP, K.bossSend]);
    results.addRatio('keyed admission ÷ Node raw ceiling', c, [KEYED_GROUP, K.keyed], [KEYED_GROUP, K.ceiling]);
  }
  results.addRatio('keyed admission ÷ pgbench (same statements)', AT, [KEYED_GROUP, K.keyed], [KEYED_GROUP, K.pgbench]);
  results.addRatio('Node raw ceiling ÷ pgbench (same statements)', AT, [KEYED_GROUP, K.ceiling], [KEYED_GROUP, K.pgbench]);
  results.addRatio('pgbench, pg_notify inside the transaction ÷ after it (diagnostic)', AT, [KEYED_GROUP, K.pgbenchInTx], [KEYED_GROUP, K.pgbench]);
  results.addRatio('keyed admission ÷ same without key or limit (diagnostic)', AT, [KEYED_GROUP, K.keyed], [KEYED_GROUP, K.bare]);

  const ratio = (name: string) => results.ratios.find((r) => r.name === name && r.concurrency === AT);
  const atLeast = (target: string, name: string, min: number, context = '') => {
    const r = ratio(name);
    if (r === undefined) return;
    const runs = r.trials === undefined ? '' : `, median of runs ${r.trials.map((t) => `${fmt(t)}×`).join(' / ')}`;
    results.targets.push({ name: target, pass: r.value >= min, figure: `${fmt(r.value)}×${runs}${context}` });
  };
  const direct = (name: string) => {
    const r = ratio(name);
    return r === undefined ? '' : ` (create→claim→complete without the worker loop: ${fmt(r.value)}×)`;
  };
  // CPU per task of each side, Node and its PostgreSQL backends, beside the ratio.
  const cpu = (variant: string) => {
    const names = cpuFactNames(variant, AT);
    const fact = (name: string) => results.facts.find((f) => f.scenario === LIFE_GROUP && f.name === name)?.value;
    const [node, postgres] = [fact(names.node), fact(names.postgres)];
    return node === undefined || postgres === undefined ? null : `${fmt(node + postgres)} ms (Node ${fmt(node)} + PostgreSQL ${fmt(postgres)})`;
  };
  const cpuBeside = (peer: string, peerVariant: string) => {
    const [ours, theirs] = [cpu(L.worker), cpu(peerVariant)];
    return ours === null || theirs === null ? '' : `; CPU per task: tasklatch ${ours}, ${peer} ${theirs}`;
  };
  atLeast(
    'lifecycle create → run → complete @16 ≥ 2× pg-boss send→fetch→complete',
    'lifecycle tasklatch via worker ÷ pg-boss send→fetch→complete',
    2,
    direct('lifecycle tasklatch create→claim→complete ÷ pg-boss send→fetch→complete') + cpuBeside('pg-boss', L.boss),
  );
  atLeast(
    'lifecycle create → run → complete @16 ≥ 2× graphile-worker addJob→run→complete',
    'lifecycle tasklatch via worker ÷ graphile-worker',
    2,
    direct('lifecycle tasklatch create→claim→complete ÷ graphile-worker') + cpuBeside('graphile-worker', L.graphile),
  );
  results.addRatio('lifecycle through PgBouncer (transaction mode) ÷ direct to PostgreSQL', AT, [POOLER_GROUP, P.pooled], [POOLER_GROUP, P.direct]);
  atLeast(
    'lifecycle create → run → complete @16 through PgBouncer (transaction mode, pgbouncer=true) ≥ 0.8× the same direct to PostgreSQL',
    'lifecycle through PgBouncer (transaction mode) ÷ direct to PostgreSQL',
    0.8,
  );
  atLeast('PostgreSQL admission, key + limit @16 ≥ 1× pg-boss send', 'keyed admission ÷ pg-boss send', 1);
  atLeast('PostgreSQL admission, key + limit @16 ≥ 0.7× Node raw ceiling', 'keyed admission ÷ Node raw ceiling', 0.7);
  const pgbench = ratio('keyed admission ÷ pgbench (same statements)');
  if (pgbench !== undefined) {
    const node = ratio('Node raw ceiling ÷ pgbench (same statements)');
    results.targets.push({
      name: 'PostgreSQL admission, key + limit @16 ÷ pgbench (reported)',
      pass: true,
      figure: `${fmt(pgbench.value)}× (Node raw ceiling ÷ pgbench ${node === undefined ? '–' : fmt(node.value)}×)`,
    });
  }

  const e2e = (name: string) => results.latency.find((l) => l.scenario === E2E && l.name === name);
  const pg1 = e2e('postgres, 1 requestor');
  if (pg1 !== undefined) {
    results.targets.push({ name: 'end to end, PostgreSQL, 1 requestor: p50 ≤ 3 ms', pass: pg1.p50 <= 3, figure: `p50 ${fmt(pg1.p50)} ms${runsOf(pg1)}` });
    results.targets.push({
      name: 'end to end, PostgreSQL, 1 requestor: max < 50 ms',
      pass: pg1.max < 50,
      figure: `max ${fmt(pg1.max)} ms, p99 ${fmt(pg1.p99)} ms${runsOf(pg1)}`,
    });
  }
  const sqlite1 = e2e('sqlite, 1 requestor');
  if (sqlite1 !== undefined) {
    results.targets.push({
      name: 'end to end, SQLite, 1 requestor: p50 ≤ 1.5 ms',
      pass: sqlite1.p50 <= 1.5,
      figure: `p50 ${fmt(sqlite1.p50)} ms, max ${fmt(sqlite1.max)} ms`,
    });
  }
}
