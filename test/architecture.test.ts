import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The top-level folder of a file under src/ (`core`, `store`, …); files at the root are `(root)`. */
function layer(file: string): string {
  const parts = relative(SRC, file).split(/[\\/]/);
  return parts.length === 1 ? '(root)' : parts[0]!;
}

/** Every relative import of every file, type imports and dynamic imports included. */
function importEdges(): Array<{ from: string; to: string }> {
  const edges: Array<{ from: string; to: string }> = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from\s+|import\()\s*'(\.[^']+)'/g)) {
      edges.push({ from: file, to: resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')) });
    }
  }
  return edges;
}

describe('the import graph of src/', () => {
  const edges = importEdges();
  const layers = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const [a, b] = [layer(from), layer(to)];
    if (a !== b) (layers.get(a) ?? layers.set(a, new Set()).get(a)!).add(b);
  }

  it('has no cycle between top-level folders', () => {
    const cycles: string[] = [];
    const visit = (node: string, path: string[]) => {
      for (const next of layers.get(node) ?? []) {
        if (path.includes(next)) cycles.push([...path.slice(path.indexOf(next)), next].join(' → '));
        else visit(next, [...path, next]);
      }
    };
    for (const node of layers.keys()) visit(node, [node]);
    expect(cycles).toEqual([]);
  });

  it('keeps the core to itself', () => {
    expect(layers.get('core') ?? new Set()).toEqual(new Set());
  });

  it('keeps tools, workers, the demo, the runtime and the stores off the wire', () => {
    for (const folder of ['tools', 'worker', 'demo', 'runtime', 'store', 'service', 'stateless']) {
      expect([...(layers.get(folder) ?? [])], folder).not.toContain('mcp');
    }
  });

  it('keeps the two wire generations apart, and the HTTP front to itself', () => {
    expect([...(layers.get('mcp') ?? [])]).not.toContain('stateless');
    expect([...(layers.get('stateless') ?? [])]).not.toContain('mcp');
    const importersOfHttp = [...layers].filter(([, to]) => to.has('http')).map(([from]) => from);
    expect(importersOfHttp.filter((from) => from !== '(root)' && from !== 'cli')).toEqual([]);
  });

  /**
   * Each dialect's machinery of its own, and why it has no counterpart: SQLite's driver seam
   * (two drivers; PostgreSQL has one, `pg`), PostgreSQL's read batching (a SQLite read is a
   * local call, with no round trip to share).
   */
  const DIALECT_EXTRAS: Record<string, readonly string[]> = {
    sqlite: ['driver.ts', 'node-driver.ts'],
    postgres: ['read-batcher.ts'],
  };

  it('gives the SQL stores the same file names for shared roles, and lists what one dialect has alone', () => {
    const names = (dialect: string) => readdirSync(join(SRC, 'store', dialect)).sort();
    const shared = (dialect: string) => names(dialect).filter((name) => !DIALECT_EXTRAS[dialect]!.includes(name));
    expect(shared('sqlite')).toEqual(shared('postgres'));
    for (const [dialect, extras] of Object.entries(DIALECT_EXTRAS)) for (const extra of extras) expect(names(dialect)).toContain(extra);
  });
});
