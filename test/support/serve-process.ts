import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, ROOT } from './cli.js';

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** What the process printed on stdout so far. */
  stdout(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `tasklatch serve --http 127.0.0.1:0 …` and waits for the URL it prints. */
export function spawnServe(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--http', '127.0.0.1:0', ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (\S+)/.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      resolve({
        url: match[1]!,
        child,
        stderr: () => err,
        stdout: () => out,
        stop: async (signal = 'SIGTERM') => {
          if (child.exitCode === null) child.kill(signal);
          return exited;
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${err}`));
    });
  });
}
