import type { ChildProcess } from 'node:child_process';
import { spawnTasklatch } from './cli.js';

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
  const { child, exited, stdout, stderr } = spawnTasklatch(['serve', '--http', '127.0.0.1:0', ...args], options);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr()}`)), 60_000);
    child.stdout!.on('data', () => {
      const match = /listening on (\S+)/.exec(stdout());
      if (match === null) return;
      clearTimeout(timer);
      resolve({
        url: match[1]!,
        child,
        stderr,
        stdout,
        stop: async (signal = 'SIGTERM') => {
          if (child.exitCode === null) child.kill(signal);
          return exited;
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${stderr()}`));
    });
  });
}
