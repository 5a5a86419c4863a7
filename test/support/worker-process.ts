import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, ROOT } from './cli.js';

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves once the worker prints that it runs; rejects, with its stderr, if it exits first. */
  ready: Promise<void>;
  exited: Promise<number | null>;
  stderr(): string;
  /** Sends `signal` (SIGTERM: drain) unless it has exited, and waits for its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `tasklatch worker …args` with TASKLATCH_LOG_LEVEL=warn and `env` on top of this process's. */
export function spawnWorker(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): WorkerProcess {
  const child = spawn(process.execPath, [BIN, 'worker', ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/running/.test(out)) resolve();
    });
    void exited.then((code) => reject(new Error(`worker exited with ${code} before it ran: ${err}`)));
  });
  // A caller that never waits for `ready` gets no unhandled rejection when its worker exits.
  ready.catch(() => undefined);
  return {
    child,
    ready,
    exited,
    stderr: () => err,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
