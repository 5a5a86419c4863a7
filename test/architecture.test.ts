import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
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
    for (const folder of ['tools', 'worker', 'demo', 'runtime', 'store', 'service']) {
      for (const wire of ['wire-2025', 'wire-2026']) expect([...(layers.get(folder) ?? [])], folder).not.toContain(wire);
    }
  });

  it('keeps the two wire generations apart, and the HTTP front to itself', () => {
    expect([...(layers.get('wire-2025') ?? [])]).not.toContain('wire-2026');
    expect([...(layers.get('wire-2026') ?? [])]).not.toContain('wire-2025');
    const importersOfHttp = [...layers].filter(([, to]) => to.has('http')).map(([from]) => from);
    expect(importersOfHttp.filter((from) => from !== '(root)' && from !== 'cli')).toEqual([]);
  });

  /**
   * The files one SQL dialect has and the other has not, each with why it has no counterpart.
   * Every other file of a dialect folder is a shared role (the store, its connection, reads,
   * writes, dispatch, inputs, audit, rows, statements by role, …) and is in both folders under
   * the same name.
   */
  const DIALECT_EXTRAS: Record<string, Record<string, string>> = {
    sqlite: {
      'driver.ts': 'the subset of a SQLite driver the store uses: there are two drivers (PostgreSQL has one, pg)',
      'node-driver.ts': 'node:sqlite in that shape, for a Node where better-sqlite3 does not load',
      'record-cache.ts':
        'rows answered again while the file is unchanged, checked by one local statement per read (PostgreSQL has no such check short of the round trip it would save)',
    },
    postgres: {
      'prepared.ts':
        'parameters inlined as literals and session-level prepared statements: several statements in one message, a round trip SQLite does not have',
    },
  };

  it('gives the SQL stores the same file for each shared role, and lists what one dialect has alone with why', () => {
    const names = (dialect: string) => readdirSync(join(SRC, 'store', dialect)).sort();
    const [sqlite, postgres] = [names('sqlite'), names('postgres')];
    const extras = (dialect: string) => DIALECT_EXTRAS[dialect]!;
    // A shared role missing from one dialect, or an extra nobody listed: either way one side has it alone.
    expect(
      sqlite.filter((name) => !postgres.includes(name) && !(name in extras('sqlite'))),
      'only in sqlite, not listed',
    ).toEqual([]);
    expect(
      postgres.filter((name) => !sqlite.includes(name) && !(name in extras('postgres'))),
      'only in postgres, not listed',
    ).toEqual([]);
    for (const [dialect, listed] of Object.entries(DIALECT_EXTRAS)) {
      const other = dialect === 'sqlite' ? postgres : sqlite;
      for (const [extra, why] of Object.entries(listed)) {
        expect(names(dialect), `${dialect} extra`).toContain(extra);
        // Listed as an extra yet in both folders: it is a shared role, and the list is stale.
        expect(other, `${dialect}/${extra} is in both dialects`).not.toContain(extra);
        expect(why.length, `why ${dialect} has ${extra}`).toBeGreaterThan(20);
      }
    }
  });

  it('has no import cycle between files', () => {
    const next = new Map<string, string[]>();
    for (const { from, to } of edges) (next.get(from) ?? next.set(from, []).get(from)!).push(to);
    const cycles: string[] = [];
    // Depth-first with colours: a grey file met again closes a cycle through the stack.
    const colour = new Map<string, 'grey' | 'black'>();
    const stack: string[] = [];
    const visit = (file: string) => {
      colour.set(file, 'grey');
      stack.push(file);
      for (const to of next.get(file) ?? []) {
        if (colour.get(to) === 'grey') cycles.push([...stack.slice(stack.indexOf(to)), to].map((f) => relative(SRC, f)).join(' → '));
        else if (colour.get(to) === undefined) visit(to);
      }
      stack.pop();
      colour.set(file, 'black');
    };
    for (const file of sourceFiles(SRC)) if (colour.get(file) === undefined) visit(file);
    expect(cycles).toEqual([]);
  });
});

describe('the size of src/', () => {
  it('keeps every file under 400 lines', () => {
    const over = sourceFiles(SRC)
      .map((file) => ({ file: relative(SRC, file), lines: readFileSync(file, 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > 400);
    expect(over).toEqual([]);
  });

  /**
   * JSON-RPC error codes are protocol facts named once: the table of codes
   * (core/json-rpc-codes.ts), and at most two other files that must spell one (none today).
   */
  it('spells JSON-RPC error codes as numbers in at most three files', () => {
    const spelling = sourceFiles(SRC)
      .filter((file) => /-32[0-9]{3}\b/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(spelling.length, spelling.join(', ')).toBeLessThanOrEqual(3);
    expect(spelling).toContain('core/json-rpc-codes.ts');
  });

  /** `_meta` keys and the tasks extension id are named once too, in code and in comments alike. */
  it('spells io.modelcontextprotocol/ and io.tasklatch/ names in core/meta-keys.ts only', () => {
    const spelling = sourceFiles(SRC)
      .filter((file) => /io\.(modelcontextprotocol|tasklatch)\//.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file).split(sep).join('/'));
    expect(spelling).toEqual(['core/meta-keys.ts']);
  });
});
