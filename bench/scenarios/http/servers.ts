import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchPostgres } from '../../lib/postgres.js';
import { Child } from './child.js';
import type { LoadRequest, PollTarget, ServerRequest, ServerStart } from './protocol.js';

/** Tokens (principals) the seeded tasks are spread over. */
export const TOKENS = 64;

export type PollStore = 'sqlite' | 'postgres' | 'memory';

/** CPU a process used and time it waited for one, over a wall-clock window (ms). */
export interface CpuShare {
  cpuMs: number;
  /** Of `cpuMs`, the part spent in the kernel (socket reads and writes, file locks). */
  systemMs?: number;
  wallMs: number;
  waitMs: number;
  /** PostgreSQL round trips the server made over the window (diagnostic). */
  trips?: number;
}

export interface ServerUnderTest {
  url: string;
  child: Child<ServerRequest>;
  seed(n: number): Promise<PollTarget[]>;
  /** RSS and V8 heap + external after GC (bytes). */
  memory: () => Promise<{ rss: number; heap: number }>;
  /** CPU the server used since the previous call, over the wall time between them (ms). */
  cpu(): Promise<CpuShare>;
  stop(): Promise<void>;
}

/** Extra node flags for the server process, e.g. TASKLATCH_BENCH_SERVER_FLAGS=--cpu-prof. */
function serverFlags(): string[] {
  return (process.env.TASKLATCH_BENCH_SERVER_FLAGS ?? '').split(' ').filter((f) => f !== '');
}

/** Starts a server process: tasklatch over `store` (a fresh SQLite file or PostgreSQL schema), or the bare ceiling. */
export async function startServer(kind: ServerStart['kind'], store: PollStore, pg: BenchPostgres, name: string, bareBody?: string): Promise<ServerUnderTest> {
  const dir = store === 'sqlite' ? await mkdtemp(join(tmpdir(), 'tasklatch-bench-poll-')) : null;
  const location = dir !== null ? join(dir, 'poll.db') : store === 'postgres' ? pg.schemaUrl(name) : undefined;
  const child = new Child<ServerRequest>('./poll-server.js', serverFlags());
  const start: ServerStart = { kind, store, tokens: TOKENS, ...(location === undefined ? {} : { location }), ...(bareBody === undefined ? {} : { bareBody }) };
  const { url } = await child.ask<{ url: string }>({ op: 'start', start });
  return {
    url,
    child,
    seed: async (n) => (await child.ask<{ targets: PollTarget[] }>({ op: 'seed', n })).targets,
    memory: () => child.ask<{ rss: number; heap: number }>({ op: 'rss' }),
    cpu: () => child.ask<CpuShare>({ op: 'cpu' }),
    stop: async () => {
      await child.stop();
      if (dir !== null) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The load generator process. */
export function startLoad(): Child<LoadRequest> {
  return new Child<LoadRequest>('./poll-load.js');
}
