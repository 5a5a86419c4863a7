import { isExpired } from '../core/time.js';
import type { Millis, TaskRecord } from '../core/types.js';
import type { LookupOutcome, TaskRef } from '../store/types.js';

/**
 * How many records, about how many characters of their JSON request and result, and for how
 * long (ms of real time since the record was written or read) a cache keeps.
 */
export interface RecordCacheBounds {
  maxEntries: number;
  maxChars: number;
  /**
   * The one change no notification announces: a PostgreSQL writer that dies between its commit
   * and its notification. An entry is trusted this long at most, so that such a read trails by
   * no more than this: by default as long as a held `tasks/result` sleeps in the same case
   * (`TaskService.fallbackPollMs` on a notifying store). Each miss it causes is a store read on
   * a poll, so a shorter bound costs polls their tail latency.
   */
  maxAgeMs: number;
}

export const DEFAULT_CACHE_BOUNDS: RecordCacheBounds = { maxEntries: 10_000, maxChars: 32 * 1024 * 1024, maxAgeMs: 30_000 };

interface Entry {
  record: TaskRecord;
  chars: number;
  /** When the record was known to be the latest (performance.now(): real time, whatever the service's clock). */
  at: number;
}

/** A store read under way: spoiled by any change of its task (or a clear) before it returns. */
interface Fill {
  spoiled: boolean;
}

/**
 * This process's latest known record of recently read or written tasks, so that a `tasks/get`
 * poll answers without a store round trip. It is only as good as the store's change
 * notifications: `usable()` says whether every change of every process reaches this one now
 * (the service's `notifications` are up on a store that sends them); while it does not, the
 * cache answers nothing and forgets everything.
 *
 * Coherence, in order of arrival:
 * - a record this process wrote replaces the entry (`written`), unless a notification already
 *   named a later version (a commit of another process that overtook this one's answer);
 * - a write of this process that gives no record, and any other change notification, drops an
 *   entry at or below the notified version (`changed`): the one write that keeps a version, a
 *   lease given back, must drop it too;
 * - a store read spoiled by a change of its task while it ran is not kept: it may predate it.
 *
 * Authorization and expiry are judged on every hit: an entry answers only its own auth key and
 * only while unexpired by the stores' visibility rule (`isExpired`); anything else goes to the
 * store, which decides the miss as before. The lease fields of an entry may trail a heartbeat
 * (which changes no version and is never notified); no read answer shows them.
 */
export class RecordCache {
  private readonly entries = new Map<string, Entry>();
  /** The highest version a notification named per task: a record below it is never kept. */
  private readonly floors = new Map<string, number>();
  private readonly filling = new Map<string, Set<Fill>>();
  private chars = 0;

  constructor(
    private readonly usable: () => boolean,
    private readonly bounds: RecordCacheBounds = DEFAULT_CACHE_BOUNDS,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The caller's unexpired record from the cache, else from `load` (kept when nothing changed meanwhile). */
  async get(ref: TaskRef & { now: Millis }, load: () => Promise<LookupOutcome>): Promise<LookupOutcome> {
    if (!this.usable()) {
      if (this.entries.size > 0 || this.filling.size > 0) this.clear();
      return load();
    }
    const entry = this.entries.get(ref.taskId);
    const fresh = entry !== undefined && performance.now() - entry.at <= this.bounds.maxAgeMs && !isExpired(entry.record, ref.now);
    if (fresh && entry.record.authKey === ref.authKey) return { decision: 'FOUND', record: { ...entry.record } };
    // Another caller's entry answers nothing: the store decides, and the entry stays for its owner.
    if (entry !== undefined && !fresh) this.drop(ref.taskId);
    const fill: Fill = { spoiled: false };
    const fills = this.filling.get(ref.taskId) ?? new Set<Fill>();
    fills.add(fill);
    this.filling.set(ref.taskId, fills);
    try {
      const found = await load();
      if (found.decision === 'FOUND' && !fill.spoiled && this.usable()) this.keep(found.record);
      return found;
    } finally {
      fills.delete(fill);
      if (fills.size === 0 && this.filling.get(ref.taskId) === fills) this.filling.delete(ref.taskId);
    }
  }

  /** A record this process just wrote (its commit is done): the task's latest known fact. */
  written(record: TaskRecord): void {
    this.spoil(record.taskId);
    if (this.usable()) this.keep(record);
  }

  /**
   * A change known only by its task and version (another process's, or a write of this one
   * that gave no record): drops an entry the change may have outdated.
   */
  changed(taskId: string, version?: number, remote = false): void {
    this.spoil(taskId);
    if (remote && version !== undefined) this.raiseFloor(taskId, version);
    const entry = this.entries.get(taskId);
    if (entry !== undefined && (version === undefined || entry.record.version <= version)) this.drop(taskId);
  }

  /** Every task may have changed (notifications were lost, or are no longer heard). */
  clear(): void {
    for (const fills of this.filling.values()) for (const fill of fills) fill.spoiled = true;
    this.filling.clear();
    this.entries.clear();
    this.floors.clear();
    this.chars = 0;
  }

  private keep(record: TaskRecord): void {
    const floor = this.floors.get(record.taskId);
    if (floor !== undefined && record.version < floor) return;
    const known = this.entries.get(record.taskId);
    // Versions only grow: an older record arriving late never replaces a newer one.
    if (known !== undefined && known.record.version > record.version) return;
    const chars = sizeOf(record);
    if (chars > this.bounds.maxChars) return this.drop(record.taskId);
    this.drop(record.taskId);
    this.entries.set(record.taskId, { record: { ...record }, chars, at: performance.now() });
    this.chars += chars;
    while (this.entries.size > this.bounds.maxEntries || this.chars > this.bounds.maxChars) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.drop(oldest.value);
    }
  }

  private drop(taskId: string): void {
    const entry = this.entries.get(taskId);
    if (entry === undefined) return;
    this.entries.delete(taskId);
    this.chars -= entry.chars;
  }

  private spoil(taskId: string): void {
    const fills = this.filling.get(taskId);
    if (fills !== undefined) for (const fill of fills) fill.spoiled = true;
  }

  private raiseFloor(taskId: string, version: number): void {
    const floor = this.floors.get(taskId);
    if (floor !== undefined && floor >= version) return;
    this.floors.delete(taskId);
    this.floors.set(taskId, version);
    // As many floors as entries: a floor only matters for a write of this process still on its way back.
    if (this.floors.size > this.bounds.maxEntries) {
      const oldest = this.floors.keys().next();
      if (oldest.done !== true) this.floors.delete(oldest.value);
    }
  }
}

/** The characters an entry holds beyond its fixed fields: the JSON of its request and result. */
function sizeOf(record: TaskRecord): number {
  return 512 + jsonLength(record.request) + jsonLength(record.result) + (record.statusMessage?.length ?? 0);
}

function jsonLength(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return JSON.stringify(value).length;
}
