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
      'checkpoints.ts':
        "the write-ahead log copied into the file on a thread of the process's own, not in the commit that fills it: PostgreSQL's checkpointer is a server process",
      'driver.ts': 'the subset of a SQLite driver the store uses: there are two drivers (PostgreSQL has one, pg)',
      'node-driver.ts': 'node:sqlite in that shape, for a Node where better-sqlite3 does not load',
      'record-cache.ts':
        'rows answered again while the file is unchanged, checked by one local statement per read (PostgreSQL has no such check short of the round trip it would save)',
    },
    postgres: {
      'pooled.ts': 'connections through a pooler in transaction mode (pgbouncer=true): a SQLite file has no pooler in front of it',
      'listen-config.ts': 'the connection LISTEN opens, direct when the store goes through a pooler: SQLite polls its file',
      'prepared.ts':
        'parameters inlined as literals and session-level prepared statements: several statements in one message, a round trip SQLite does not have',
      'statement-functions.ts':
        'a PL/pgSQL function per statement behind a pooler in transaction mode, whose plans each server connection keeps: SQLite plans in the process, once per statement',
      'announce.ts':
        "which writes that end a task send their notifications with their COMMIT, woken by the server as they commit: SQLite's other processes poll the file, with nothing to send",
      'concurrency.ts':
        "concurrency keys under concurrent claimers: a per-key advisory lock before the count (SQLite's one writer makes its count exact; two statements in its dispatch.ts)",
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

  it("keeps the wires on the request layer: no wire file imports service/, nor reads the runtime's service or guard", () => {
    const wireFiles = (era: string) => sourceFiles(join(SRC, era));
    for (const era of ['wire-2025', 'wire-2026']) {
      const intoService = edges.filter(({ from, to }) => layer(from) === era && layer(to) === 'service').map(({ from }) => relative(SRC, from));
      expect(intoService, `${era} files importing service/`).toEqual([]);
      for (const file of wireFiles(era)) {
        const text = readFileSync(file, 'utf8');
        expect(text, relative(SRC, file)).not.toMatch(/runtime\??\.(service|guard)\b/);
      }
    }
  });

  it('checks a task id for plausibility in one place of the request layer', () => {
    const users = sourceFiles(SRC)
      .filter((file) => readFileSync(file, 'utf8').includes('isPlausibleTaskId'))
      .map((file) => relative(SRC, file).split(sep).join('/'));
    expect(users.sort()).toEqual(['runtime/requests/task-id.ts', 'service/input-bounds.ts']);
  });

  /**
   * The files one wire era has and the other has not, each with why it has no counterpart. Every
   * other file of an era folder is a shared role under the same name in both: `server.ts` (the
   * endpoint), `methods.ts` (decode → request → encode, per method), `encode.ts` (outcomes as the
   * era's messages), `tool-call.ts`, `plain-context.ts` (a plain call's context), `notifications.ts`
   * (task notifications off the request layer's watch), and the SDK adapter in `sdk/`.
   */
  const ERA_EXTRAS: Record<string, Record<string, string>> = {
    'wire-2025': {
      'client-requests.ts':
        'questions go to the client as server→client requests; a 2026-07-28 server never sends a request (MRTR rounds, inputRequests in tasks/get)',
      'envelope-check.ts': 'refuses a body the SDK 1.x transport would answer wrongly; 2026-07-28 parses its own envelope in server.ts with messages.ts',
      'session.ts': 'per-session state (progress tokens, status watches): 2025-11-25 has sessions, 2026-07-28 is stateless',
      'session-limits.ts': 'bounds on open sessions: 2026-07-28 has no sessions to bound',
      'session-reads.ts':
        'the reads of an established session answered off the SDK transport, in its bytes and by the same handlers; 2026-07-28 has no session and no SDK transport to go around',
      'session-transports.ts': 'the SDK transports of the sessions over HTTP: 2026-07-28 answers each POST by itself',
      'sdk/request-auth.ts': "binds a transport's requests to their caller for the SDK 1.x task store; SDK 2.x has no task store to bind",
      'sdk/sdk-task-store.ts': 'the SDK 1.x experimental TaskStore on a tasklatch store; SDK 2.x has no such interface',
    },
    'wire-2026': {
      'headers.ts': 'the Mcp-Method / Mcp-Name routing headers checked against the body: a 2026-07-28 rule only',
      'messages.ts': "the params of each method as zod schemas; 2025-11-25 params are checked with the SDK's own request schemas",
      'plain-request.ts': 'hand-written checks of the hot path (a tasks/get poll) matching messages.ts, so a poll pays no schema library',
      'protocol.ts': "the versions served, each error's HTTP status and the extension check; 2025-11-25 negotiates in the SDK Server's initialize",
      'replies.ts': 'the HTTP replies of a stateless POST (JSON, SSE stream, 202); 2025-11-25 replies go through the SDK transport',
      'request-state.ts': 'the signed requestState of multi-round (MRTR) calls; a 2025-11-25 call asks its client within the call',
    },
  };

  it('gives the two wire eras the same file for each shared role, and lists what one era has alone with why', () => {
    const names = (era: string) =>
      sourceFiles(join(SRC, era))
        .map((file) => relative(join(SRC, era), file).split(sep).join('/'))
        .sort();
    const [old, modern] = [names('wire-2025'), names('wire-2026')];
    const other = (era: string) => (era === 'wire-2025' ? modern : old);
    for (const era of ['wire-2025', 'wire-2026']) {
      const own = era === 'wire-2025' ? old : modern;
      const extras = ERA_EXTRAS[era]!;
      expect(
        own.filter((name) => !other(era).includes(name) && !(name in extras)),
        `only in ${era}, not listed`,
      ).toEqual([]);
      for (const [extra, why] of Object.entries(extras)) {
        expect(own, `${era} extra`).toContain(extra);
        expect(other(era), `${era}/${extra} is in both eras`).not.toContain(extra);
        expect(why.length, `why ${era} has ${extra}`).toBeGreaterThan(20);
      }
    }
    for (const role of ['server.ts', 'methods.ts', 'encode.ts', 'tool-call.ts', 'plain-context.ts', 'notifications.ts', 'sdk/attach-tasklatch.ts'])
      for (const era of [old, modern]) expect(era).toContain(role);
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
