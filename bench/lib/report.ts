import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import Database from 'better-sqlite3';
import type { Results } from './results.js';
import { fmt } from './stats.js';

export interface Machine {
  nproc: number;
  cpu: string;
  memoryGiB: number;
  node: string;
  postgres: string;
  sqlite: string;
  pgBoss: string;
  sdk: string;
}

export async function machine(postgres: string): Promise<Machine> {
  const db = new Database(':memory:');
  const sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  db.close();
  // Read from node_modules directly: a package's exports may hide its package.json.
  const version = (name: string) => {
    try {
      return (JSON.parse(readFileSync(new URL(`../../../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      return '?';
    }
  };
  return {
    nproc: cpus().length,
    cpu: cpus()[0]?.model ?? '?',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    postgres,
    sqlite,
    pgBoss: version('pg-boss'),
    sdk: version('@modelcontextprotocol/sdk'),
  };
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** Prints every table of the run (Markdown, so BENCHMARKS.md can quote it as is). */
export function printReport(results: Results, meta: Machine & { commit: string; quick: boolean; wallSeconds: number }): void {
  const out: string[] = [];
  out.push(`\n## Results (${meta.quick ? 'quick' : 'full'} run)\n`);
  out.push(
    `${meta.nproc} × ${meta.cpu}, ${meta.memoryGiB} GiB; Node ${meta.node}; ${meta.postgres.split(' on ')[0] ?? meta.postgres}; SQLite ${meta.sqlite}; pg-boss ${meta.pgBoss}; MCP SDK ${meta.sdk}; tasklatch ${meta.commit}; wall ${meta.wallSeconds} s\n`,
  );
  const concurrencies = [...new Set(results.throughput.map((c) => c.concurrency))].sort((a, b) => a - b);
  const groups = [...new Set(results.throughput.map((c) => c.group))];
  if (groups.length > 0) {
    out.push('### Throughput: median ops/s over rounds (request latency p50 / p99 ms)\n');
    const rows: string[][] = [];
    for (const group of groups) {
      for (const variant of [...new Set(results.throughput.filter((c) => c.group === group).map((c) => c.variant))]) {
        rows.push([
          group,
          variant,
          ...concurrencies.map((c) => {
            const cell = results.cell(group, variant, c);
            return cell === undefined ? '' : `${fmt(cell.median)} (${fmt(cell.p50)} / ${fmt(cell.p99)})`;
          }),
        ]);
      }
    }
    out.push(table(['group', 'variant', ...concurrencies.map((c) => `@${c}`)], rows));
  }
  if (results.ratios.length > 0) {
    out.push('\n### Ratios (same run; where a scenario ran several times: the median of its runs, each run in brackets)\n');
    const names = [...new Set(results.ratios.map((r) => r.name))];
    out.push(
      table(
        ['ratio', ...concurrencies.map((c) => `@${c}`)],
        names.map((name) => [
          name,
          ...concurrencies.map((c) => {
            const r = results.ratios.find((x) => x.name === name && x.concurrency === c);
            if (r === undefined) return '';
            return r.trials === undefined ? `${fmt(r.value)}×` : `${fmt(r.value)}× (${r.trials.map((t) => fmt(t)).join(' / ')})`;
          }),
        ]),
      ),
    );
  }
  if (results.latency.length > 0) {
    out.push('\n### Latencies (ms)\n');
    out.push(
      table(
        ['scenario', 'measurement', 'n', 'p50', 'p99', 'max'],
        results.latency.map((l) => [l.scenario, l.name, String(l.n), fmt(l.p50), fmt(l.p99), fmt(l.max)]),
      ),
    );
  }
  if (results.facts.length > 0) {
    out.push('\n### Other figures\n');
    out.push(
      table(
        ['scenario', 'measurement', 'value', 'note'],
        results.facts.map((f) => [f.scenario, f.name, `${fmt(f.value)} ${f.unit}`, f.note ?? '']),
      ),
    );
  }
  if (results.targets.length > 0) {
    out.push('\n### Targets\n');
    out.push(
      table(
        ['target', 'result', 'figure'],
        results.targets.map((t) => [t.name, t.pass ? 'PASS' : 'MISS', t.figure]),
      ),
    );
  }
  console.log(out.join('\n'));
}
