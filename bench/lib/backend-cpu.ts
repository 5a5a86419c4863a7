import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type pg from 'pg';

/**
 * CPU of this Node process and of the PostgreSQL backends serving one side of a comparison,
 * over a window. Linux only: the backends' CPU comes from /proc/<pid>/stat, so the server must
 * run on this machine (the local default does; an embedded server does too).
 */

/** How a side's backends are told apart in pg_stat_activity. */
export type BackendFilter = { applicationName: string } | { database: string };

/** CPU used over one window (ms), and how many backends it was read from. */
export interface CpuSample {
  nodeMs: number;
  pgMs: number;
  /** Backends read at the end of the window. */
  backends: number;
  /** Backends seen at the start that had gone at the end: their CPU in the window is missing. */
  lost: number;
}

let ticksPerSecond: number | null = null;

/** The kernel's clock ticks per second (utime/stime unit); 100 where getconf does not answer. */
function clockTicks(): number {
  if (ticksPerSecond === null) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** utime + stime of a process in clock ticks, or null once it has gone. */
function ticksOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (command) state ppid …": the command may hold spaces and parentheses; utime and stime
    // are fields 14 and 15, i.e. the 12th and 13th after the closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

async function backendPids(monitor: pg.Client, filter: BackendFilter): Promise<number[]> {
  const [column, value] = 'database' in filter ? ['datname', filter.database] : ['application_name', filter.applicationName];
  const rows = await monitor.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE ${column} = $1 AND pid <> pg_backend_pid()`, [value]);
  return rows.rows.map((r) => r.pid);
}

/**
 * Starts a window: reads Node's CPU and that of every backend matching `filter` now; the
 * returned function ends the window. A backend that connected during the window counts whole
 * (all its CPU was spent in it); one that disconnected is counted in `lost`.
 */
export async function startCpuWindow(monitor: pg.Client, filter: BackendFilter): Promise<() => Promise<CpuSample>> {
  const before = new Map<number, number>();
  for (const pid of await backendPids(monitor, filter)) {
    const t = ticksOf(pid);
    if (t !== null) before.set(pid, t);
  }
  const node = process.cpuUsage();
  return async () => {
    const used = process.cpuUsage(node);
    const pids = await backendPids(monitor, filter);
    let ticks = 0;
    let backends = 0;
    for (const pid of pids) {
      const t = ticksOf(pid);
      if (t === null) continue;
      ticks += t - (before.get(pid) ?? 0);
      backends++;
    }
    const lost = [...before.keys()].filter((pid) => !pids.includes(pid)).length;
    return { nodeMs: (used.user + used.system) / 1000, pgMs: (ticks * 1000) / clockTicks(), backends, lost };
  };
}

/** Sum of samples. */
export function addCpu(samples: readonly CpuSample[]): CpuSample {
  return samples.reduce((a, s) => ({ nodeMs: a.nodeMs + s.nodeMs, pgMs: a.pgMs + s.pgMs, backends: Math.max(a.backends, s.backends), lost: a.lost + s.lost }), {
    nodeMs: 0,
    pgMs: 0,
    backends: 0,
    lost: 0,
  });
}
