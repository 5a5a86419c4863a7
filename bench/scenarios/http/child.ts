import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A forked bench process answering requests over IPC, one reply per request id. */
export class Child<Request> {
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 0;
  private readonly process: ChildProcess;

  /** `script` is a sibling module of this file (compiled .js); `execArgv` adds node flags such as --cpu-prof. */
  constructor(script: string, execArgv: readonly string[] = []) {
    this.process = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
      execArgv: ['--expose-gc', ...execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.process.on('message', (message: { id: number; value?: unknown; error?: string }) => {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.value);
    });
    this.process.on('exit', (code) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`${script} exited (${code}) with a request open`));
      this.pending.clear();
    });
  }

  ask<T>(request: Request): Promise<T> {
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: (value) => resolve(value as T), reject });
      this.process.send({ id, request });
    });
  }

  /** Asks it to stop and waits for its exit (a --cpu-prof profile is written then). */
  async stop(): Promise<void> {
    if (this.process.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.process.once('exit', () => resolve()));
    await this.ask({ op: 'stop' } as Request).catch(() => undefined);
    await exited;
  }
}
