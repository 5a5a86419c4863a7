import { coerceError } from '../core/errors.js';
import { decideVersionGrants, DEFAULT_VERSION_SILENCE_MS, type VersionGrants } from '../core/version-rules.js';
import type { WorkerPort } from '../service/worker-port.js';
import type { RunLogger } from './run-events.js';

/** How a worker announces its tools' versions (`WorkerOptions.versions`). */
export interface VersionAnnounceOptions {
  /**
   * How long an announcement counts after its last renewal (default 30 s): a worker that stops
   * renewing (killed, partitioned) is taken for gone after this, and the newest version's workers
   * then take its version's tasks. Every worker of one app should use the same value.
   */
  silenceMs?: number;
  /** How often the announcement is renewed and the live versions read again (default a quarter of `silenceMs`, at most 10 s). */
  renewMs?: number;
}

/**
 * A worker's side of tool versions: announces the version of each tool it runs when the worker
 * starts, renews the announcement every `renewMs`, reads the app's live announcements each time
 * and keeps the grants they give (`decideVersionGrants`), which each claim passes to the store
 * (`ClaimInput.versions`); withdraws the announcement when the worker stops. Until the first read
 * the grants are its own version alone, so a worker that cannot reach the store never takes
 * another version's task.
 */
export class VersionAnnouncer {
  /** What the worker's claims may take, by tool: the grants of the latest read. */
  grants: VersionGrants;
  private readonly silenceMs: number;
  private readonly renewMs: number;
  private timer: NodeJS.Timeout | null = null;
  private renewal: Promise<void> | null = null;
  private failures = 0;
  private stopped = false;
  /** Whether it announced since it was made or last stopped: a worker never started withdraws nothing. */
  private started = false;

  constructor(
    private readonly port: WorkerPort,
    private readonly app: string,
    private readonly workerId: string,
    /** Tool → the version this worker runs. */
    private readonly own: ReadonlyMap<string, string>,
    private readonly logger: RunLogger,
    /** Called when a read changed the grants: tasks the worker could not take before may be due. */
    private readonly onChange: () => void,
    options: VersionAnnounceOptions = {},
  ) {
    this.silenceMs = options.silenceMs ?? DEFAULT_VERSION_SILENCE_MS;
    this.renewMs = options.renewMs ?? Math.max(10, Math.min(10_000, Math.floor(this.silenceMs / 4)));
    this.grants = new Map([...own].map(([tool, version]) => [tool, { own: version, newest: false, live: [version] }]));
  }

  /**
   * Announces at once and then every `renewMs`; resolves once the first announcement and read are
   * done or failed, so that the worker's first claim goes with the grants they give (and a change
   * of grants is news only after that).
   */
  start(): Promise<void> {
    this.stopped = false;
    if (this.own.size === 0) return Promise.resolve();
    this.started = true;
    const first = this.renew().finally(() => {
      this.renewal = null;
      this.schedule(this.renewMs);
    });
    this.renewal = first;
    return first;
  }

  /** Stops renewing and withdraws the announcement (best effort: otherwise it lapses after `silenceMs`). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.renewal;
    if (!this.started) return;
    this.started = false;
    try {
      await this.port.withdrawVersions({ app: this.app, workerId: this.workerId });
    } catch (error) {
      this.logger.emit('worker:versionsFailed', { err: coerceError(error), failures: ++this.failures });
    }
  }

  /** Tool → the version this worker runs, as a plain object (for its start line). */
  versions(): Record<string, string> {
    return Object.fromEntries(this.own);
  }

  private schedule(ms: number): void {
    if (this.stopped || this.own.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.renewal = this.renew().finally(() => {
        this.renewal = null;
        this.schedule(this.renewMs);
      });
    }, ms);
    // A timer must not keep a closing process alive.
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    try {
      const versions = [...this.own].map(([tool, version]) => ({ tool, version }));
      // Rows silent ten times longer than a worker may be are of workers long dead.
      await this.port.announceVersions({ app: this.app, workerId: this.workerId, versions, forgetAfterMs: this.silenceMs * 10 });
      const { now, announcements } = await this.port.liveVersions({ app: this.app, silenceMs: this.silenceMs });
      this.failures = 0;
      const grants = decideVersionGrants(this.own, announcements, now, this.silenceMs);
      const changed = !sameGrants(this.grants, grants);
      this.grants = grants;
      if (changed && !this.stopped) this.onChange();
    } catch (error) {
      this.logger.emit('worker:versionsFailed', { err: coerceError(error), failures: ++this.failures });
    }
  }
}

function sameGrants(a: VersionGrants, b: VersionGrants): boolean {
  if (a.size !== b.size) return false;
  for (const [tool, grant] of a) {
    const other = b.get(tool);
    if (other === undefined || other.own !== grant.own || other.newest !== grant.newest) return false;
    if (other.live.length !== grant.live.length || other.live.some((v, i) => v !== grant.live[i])) return false;
  }
  return true;
}
