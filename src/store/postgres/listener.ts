import { coerceError } from '../../core/errors.js';
import pg from 'pg';
import type { TaskRecord } from '../../core/types.js';
import { openTerminalRecord } from '../change-record.js';
import { decodeProgress } from '../progress-event.js';
import type { ListenOptions, ProgressEvent } from '../types.js';
import { isStatementError } from './connection.js';
import { withLiterals } from './prepared.js';
import { PROGRESS_CHANNEL } from './progress.js';
import { Batcher, MemberQueue } from '../batcher.js';

/**
 * The channel every tasklatch writer notifies on; the payload is `schema:taskId:version`. The
 * version lets a receiver skip what it already knows (its own writes coming back) without a read.
 */
export const CHANGES_CHANNEL = 'tasklatch_changes';

/**
 * The channel of terminal records, each sent just ahead of its change (same statement, so
 * delivered just before it); the payload is `schema:` and the record's JSON (`encodeTerminalRecord`).
 * A channel of its own: a listener of changes alone (an older process) never mistakes a record
 * for a change, and still hears the change.
 */
export const RECORDS_CHANNEL = 'tasklatch_records';

const SQL = {
  /**
   * Several notifications in one statement, sent after the writes they announce committed
   * (`ChangeNotifier`): $1 the `taskId:version` of each.
   */
  notifyChanges: `SELECT pg_notify('${CHANGES_CHANNEL}', current_schema() || ':' || c) FROM unnest($1::text[]) AS c`,
  /**
   * Progress and changes in one statement, the progress first: $1 the channel of each
   * notification, $2 its payload. Notifications are delivered in the order they were sent, so a
   * task's last progress is heard before the change that ends it.
   */
  notifyProgressAndChanges: `SELECT pg_notify(n.c, current_schema() || ':' || n.p) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS n(c, p, i) ORDER BY n.i`,
} as const;

/** One notification: its channel, and its payload without the schema in front (the statement adds it). */
export interface Notice {
  channel: string;
  payload: string;
}

/**
 * `notices` as one statement with their payloads written in, for a message of its own (the
 * closing message of a write batch that announces its writes, write-batcher.ts): sent in order,
 * each as `schema:payload`; null when a payload has no literal (a NUL or a lone surrogate).
 */
export function noticesStatement(notices: readonly Notice[]): string | null {
  return withLiterals(SQL.notifyProgressAndChanges, [notices.map((n) => n.channel), notices.map((n) => n.payload)]);
}

/**
 * One dedicated connection that LISTENs for task changes written by any process on the same
 * database and schema. When the connection drops (a server restart) it reconnects with backoff
 * and then reports `null`: anything may have changed while it was away, so waiters look again.
 * A terminal change is reported with its record when the writer sent it (see `RECORDS_CHANNEL`).
 */
export class ChangeListener {
  private client: pg.Client | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  /**
   * The sealed record heard last, kept unopened until the change it was sent ahead of arrives:
   * opening one costs a decryption and a parse, and the process that wrote it (every process
   * hears its own notifications) knows the change already.
   */
  private held: string | null = null;

  private constructor(
    private readonly config: pg.ClientConfig,
    private readonly onChange: (taskId: string | null, version?: number, record?: TaskRecord) => void,
    private readonly onError: (error: Error) => void,
    private readonly onProgress: ((event: ProgressEvent) => void) | null,
    /** Opens the records sealed on `RECORDS_CHANNEL`; without it they are ignored (their changes still count). */
    private readonly recordKey: Buffer | null,
    private readonly knows: ((taskId: string, version: number) => boolean) | null,
  ) {}

  /** `onProgress`: also LISTENs for progress, on the same connection. */
  static async start(
    config: pg.ClientConfig,
    onChange: (taskId: string | null, version?: number, record?: TaskRecord) => void,
    onError: (error: Error) => void,
    onProgress: ((event: ProgressEvent) => void) | null = null,
    recordKey: Buffer | null = null,
    options: ListenOptions = {},
  ): Promise<ChangeListener> {
    const listener = new ChangeListener(config, onChange, onError, onProgress, recordKey, options.knows ?? null);
    await listener.connect();
    return listener;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('listener connection ended')));
    await client.connect();
    const schema = (await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]?.s ?? 'public';
    const prefix = `${schema}:`;
    client.on('notification', (message) => {
      if (message.channel === PROGRESS_CHANNEL && message.payload?.startsWith(prefix) === true) {
        const event = decodeProgress(message.payload.slice(prefix.length));
        if (event !== null) this.onProgress?.(event);
        return;
      }
      if (message.channel === RECORDS_CHANNEL && message.payload?.startsWith(prefix) === true) {
        // Its change comes next (same statement, delivered in order): opened then, if needed.
        this.held = this.recordKey === null ? null : message.payload.slice(prefix.length);
        return;
      }
      if (message.channel === CHANGES_CHANNEL && message.payload?.startsWith(prefix) === true) {
        const held = this.held;
        this.held = null;
        const rest = message.payload.slice(prefix.length);
        const colon = rest.lastIndexOf(':');
        const version = Number(rest.slice(colon + 1));
        if (colon <= 0 || !Number.isSafeInteger(version)) return this.onChange(rest);
        const taskId = rest.slice(0, colon);
        if (this.knows?.(taskId, version) === true) return;
        // The record counts only for the change it was sent ahead of.
        const record = held === null || this.recordKey === null ? null : openTerminalRecord(held, this.recordKey);
        if (record !== null && record.taskId === taskId && record.version === version) this.onChange(taskId, version, record);
        else this.onChange(taskId, version);
      }
    });
    await client.query(`LISTEN ${CHANGES_CHANNEL}; LISTEN ${RECORDS_CHANNEL}`);
    if (this.onProgress !== null) await client.query(`LISTEN ${PROGRESS_CHANNEL}`);
    this.client = client;
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.closed || this.client !== client) return;
    this.client = null;
    this.held = null;
    client.removeAllListeners('end');
    void client.end().catch(() => undefined);
    this.onError(error);
    this.reconnect(100);
  }

  private reconnect(delayMs: number): void {
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.closed) return;
      this.connect().then(
        () => this.onChange(null),
        (error: unknown) => {
          this.onError(error as Error);
          this.reconnect(Math.min(delayMs * 2, 5000));
        },
      );
    }, delayMs);
  }
}

/**
 * A committed change other processes are told of: the task and its version after the change,
 * and the record as committed when it is terminal and fits (`encodeTerminalRecord`).
 */
export interface Change {
  taskId: string;
  version: number;
  record?: string;
}

/**
 * Sends the change notifications of committed writes, batched: the changes that arrive while
 * one batch is in flight go out together in the next, as one statement on a connection that
 * commits asynchronously.
 *
 * Why not NOTIFY inside the writing transaction, as a rule: PostgreSQL takes one database-wide
 * lock for every notifying commit and holds it until the commit is flushed, so notifying writers
 * commit one at a time and never share a WAL flush; and the notification, formed from what the
 * write returned, costs the transaction a second round trip before its COMMIT. Sent after the
 * commit, the notification still follows the data it announces, and concurrent writes share one
 * statement. The exception is a write alone that ends a task admitted elsewhere (announce.ts):
 * no write of this process waits behind it (the other notifying commits of the cluster wait for
 * the lock through its one flush, as they would behind any synchronous notifying commit), and its
 * waiters, in other processes, are woken by the commit itself.
 *
 * A write does not wait for its notification: no receiver needs the notification before the
 * write's answer, because a receiver that subscribes reads the stored state first and hears of
 * every change committed after that read (the notification always follows the commit). Waiting
 * cost every write one more round trip before its own process could act on it (the in-process
 * worker claiming an admission), and sending it in the turn of the write's answer put its round
 * trip ahead of the write that process sends next (see its schedule). `drain` sends whatever is still queued, so a store that closes
 * loses no notification; a process that dies between a write's answer and its notification
 * leaves the other processes to their fallback reads and polls, as a death between the commit
 * and the notification always did. A notification that cannot be sent is reported, not thrown:
 * the write it follows is committed.
 */
export class ChangeNotifier {
  /** Changes, and encoded progress events (text), in the order they were queued. */
  private readonly batcher: Batcher<Change | string>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly onProblem: (message: string, fields: Record<string, unknown>) => void,
  ) {
    this.batcher = new Batcher<Change | string>(
      {
        // One turn of the event loop first: what the write lets this process do next (the
        // worker's terminal write after an admission it claimed, a held result's reply) reaches
        // its connection before the notification, which only other processes wait for; the
        // changes of that turn share the statement. What queues while a batch is out goes as
        // soon as it ends.
        schedule: { at: 'turns', turns: 0 },
        flush: (batch) => this.flush(batch),
        fail: (batch, error) => {
          const progress = batch.reduce((n, member) => (typeof member === 'string' ? n + 1 : n), 0);
          this.onProblem('change notifications not sent', { count: batch.length - progress, progress, reason: coerceError(error).message });
        },
      },
      new MemberQueue<Change | string>(),
    );
  }

  /**
   * Queues `changes` to be sent after the batch in flight, if any, and `progress` (encoded
   * events) ahead of them: a lost progress is acceptable, a late one only for its own task.
   */
  notify(changes: readonly Change[], progress: readonly string[] = []): void {
    for (const event of progress) this.batcher.add(event);
    for (const change of changes) this.batcher.add(change);
  }

  /** Whether every notification queued so far has been sent (or its sending failed and was reported). */
  idle(): boolean {
    return !this.batcher.busy;
  }

  /** Resolves once every change queued so far is sent (or its sending failed and was reported). */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async flush(members: Array<Change | string>): Promise<void> {
    const progress: string[] = [];
    const changes: Change[] = [];
    for (const member of members) {
      if (typeof member === 'string') progress.push(member);
      else changes.push(member);
    }
    const batch = latestPerTask(changes);
    const progressCount = progress.length;
    const notices = noticesOf(progress, batch);
    const channels = notices.map((n) => n.channel);
    const sent = notices.map((n) => n.payload);
    try {
      await this.send(channels, sent);
    } catch (error) {
      // One notification the server refused (a payload too long) is not sent; the others
      // are, each on its own and in order. An outage loses them all, as it would lose one.
      if (sent.length > 1 && isStatementError(error)) await this.sendOneByOne(channels, sent);
      else this.onProblem('change notifications not sent', { count: batch.length, progress: progressCount, reason: coerceError(error).message });
    }
  }

  /** One statement for every notification; named, so parsed and planned once per connection of the audit pool. */
  private async send(channels: readonly string[], sent: readonly string[]): Promise<void> {
    if (channels.every((channel) => channel === CHANGES_CHANNEL)) {
      await this.pool.query({ name: 'tasklatch_notify_changes', text: SQL.notifyChanges, values: [sent] });
    } else {
      await this.pool.query({ name: 'tasklatch_notify_progress', text: SQL.notifyProgressAndChanges, values: [channels, sent] });
    }
  }

  private async sendOneByOne(channels: readonly string[], sent: readonly string[]): Promise<void> {
    for (const [i, payload] of sent.entries()) {
      try {
        await this.send([channels[i] as string], [payload]);
      } catch (error) {
        this.onProblem('change notification not sent', { channel: channels[i], reason: coerceError(error).message });
      }
    }
  }
}

/**
 * The notifications of encoded `progress` and of `changes`, in the order they go out: the
 * progress first (a task's last progress is heard before the change that ends it), then each
 * change with its record just ahead of it.
 */
export function noticesOf(progress: readonly string[], changes: readonly Change[]): Notice[] {
  const notices: Notice[] = progress.map((payload) => ({ channel: PROGRESS_CHANNEL, payload }));
  for (const c of changes) {
    if (c.record !== undefined) notices.push({ channel: RECORDS_CHANNEL, payload: c.record });
    notices.push({ channel: CHANGES_CHANNEL, payload: `${c.taskId}:${c.version}` });
  }
  return notices;
}

/**
 * The changes of one batch with each task's latest only (its highest version; the later of two
 * equal ones), in the order of those latest: a receiver reads the stored state of a task it
 * hears of, so an earlier version of the same batch would only wake it once more (an admission
 * the local worker claimed in its transaction is two changes, versions 1 and 2). A terminal
 * record stays with its change: nothing follows a terminal version.
 */
export function latestPerTask(changes: readonly Change[]): Change[] {
  if (changes.length < 2) return changes as Change[];
  const latest = new Map<string, number>();
  changes.forEach((c, i) => {
    const at = latest.get(c.taskId);
    if (at === undefined || (changes[at] as Change).version <= c.version) latest.set(c.taskId, i);
  });
  if (latest.size === changes.length) return changes as Change[];
  const kept = new Set(latest.values());
  return changes.filter((_, i) => kept.has(i));
}
