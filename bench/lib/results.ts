import type { CpuSample } from './backend-cpu.js';
import type { BenchConfig } from './config.js';
import { fmt, median, runRound, summarize, type Round } from './stats.js';

/** One throughput measurement: a variant of a group at one concurrency. */
export interface ThroughputCell {
  group: string;
  variant: string;
  concurrency: number;
  /** Operations per second of each measured round. */
  roundRates: number[];
  /** Median of the round rates (ops/s). */
  median: number;
  /** Request latency over every measured round (ms). */
  p50: number;
  p99: number;
  ops: number;
  /** When measured in several runs: each run's median (ops/s); `median` is theirs. */
  trials?: number[];
}

/** One latency distribution (ms). */
export interface LatencyRow {
  scenario: string;
  name: string;
  n: number;
  p50: number;
  p99: number;
  max: number;
  note?: string;
  /** When measured in several runs: each run's figures; p50 and p99 are their medians, max the largest. */
  trials?: Array<{ p50: number; p99: number; max: number }>;
}

/** A rate and its unit, for figures that are neither throughput cells nor latencies. */
export interface Fact {
  scenario: string;
  name: string;
  value: number;
  unit: string;
  note?: string;
}

export interface Ratio {
  name: string;
  concurrency: number | null;
  value: number;
  numerator: string;
  denominator: string;
  /** When both cells were measured in the same runs: each run's ratio; `value` is their median. */
  trials?: number[];
}

export interface Target {
  name: string;
  pass: boolean;
  figure: string;
}

/** Everything one run measured; written to bench/results.json and printed as tables. */
export class Results {
  readonly throughput: ThroughputCell[] = [];
  readonly latency: LatencyRow[] = [];
  readonly facts: Fact[] = [];
  readonly notes: string[] = [];
  ratios: Ratio[] = [];
  targets: Target[] = [];

  cell(group: string, variant: string, concurrency: number): ThroughputCell | undefined {
    return this.throughput.find((c) => c.group === group && c.variant === variant && c.concurrency === concurrency);
  }

  addLatency(scenario: string, name: string, samples: readonly number[], note?: string): LatencyRow {
    const s = summarize(samples);
    const row: LatencyRow = { scenario, name, n: s.n, p50: s.p50, p99: s.p99, max: s.max, ...(note === undefined ? {} : { note }) };
    this.latency.push(row);
    console.log(`  ${scenario} | ${name}: p50 ${fmt(row.p50)} ms, p99 ${fmt(row.p99)} ms (n=${row.n})`);
    return row;
  }

  addFact(scenario: string, name: string, value: number, unit: string, note?: string): void {
    this.facts.push({ scenario, name, value, unit, ...(note === undefined ? {} : { note }) });
    console.log(`  ${scenario} | ${name}: ${fmt(value)} ${unit}${note === undefined ? '' : ` (${note})`}`);
  }

  /** numerator ÷ denominator of two cells at one concurrency; skipped when either is missing. */
  addRatio(name: string, concurrency: number, numerator: [string, string], denominator: [string, string]): Ratio | null {
    const a = this.cell(numerator[0], numerator[1], concurrency);
    const b = this.cell(denominator[0], denominator[1], concurrency);
    if (a === undefined || b === undefined) return null;
    const ratio: Ratio = { name, concurrency, value: a.median / b.median, numerator: `${a.group}: ${a.variant}`, denominator: `${b.group}: ${b.variant}` };
    // Cells of the same runs: each run's own ratio (its variants took turns), and their median.
    if (a.trials !== undefined && b.trials !== undefined && a.trials.length === b.trials.length) {
      const bt = b.trials;
      ratio.trials = a.trials.map((x, i) => x / (bt[i] as number));
      ratio.value = median(ratio.trials);
    }
    this.ratios.push(ratio);
    return ratio;
  }
}

/** A way of doing the group's operation; `concurrencies` limits where it runs (diagnostics). */
export interface Variant {
  name: string;
  concurrencies?: readonly number[];
  op(worker: number): Promise<void>;
  /**
   * Starts a CPU window over this variant's Node process and PostgreSQL backends (see
   * backend-cpu.ts); given, each measured round is a window, and the CPU per operation is
   * reported as facts of the group (`cpuFactNames`).
   */
  cpu?: () => Promise<() => Promise<CpuSample>>;
}

/** The names of the facts a variant with a CPU window reports per operation at `concurrency`. */
export function cpuFactNames(variant: string, concurrency: number): { node: string; postgres: string } {
  return {
    node: `${variant} @${concurrency}: Node CPU per operation`,
    postgres: `${variant} @${concurrency}: PostgreSQL backend CPU per operation`,
  };
}

/**
 * Measures the variants of one group at each concurrency. Every variant is warmed up first;
 * then the variants take turns round by round (the order rotating each round), so that a noisy
 * neighbour slows all of them alike and ratios within the group stay meaningful.
 */
export async function runGroup(results: Results, group: string, variants: readonly Variant[], config: BenchConfig): Promise<void> {
  for (const c of config.concurrency) {
    const active = variants.filter((v) => v.concurrencies === undefined || v.concurrencies.includes(c));
    for (const v of active) await runRound(c, config.warmupMs, (w) => v.op(w));
    const rounds = new Map<string, Round[]>(active.map((v) => [v.name, []]));
    const cpu = new Map<string, CpuSample[]>(active.map((v) => [v.name, []]));
    for (let r = 0; r < config.rounds; r++) {
      for (let k = 0; k < active.length; k++) {
        const v = active[(k + r) % active.length] as Variant;
        const end = await v.cpu?.();
        rounds.get(v.name)?.push(await runRound(c, config.roundMs, (w) => v.op(w)));
        if (end !== undefined) cpu.get(v.name)?.push(await end());
      }
    }
    for (const v of active) {
      const measured = rounds.get(v.name) ?? [];
      const latencies = measured.flatMap((m) => m.latencies);
      const s = summarize(latencies);
      const cell: ThroughputCell = {
        group,
        variant: v.name,
        concurrency: c,
        roundRates: measured.map((m) => m.rate),
        median: median(measured.map((m) => m.rate)),
        p50: s.p50,
        p99: s.p99,
        ops: latencies.length,
      };
      results.throughput.push(cell);
      console.log(`  ${group} | ${v.name} @${c}: ${fmt(cell.median)} ops/s, p50 ${fmt(cell.p50)} ms, p99 ${fmt(cell.p99)} ms`);
      const samples = cpu.get(v.name) ?? [];
      if (samples.length > 0 && cell.ops > 0) {
        const names = cpuFactNames(v.name, c);
        const backends = Math.max(...samples.map((x) => x.backends));
        const lost = samples.reduce((a, x) => a + x.lost, 0);
        const note = `${cell.ops} operations, ${backends} backends${lost > 0 ? `, ${lost} gone before the end of a window (their CPU missing)` : ''}`;
        results.addFact(group, names.node, samples.reduce((a, x) => a + x.nodeMs, 0) / cell.ops, 'ms', `${cell.ops} operations`);
        results.addFact(group, names.postgres, samples.reduce((a, x) => a + x.pgMs, 0) / cell.ops, 'ms', note);
      }
    }
  }
}
