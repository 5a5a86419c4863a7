import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';

export interface NpxProcess {
  url: string;
  npx: ChildProcess;
  stderr(): string;
  /** SIGKILLs whatever of the process group is left: a failed test leaves nothing running. */
  kill(): void;
}

/**
 * Runs `npx tasklatch ARGS` in `cwd` as a process manager would: npx is the process it knows.
 * npx gets a process group of its own (npm's shell and the server join it), so the test can tell
 * whether anything npx started is still alive after npx itself is gone.
 */
export function startUnderNpx(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<NpxProcess> {
  const npx = spawn('npx', ['--no-install', 'tasklatch', ...args], {
    cwd,
    detached: true,
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  npx.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const kill = () => {
    try {
      process.kill(-npx.pid!, 'SIGKILL');
    } catch {
      // The group is already empty.
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`npx tasklatch did not start: ${err}`));
    }, 60_000);
    npx.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (\S+)/.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      resolve({ url: match[1]!, npx, stderr: () => err, kill });
    });
    npx.on('exit', (code) => {
      if (/listening on/.test(out)) return;
      clearTimeout(timer);
      kill();
      reject(new Error(`npx tasklatch exited with ${code}: ${err}`));
    });
  });
}

/** The processes of a process group still alive: `pid command` lines. */
export function groupMembers(pgid: number): string[] {
  const lines = execFileSync('ps', ['-eo', 'pgid=,pid=,stat=,args='], { encoding: 'utf8' }).split('\n');
  return lines
    .map((l) => l.trim().split(/\s+/))
    .filter(([group, , stat]) => Number(group) === pgid && stat !== undefined && !stat.startsWith('Z'))
    .map(([, pid, , ...command]) => `${pid} ${command.join(' ')}`);
}

/**
 * Sends `signal` to the npx process only, then waits up to `ms` for every process of its group
 * to end. Returns what is left and whether the server's port still takes connections.
 */
export async function stopsWithItsLauncher(served: NpxProcess, signal: NodeJS.Signals, ms = 30_000): Promise<{ remaining: string[]; portOpen: boolean }> {
  const pgid = served.npx.pid!;
  served.npx.kill(signal);
  const end = Date.now() + ms;
  let remaining = groupMembers(pgid);
  while (remaining.length > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    remaining = groupMembers(pgid);
  }
  const portOpen = await fetch(served.url.replace(/\/mcp$/, '/healthz')).then(
    () => true,
    () => false,
  );
  return { remaining, portOpen };
}
