import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { GuardContext } from '../service/guard-context.js';
import type { TaskObserver } from '../service/task-events.js';
import { TASK_STATUSES } from '../core/types.js';
import { StoreSnapshot } from './store-snapshot.js';

export interface TaskMetricsOptions {
  /** Most often the store is read for the task gauges (ms, default 10000): a scrape never costs more. */
  storeReadIntervalMs?: number;
  /** How long a scrape waits for that read before it answers with the last one (ms, default 2000). */
  storeReadTimeoutMs?: number;
  /** Also the process metrics (CPU, memory, event loop lag) under `tasklatch_process_…` (default true). */
  processMetrics?: boolean;
  /** How long a silent worker counts as live in `tasklatch_worker_versions` (ms, default 30000: the workers' default). */
  versionSilenceMs?: number;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const STORE_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * The Prometheus metrics of one process (prom-client, in a registry of its own). The counters
 * and histograms are fed by the guard's events (`GuardContext.events`), where the decisions are
 * made; the task gauges and the abandoned count are read from the store when scraped, at most
 * once per `storeReadIntervalMs`, so that any number of scrapers costs the store one read.
 */
export class TaskMetrics {
  readonly registry = new Registry();
  private readonly detach: () => void;

  constructor(context: GuardContext, options: TaskMetricsOptions = {}) {
    const registers = [this.registry];
    const counter = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers });
    const admissions = counter('tasklatch_admissions_total', 'tools/call decisions (create surface) by tool and decision code', ['tool', 'decision']);
    const decisions = counter('tasklatch_decisions_total', 'every decision of the guard, as in the audit trail, by surface and decision code', [
      'surface',
      'decision',
    ]);
    const ended = counter('tasklatch_tasks_ended_total', 'tasks that reached a terminal status through this process, by tool and status', ['tool', 'status']);
    const claims = counter('tasklatch_claims_total', 'tasks claimed by this process’s worker');
    const takeovers = counter('tasklatch_lease_takeovers_total', 'claims of a task an earlier claim did not finish (its lease lapsed, or was given back)');
    const heartbeats = counter('tasklatch_heartbeat_failures_total', 'lease renewals that failed: lost (the fence moved) or error (the store did not answer)', [
      'reason',
    ]);
    const storeErrors = counter('tasklatch_store_errors_total', 'store operations that failed, by operation', ['operation']);
    const histogram = (name: string, help: string, labelNames: string[], buckets: number[]) => new Histogram({ name, help, labelNames, buckets, registers });
    const claimLatency = histogram(
      'tasklatch_claim_latency_seconds',
      'from admission to the first claim of a task (how long work waits for a worker)',
      [],
      SECONDS,
    );
    const runDuration = histogram(
      'tasklatch_run_duration_seconds',
      'one handler run, from claim to its end, by tool and outcome',
      ['tool', 'outcome'],
      SECONDS,
    );
    const stepDuration = histogram(
      'tasklatch_step_duration_seconds',
      'one attempt of a durable step (ctx.step.do) run by this process, by tool and outcome: completed, retrying (it threw, a retry follows), failed',
      ['tool', 'outcome'],
      SECONDS,
    );
    const stepRetries = counter(
      'tasklatch_step_retries_total',
      'durable step attempts that threw and left a retry (a durable wait, then the next attempt), by tool',
      ['tool'],
    );
    const storeLatency = histogram('tasklatch_store_latency_seconds', 'store round trips, by operation', ['operation'], STORE_SECONDS);
    const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers });
    const results = gauge('tasklatch_results_waiting', 'tasks/result requests held open until their task ends');
    const subscriptions = gauge('tasklatch_subscriptions_open', 'task subscriptions (2026-07-28 streams) open');

    const snapshot = new StoreSnapshot(context, options.storeReadIntervalMs ?? 10_000, options.storeReadTimeoutMs ?? 2_000, options.versionSilenceMs);
    const fromStore = (name: string, help: string, labelNames: string[], fill: (g: Gauge, s: NonNullable<StoreSnapshot['last']>) => void) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          const s = await snapshot.read();
          if (s !== null) fill(this, s);
        },
      });
    fromStore('tasklatch_tasks', 'stored tasks by status (read from the store, every tenant)', ['status'], (g, s) => {
      for (const status of TASK_STATUSES) g.set({ status }, s.stats.byStatus[status]);
    });
    fromStore(
      'tasklatch_tasks_sleeping',
      'tasks asleep in a durable sleep or a retry’s wait, holding no worker (read from the store, every tenant)',
      [],
      (g, s) => g.set(s.sleeping),
    );
    // One series per live (app, tool, version): as many as the fleet runs, gone with its last worker.
    fromStore(
      'tasklatch_worker_versions',
      'live workers by app, tool and the tool version they run (announced in the store, any process)',
      ['app', 'tool', 'version'],
      (g, s) => {
        g.reset();
        for (const v of s.workerVersions.values()) g.set({ app: v.app, tool: v.tool, version: v.version }, v.workers);
      },
    );
    fromStore(
      'tasklatch_tasks_parked',
      'tasks parked because their handler disagrees with their journal (a deploy changed it), working and retried with backoff, by app and tool (read from the store, every tenant)',
      ['app', 'tool'],
      (g, s) => {
        // A pair with no parked task left goes from the output rather than staying at its last count.
        g.reset();
        for (const row of s.parked) g.set({ app: row.app, tool: row.tool ?? '' }, row.count);
      },
    );
    fromStore('tasklatch_tasks_expired_unswept', 'records past their ttl not yet deleted by the sweeper', [], (g, s) => g.set(s.stats.expiredAwaitingSweep));
    fromStore('tasklatch_outbox_open', 'outbox entries not yet closed (tasks waiting for or held by a worker)', [], (g, s) => g.set(s.stats.pendingDispatch));
    fromStore('tasklatch_oldest_working_task_age_seconds', 'age of the oldest unexpired working task (0: none)', [], (g, s) =>
      g.set(s.stats.oldestWorking === null ? 0 : Math.max(0, (s.at - s.stats.oldestWorking.createdAt) / 1000)),
    );
    new Counter({
      name: 'tasklatch_tasks_abandoned_total',
      help: 'tasks ended failed after using up their attempts, by any process on this store, since this process started (read from the audit trail)',
      registers,
      async collect() {
        const s = await snapshot.read();
        if (s === null) return;
        this.reset();
        this.inc(s.abandoned);
      },
    });
    new Gauge({
      name: 'tasklatch_store_read_age_seconds',
      help: 'how old the store read behind the task gauges is (grows while the store does not answer)',
      registers,
      collect() {
        this.set(snapshot.ageSeconds());
      },
    });
    // The first read at once: it also fixes where the abandoned count starts.
    void snapshot.read();
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'tasklatch_process_' });

    // Labelled children looked up once: prom-client hashes the label object on every call otherwise.
    const children = new Map<string, unknown>();
    const child = <T>(key: string, make: () => T): T => {
      if (!children.has(key)) children.set(key, make());
      return children.get(key) as T;
    };
    const observer: TaskObserver = {
      decision: (e) => {
        child(`d\n${e.surface}\n${e.decision}`, () => decisions.labels(e.surface, e.decision)).inc();
        if (e.surface === 'create') admissions.inc({ tool: e.tool ?? '', decision: e.decision });
      },
      taskEnded: (e) => ended.inc({ tool: e.tool ?? '', status: e.status }),
      claimed: (e) => {
        claims.inc();
        if (e.takeover) takeovers.inc();
        if (e.waitedMs !== null) claimLatency.observe(Math.max(0, e.waitedMs) / 1000);
      },
      runEnded: (e) => runDuration.observe({ tool: e.tool ?? '', outcome: e.outcome }, e.durationMs / 1000),
      stepRan: (e) => {
        stepDuration.observe({ tool: e.tool ?? '', outcome: e.outcome }, e.durationMs / 1000);
        if (e.outcome === 'retrying') stepRetries.inc({ tool: e.tool ?? '' });
      },
      heartbeatFailed: (e) => heartbeats.inc({ reason: e.lost ? 'lost' : 'error' }),
      storeCall: (operation, ms, failed) => {
        child(`s\n${operation}`, () => storeLatency.labels(operation)).observe(ms / 1000);
        if (failed) storeErrors.inc({ operation });
      },
      waiting: (kind, delta) => (kind === 'result' ? results : subscriptions).inc(delta),
    };
    this.detach = context.events.add(observer);
  }

  /** The exposition text and its content type, for `GET /metrics`. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** Stops listening to the guard's events. */
  close(): void {
    this.detach();
  }
}
