import { spawn, type ChildProcess } from 'node:child_process';
import { BIN } from '../support/cli.js';

/** One long-running tasklatch process the chaos run may kill and restart. */
export class Slot {
  child: ChildProcess | null = null;
  /** Kills we did ourselves; any other SIGKILL death was the process's own (crash switch). */
  kills = 0;
  selfCrashes = 0;
  /** Deaths that were neither our kill nor the crash switch (a bug unless PostgreSQL was down). */
  otherExits: string[] = [];
  restarts = 0;
  private expectedExit = false;
  private stopped = false;
  private ready: Promise<void> = Promise.resolve();
  private stderrTail = '';

  constructor(
    readonly name: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly readyPattern: RegExp,
    /** Called when the process dies on its own, so the run can restart it. */
    private readonly onUnexpectedExit: (slot: Slot) => void,
  ) {}

  /** Starts the process unless it runs already (a crash restart and a chaos restart may race). */
  start(): Promise<void> {
    if (this.child !== null) return this.ready;
    this.expectedExit = false;
    const child = spawn(process.execPath, [BIN, ...this.args], {
      env: { ...process.env, TASKLATCH_LOG_LEVEL: 'warn', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stderr.on('data', (d: Buffer) => (this.stderrTail = (this.stderrTail + d.toString()).slice(-4000)));
    this.ready = new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start: ${this.stderrTail}`)), 30_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (this.readyPattern.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        if (this.child === child) this.child = null;
        if (!this.expectedExit) {
          if (signal === 'SIGKILL') this.selfCrashes++;
          else this.otherExits.push(`${this.name} ${code ?? signal}: ${this.stderrTail.slice(-3000)}`);
          this.onUnexpectedExit(this);
        }
        reject(new Error(`${this.name} exited (${code ?? signal})`));
      });
    });
    return this.ready;
  }

  get alive(): boolean {
    return this.child !== null;
  }

  /** SIGKILL: no drain, no cleanup, leases left to expire. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    this.expectedExit = true;
    this.kills++;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async restart(): Promise<void> {
    if (this.child !== null || this.stopped) return;
    this.restarts++;
    await this.start().catch(() => undefined);
  }

  /** SIGTERM and wait (a clean stop: drain); SIGKILL after `graceMs`. Returns the exit code. */
  async stop(graceMs = 20_000): Promise<number | null> {
    this.stopped = true;
    // A process still starting (a crash restart just before the stop) has no SIGTERM handler
    // yet and would die of the signal itself: let it come up first.
    if (this.child !== null) await this.ready.catch(() => undefined);
    const child = this.child;
    if (child === null) return 0;
    this.expectedExit = true;
    const exited = new Promise<number | null>((r) => child.once('exit', (code, signal) => r(code ?? (signal === null ? null : -1))));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  stderr(): string {
    return this.stderrTail;
  }
}
