import { Results, type Fact, type LatencyRow, type Ratio, type ThroughputCell } from './results.js';
import { fmt, median, summarize } from './stats.js';

/** Runs of each noisy scenario in a full run (TASKLATCH_BENCH_TRIALS overrides; quick runs once). */
export function trialsOf(quick: boolean): number {
  const asked = Number(process.env.TASKLATCH_BENCH_TRIALS ?? (quick ? 1 : 3));
  return Number.isInteger(asked) && asked >= 1 ? asked : 1;
}

/**
 * Runs a noisy scenario `n` times, each into results of its own, and merges them into `into`:
 * a figure measured in several runs becomes the median of its runs, with every run kept
 * (`trials`), so that one burst of the machine's other load does not decide a target alone.
 * A ratio of two such cells is the median of the runs' own ratios (`Results.addRatio`).
 */
export async function inTrials(into: Results, n: number, run: (results: Results, trial: number) => Promise<void>): Promise<void> {
  const parts: Results[] = [];
  for (let t = 0; t < n; t++) {
    if (n > 1) console.log(`  -- run ${t + 1} of ${n}`);
    const part = new Results();
    await run(part, t);
    parts.push(part);
  }
  mergeTrials(into, parts);
}

function byKey<T>(parts: readonly Results[], pick: (r: Results) => readonly T[], key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const part of parts) for (const x of pick(part)) out.set(key(x), [...(out.get(key(x)) ?? []), x]);
  return out;
}

const runsNote = (values: readonly number[], unit = '') => `runs ${values.map((v) => `${fmt(v)}${unit}`).join(' / ')}`;

export function mergeTrials(into: Results, parts: readonly Results[]): void {
  for (const cells of byKey(
    parts,
    (r) => r.throughput,
    (c) => `${c.group}\u0000${c.variant}\u0000${c.concurrency}`,
  ).values()) {
    const first = cells[0] as ThroughputCell;
    if (cells.length === 1) {
      into.throughput.push(first);
      continue;
    }
    const trials = cells.map((c) => c.median);
    into.throughput.push({
      ...first,
      roundRates: cells.flatMap((c) => c.roundRates),
      median: median(trials),
      p50: median(cells.map((c) => c.p50)),
      p99: median(cells.map((c) => c.p99)),
      ops: cells.reduce((a, c) => a + c.ops, 0),
      trials,
    });
  }
  for (const rows of byKey(
    parts,
    (r) => r.latency,
    (l) => `${l.scenario}\u0000${l.name}`,
  ).values()) {
    const first = rows[0] as LatencyRow;
    if (rows.length === 1) {
      into.latency.push(first);
      continue;
    }
    const runs = rows.map((l) => `${fmt(l.p50)}/${fmt(l.p99)}/${fmt(l.max)}`).join(' · ');
    into.latency.push({
      scenario: first.scenario,
      name: first.name,
      n: rows.reduce((a, l) => a + l.n, 0),
      p50: median(rows.map((l) => l.p50)),
      p99: median(rows.map((l) => l.p99)),
      max: Math.max(...rows.map((l) => l.max)),
      note: `median of ${rows.length} runs' p50 and p99, max of all; runs p50/p99/max: ${runs}${first.note === undefined ? '' : `; run 1: ${first.note}`}`,
      trials: rows.map((l) => ({ p50: l.p50, p99: l.p99, max: l.max })),
    });
  }
  for (const facts of byKey(
    parts,
    (r) => r.facts,
    (f) => `${f.scenario}\u0000${f.name}`,
  ).values()) {
    const first = facts[0] as Fact;
    if (facts.length === 1) {
      into.facts.push(first);
      continue;
    }
    const values = facts.map((f) => f.value);
    into.facts.push({
      ...first,
      value: median(values),
      note: `median of ${facts.length} runs (${runsNote(values)})${first.note === undefined ? '' : `; run 1: ${first.note}`}`,
    });
  }
  for (const ratios of byKey(
    parts,
    (r) => r.ratios,
    (x) => `${x.name}\u0000${x.concurrency}`,
  ).values()) {
    const first = ratios[0] as Ratio;
    if (ratios.length === 1) {
      into.ratios.push(first);
      continue;
    }
    const trials = ratios.map((x) => x.value);
    into.ratios.push({ ...first, value: median(trials), trials });
  }
  into.notes.push(...parts.flatMap((p) => p.notes));
}

/** The runs behind a latency row measured several times (p50/p99/max of each), as text. */
export function runsOf(row: LatencyRow): string {
  return row.trials === undefined ? '' : ` (runs p50/p99/max: ${row.trials.map((t) => `${fmt(t.p50)}/${fmt(t.p99)}/${fmt(t.max)}`).join(' · ')} ms)`;
}

/**
 * A latency row from several runs of one measurement within one run of its scenario (each run's
 * samples apart): p50 and p99 the median of the runs', max the largest, every run kept
 * (`trials`), as `mergeTrials` makes of runs of a whole scenario.
 */
export function addRunsLatency(results: Results, scenario: string, name: string, runs: ReadonlyArray<readonly number[]>, note?: string): LatencyRow {
  const parts = runs.map((samples) => summarize(samples));
  const row: LatencyRow = {
    scenario,
    name,
    n: parts.reduce((a, s) => a + s.n, 0),
    p50: median(parts.map((s) => s.p50)),
    p99: median(parts.map((s) => s.p99)),
    max: Math.max(...parts.map((s) => s.max)),
    ...(note === undefined ? {} : { note }),
    trials: parts.map((s) => ({ p50: s.p50, p99: s.p99, max: s.max })),
  };
  results.latency.push(row);
  console.log(`  ${scenario} | ${name}: p50 ${fmt(row.p50)} ms, p99 ${fmt(row.p99)} ms${runsOf(row)}`);
  return row;
}
