import { Worker } from 'node:worker_threads';
import type { SqliteDatabase } from './driver.js';
import { sqliteDriver } from './connection.js';
import { onCommit } from './transactions.js';

/**
 * Checkpoints of the SQLite store's write-ahead log, run on a thread of their own.
 *
 * In WAL mode a commit appends pages to the log, and a checkpoint copies them into the database
 * file and syncs both files. SQLite runs it inside the commit that takes the log past 1,000 pages
 * (`wal_autocheckpoint`): on the store's one connection, that is the process's JavaScript thread,
 * and every request in flight waits through the copy and two `fsync`s. Under admissions on one
 * machine's disk that was a checkpoint every 40 ms, each holding the thread 5 to 10 ms: a
 * quarter of the time.
 *
 * Here one worker thread per process (started at the first commit of any store, shared by every
 * store file) keeps a connection of its own to each file and runs a `PASSIVE` checkpoint there
 * shortly after commits: it copies what is committed without taking the write lock, so writers
 * and readers go on. The store's connection keeps an automatic checkpoint, at 4,000 pages
 * instead of 1,000, as a bound: while commits never stop, the log only starts over after a
 * checkpoint that caught up with the last commit, which is the store's own at that size (then
 * short: the thread copied nearly all of it). When the thread cannot start, open the file or
 * checkpoint it, the connection goes back to SQLite's default and the store reports it once.
 *
 * The thread is written out below as a short CommonJS program (`eval`), not a module file:
 * the store runs from its compiled files and from its TypeScript sources alike (the test
 * suite), and a worker needs a path it can load in both.
 */

/** Commits are let gather this long (ms) before the thread checkpoints them. */
const CHECKPOINT_DELAY_MS = 25;
/** The store's connection checkpoints itself only past this many pages of log (SQLite's default: 1,000). */
export const BOUND_PAGES = 4_000;
const DEFAULT_PAGES = 1_000;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const open =
  workerData.driver === 'node:sqlite'
    ? (() => {
        // Its first load warns that it is experimental (Node 22); the store's thread said so already.
        process.removeAllListeners('warning');
        const { DatabaseSync } = require('node:sqlite');
        const { existsSync } = require('node:fs');
        return (path) => {
          // It has no fileMustExist: a file gone from under the store is not made again, empty.
          if (!existsSync(path)) throw new Error('unable to open database file: ' + path + ' does not exist');
          return new DatabaseSync(path);
        };
      })()
    : (() => {
        const Database = require(workerData.module);
        return (path) => new Database(path, { fileMustExist: true, timeout: 0 });
      })();
const files = new Map();
const post = (message) => parentPort.postMessage(message);
const errorOf = (error) => String((error && error.message) || error);
function run(id) {
  const file = files.get(id);
  if (file === undefined) return;
  file.timer = null;
  try {
    const got = file.checkpoint.get();
    post({ type: 'done', id, busy: got.busy, log: got.log, checkpointed: got.checkpointed });
  } catch (error) {
    post({ type: 'error', id, message: errorOf(error) });
  }
}
parentPort.on('message', (message) => {
  const { type, id } = message;
  if (type === 'open') {
    try {
      const db = open(message.path);
      db.exec('PRAGMA busy_timeout = 0; PRAGMA synchronous = NORMAL');
      files.set(id, { db, checkpoint: db.prepare('PRAGMA wal_checkpoint(PASSIVE)'), timer: null });
    } catch (error) {
      post({ type: 'error', id, message: errorOf(error) });
    }
  } else if (type === 'kick') {
    const file = files.get(id);
    if (file !== undefined && file.timer === null) file.timer = setTimeout(run, workerData.delayMs, id);
  } else if (type === 'close') {
    const file = files.get(id);
    files.delete(id);
    if (file !== undefined) {
      if (file.timer !== null) clearTimeout(file.timer);
      try {
        file.db.close();
      } catch {}
    }
    post({ type: 'closed', id });
  }
});
`;

type FromWorker =
  | { type: 'closed'; id: number }
  | { type: 'done'; id: number; busy: number; log: number; checkpointed: number }
  | { type: 'error'; id: number; message: string };

/** What one checkpoint of the thread found: pages in the log, and of them copied into the file. */
export interface CheckpointRun {
  busy: boolean;
  log: number;
  checkpointed: number;
}

/** The process's checkpoint thread, shared by every file (one per process, started when first needed). */
class CheckpointThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly files = new Map<number, BackgroundCheckpoints>();
  /** Closes asked for and not yet answered: while there are any, the thread keeps the process alive. */
  private closes = 0;

  register(file: BackgroundCheckpoints): number {
    const id = this.nextId++;
    this.files.set(id, file);
    return id;
  }

  send(message: { type: 'open'; id: number; path: string } | { type: 'kick'; id: number }): void {
    this.started().postMessage(message);
  }

  /** Asks the thread to close its connection to file `id`; `closed` once it did (or the thread is gone). */
  close(id: number, closed: Promise<void>): Promise<void> {
    const worker = this.worker;
    // No thread: its connections went with it, and none is started to close one.
    if (worker === null) {
      this.files.delete(id);
      return Promise.resolve();
    }
    if (this.closes++ === 0) worker.ref();
    worker.postMessage({ type: 'close', id });
    return closed.finally(() => {
      this.files.delete(id);
      if (--this.closes === 0) this.worker?.unref();
    });
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const driver = sqliteDriver();
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver: driver.name, module: driver.module ?? null, delayMs: CHECKPOINT_DELAY_MS },
      // Not the process's flags: `--input-type=module` would make the program above a module, and
      // `--import` hooks (tracing, say) have nothing to do on this thread.
      execArgv: [],
    });
    worker.on('message', (message: FromWorker) => this.files.get(message.id)?.heard(message));
    const gone = (reason: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const files = [...this.files.values()];
      this.files.clear();
      for (const file of files) file.lost(reason);
    };
    worker.on('error', (error) => gone(`the checkpoint thread failed: ${error.message}`));
    worker.on('exit', (code) => gone(`the checkpoint thread exited (code ${code})`));
    // After the listeners, which would hold it again: a process that forgets to close its store
    // still exits; one that awaits a close waits for it (`closes`).
    if (this.closes === 0) worker.unref();
    this.worker = worker;
    return worker;
  }
}

const thread = new CheckpointThread();

/**
 * The checkpoints of one store's file, run by the process's checkpoint thread. `committed()`
 * after each commit of the store's connection; `close()` before the connection closes (the
 * thread's connection goes first, so the store's close is the file's last and folds the log).
 */
export class BackgroundCheckpoints {
  private id: number | null = null;
  /** A kick was sent and its checkpoint has not reported yet. */
  private kicked = false;
  /** A commit came after the kick that is out: the file needs another checkpoint when it reports. */
  private again = false;
  private closing: Promise<void> | null = null;
  private resolveClosed: (() => void) | null = null;
  private failed = false;
  private readonly waiting: Array<{ resolve: (run: CheckpointRun) => void; reject: (error: Error) => void }> = [];

  constructor(
    private readonly db: SqliteDatabase,
    private readonly onProblem: (message: string, fields: Record<string, unknown>) => void,
  ) {
    onCommit(db, () => this.committed());
  }

  /**
   * After a commit of the store's connection: the thread checkpoints soon (the first commit starts
   * it all). Never throws: the commit it follows is stored, and a thread that cannot be started or
   * told is this file's failure, not the write's.
   */
  committed(): void {
    if (this.failed || this.closing !== null) return;
    try {
      if (this.id === null) this.attach();
      if (this.kicked) {
        this.again = true;
        return;
      }
      this.kicked = true;
      this.again = false;
      thread.send({ type: 'kick', id: this.id as number });
    } catch (error) {
      this.fail(`the checkpoint thread could not be started or told: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  /** The next checkpoint the thread reports for this file (tests and probes); fails when the thread gives up on it. */
  nextRun(): Promise<CheckpointRun> {
    if (this.failed) return Promise.reject(new Error('this file is checkpointed in its commits: the checkpoint thread gave up on it'));
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** Closes the thread's connection to the file; the store's connection may close after it. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    if (this.id === null) return (this.closing = Promise.resolve());
    const closed = new Promise<void>((resolve) => {
      this.resolveClosed = resolve;
    });
    return (this.closing = thread.close(this.id, closed));
  }

  /** A message of the thread about this file. */
  heard(message: FromWorker): void {
    switch (message.type) {
      case 'closed':
        this.resolveClosed?.();
        return;
      case 'error':
        this.fail(`the checkpoint thread could not checkpoint the file: ${message.message}`);
        return;
      case 'done': {
        const run = { busy: message.busy !== 0, log: message.log, checkpointed: message.checkpointed };
        for (const waiter of this.waiting.splice(0)) waiter.resolve(run);
        this.kicked = false;
        if (this.again && this.closing === null) this.committed();
        return;
      }
    }
  }

  /** The thread is gone (failed or exited): this file goes back to checkpoints in its commits. */
  lost(reason: string): void {
    // Its connections went with it.
    this.resolveClosed?.();
    this.fail(reason);
  }

  private attach(): void {
    const id = thread.register(this);
    this.id = id;
    // The bound first: commits from now on leave the copying to the thread.
    this.db.pragma(`wal_autocheckpoint = ${BOUND_PAGES}`);
    thread.send({ type: 'open', id, path: this.db.name });
  }

  private fail(reason: string): void {
    if (this.failed) return;
    this.failed = true;
    // The thread's connection to the file, if it opened one, goes now, not at the store's close.
    void this.close();
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${DEFAULT_PAGES}`);
    this.onProblem('SQLite checkpoints run in commits again', { reason, path: this.db.name });
    for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(reason));
  }
}
