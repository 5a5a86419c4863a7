import { DEFAULT_VERSION_SILENCE_MS } from '../core/version-rules.js';
import type { GuardContext } from '../service/guard-context.js';
import type { TaskStats } from '../store/task-operations.js';
import type { ParkedCount } from '../store/task-steps.js';

/** One read of the store for the gauges: its counts, the abandoned tasks seen since start, when. */
export interface Snapshot {
  stats: TaskStats;
  /** Tasks asleep in a durable sleep or a retry's wait (`sleepingTasks`). */
  sleeping: number;
  /** Tasks parked by a journal mismatch, by app and tool (`parkedTasks`). */
  parked: ParkedCount[];
  abandoned: number;
  /** Live workers per app, tool and version (`liveVersions`), as `app\ntool\nversion` → count. */
  workerVersions: Map<string, { app: string; tool: string; version: string; workers: number }>;
  at: number;
}

/**
 * The store's counts for the metrics, read at most once per `intervalMs` however often the
 * metrics are scraped, and never waited on for longer than `timeoutMs` (a slow or lost store
 * answers with the last read; `ageSeconds` says how old it is). The abandoned count follows
 * the audit trail from where it stood at the first read.
 */
export class StoreSnapshot {
  last: Snapshot | null = null;
  private reading: Promise<void> | null = null;
  private position: number | null = null;
  private abandoned = 0;

  constructor(
    private readonly context: Pick<GuardContext, 'store' | 'clock' | 'timed' | 'started'>,
    private readonly intervalMs: number,
    private readonly timeoutMs: number,
    /** How long a silent worker's announcement counts (`DEFAULT_VERSION_SILENCE_MS` unless the workers use another). */
    private readonly versionSilenceMs = DEFAULT_VERSION_SILENCE_MS,
  ) {}

  async read(): Promise<Snapshot | null> {
    const fresh = this.last !== null && Date.now() - this.last.at < this.intervalMs;
    if (!fresh) {
      this.reading ??= this.refresh().finally(() => (this.reading = null));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.reading, new Promise((resolve) => (timer = setTimeout(resolve, this.timeoutMs)))]);
      clearTimeout(timer);
    }
    return this.last;
  }

  ageSeconds(): number {
    return this.last === null ? 0 : (Date.now() - this.last.at) / 1000;
  }

  private async refresh(): Promise<void> {
    try {
      const { context } = this;
      const { store } = context;
      const now = context.clock();
      const stats = await context.timed('taskStats', context.started(), store.taskStats({ now }));
      const sleeping = await context.timed('sleepingTasks', context.started(), store.sleepingTasks({ now }));
      const parked = await context.timed('parkedTasks', context.started(), store.parkedTasks({ now }));
      const tally = await context.timed('auditTally', context.started(), store.auditTally({ after: this.position }));
      const announced = await context.timed('liveVersions', context.started(), store.liveVersions({ now, silenceMs: this.versionSilenceMs }));
      if (this.position !== null) this.abandoned += tally.abandoned;
      this.position = tally.position;
      const workerVersions: Snapshot['workerVersions'] = new Map();
      for (const { app, tool, version } of announced) {
        const key = `${app}\n${tool}\n${version}`;
        const seen = workerVersions.get(key);
        if (seen === undefined) workerVersions.set(key, { app, tool, version, workers: 1 });
        else seen.workers++;
      }
      this.last = { stats, sleeping, parked, abandoned: this.abandoned, workerVersions, at: Date.now() };
    } catch {
      // The last read stands; the store's own errors are counted by tasklatch_store_errors_total.
    }
  }
}
