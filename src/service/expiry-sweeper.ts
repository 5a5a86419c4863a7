import type { Millis } from '../core/types.js';
import type { TaskStore } from '../store/types.js';

export interface SweeperOptions {
  /** Time between sweeps (ms). */
  intervalMs?: number;
  /** Records deleted per statement: bounded, so a sweep never holds long locks. */
  batchSize?: number;
  /** Batches per sweep at most; the rest waits for the next sweep. */
  maxBatches?: number;
  onError?: (error: unknown) => void;
}

/**
 * Deletes expired records in bounded batches. Every operation already treats an expired record
 * as gone; this only reclaims the space. Several processes may sweep one store at once.
 */
export class ExpirySweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private readonly intervalMs: number;
  private readonly batchSize: number;
  private readonly maxBatches: number;

  constructor(
    private readonly store: TaskStore,
    private readonly clock: () => Millis,
    private readonly options: SweeperOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 60_000;
    this.batchSize = options.batchSize ?? 500;
    this.maxBatches = options.maxBatches ?? 100;
  }

  /** Sweeps every `intervalMs` until `stop()`; the timer never keeps the process alive. */
  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      if (this.running !== null) return;
      this.running = this.sweepOnce()
        .catch((error: unknown) => {
          this.options.onError?.(error);
          return 0;
        })
        .finally(() => (this.running = null));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One sweep: batches until one comes back short (or `maxBatches`); returns records deleted. */
  async sweepOnce(): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.maxBatches; i++) {
      const deleted = await this.store.sweepExpired({ now: this.clock(), limit: this.batchSize });
      total += deleted;
      if (deleted < this.batchSize) break;
    }
    return total;
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
