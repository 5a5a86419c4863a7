import { readFileSync } from 'node:fs';

/**
 * `node dist/bench/bench/profile-split.js <file.cpuprofile>`: where a server process's time went,
 * from a `node --cpu-prof` profile (TASKLATCH_BENCH_SERVER_FLAGS="--cpu-prof --cpu-prof-dir=DIR"
 * gives one per server process of the polling scenarios). Each sample is charged to the
 * innermost frame that belongs to a package (tasklatch's own code, the MCP SDK and its
 * node-server adapter, the database drivers), so that node's internals (socket writes, the HTTP
 * parser) count for whoever called them; the rest is node with no package above it.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

const OWNERS: Array<[RegExp, string]> = [
  [/node_modules\/@hono\//, 'MCP SDK (its node-server adapter)'],
  [/node_modules\/@modelcontextprotocol\//, 'MCP SDK'],
  [/node_modules\/better-sqlite3\//, 'better-sqlite3'],
  [/node_modules\/(pg|pg-protocol|pg-pool)\//, 'pg'],
  [/node_modules\/pino/, 'pino'],
  [/\/dist\/(bench\/)?src\//, 'tasklatch'],
];

function ownerOf(url: string): string | null {
  for (const [pattern, owner] of OWNERS) if (pattern.test(url)) return owner;
  return null;
}

function main(file: string): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const totals = new Map<string, number>();
  for (const sample of profile.samples) {
    const leaf = byId.get(sample)?.callFrame.functionName ?? '';
    let owner: string | null = ['(idle)', '(program)', '(garbage collector)'].includes(leaf) ? leaf : null;
    for (let id: number | undefined = sample; owner === null && id !== undefined; id = parent.get(id)) owner = ownerOf(byId.get(id)?.callFrame.url ?? '');
    const key = owner ?? 'node, no package frame above';
    totals.set(key, (totals.get(key) ?? 0) + 1);
  }
  const all = profile.samples.length;
  console.log(`${file}: ${all} samples`);
  for (const [owner, n] of [...totals].sort((a, b) => b[1] - a[1])) console.log(`${((100 * n) / all).toFixed(1).padStart(6)} %  ${owner}`);
}

main(process.argv[2] ?? '');
