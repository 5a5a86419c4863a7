import { spawn } from 'node:child_process';
import { existsSync, statSync, unlinkSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { BOUND_PAGES } from '../../src/store/sqlite/checkpoints.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { ROOT } from '../support/cli.js';
import { oneTask, tasksAtOnce } from '../support/store-tasks.js';

const fresh = async () => join(await mkdtemp(join(tmpdir(), 'tasklatch-checkpoints-')), 'tasks.db');
const autocheckpoint = (store: SqliteStore) => Number(store.db.pragma('wal_autocheckpoint', { simple: true }));

describe('SQLite checkpoints on a thread of their own', () => {
  it('the thread copies what the store committed into the database file; the store commits without checkpointing', async () => {
    const path = await fresh();
    const store = await SqliteStore.open(path);
    try {
      // Opened and migrated, nothing written through the store yet: no thread for this file, SQLite's default.
      expect(autocheckpoint(store)).toBe(1000);
      const before = statSync(path).size;
      await tasksAtOnce(store, 40);
      // The migrations and the tasks are in the log, far under 1,000 pages: no commit copies them
      // into the file, and past the first commit none would before 4,000.
      expect(autocheckpoint(store)).toBe(BOUND_PAGES);
      let run = await store.checkpoints!.nextRun();
      // A commit that came while the thread was checkpointing is checkpointed after it.
      while (run.checkpointed < run.log) run = await store.checkpoints!.nextRun();
      expect(run.busy).toBe(false);
      expect(run.log).toBeGreaterThan(0);
      // So the file grew by the thread's copy.
      expect(statSync(path).size).toBeGreaterThan(before);
      // What the thread copied reads back the same.
      const { read } = await oneTask(store);
      expect(read.status).toBe('completed');
    } finally {
      await store.close();
    }
    // The thread's connection closed first: the store's close was the file's last, and folded the log.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('two stores on one file share the thread, and each closes its own connection', async () => {
    const path = await fresh();
    const [a, b] = [await SqliteStore.open(path), await SqliteStore.open(path)];
    const runs = [a.checkpoints!.nextRun(), b.checkpoints!.nextRun()];
    await oneTask(a);
    await oneTask(b);
    for (const run of await Promise.all(runs)) expect(run.busy).toBe(false);
    await a.close();
    const { read } = await oneTask(b);
    expect(read.status).toBe('completed');
    await b.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('when the thread cannot open the file, the store says so once and checkpoints in its commits again', async () => {
    const path = await fresh();
    const store = await SqliteStore.open(path);
    const problems: Array<{ message: string; fields: Record<string, unknown> }> = [];
    store.onProblem = (message, fields) => problems.push({ message, fields });
    // The file goes from under the open connection: the thread finds nothing to open (and makes nothing).
    unlinkSync(path);
    const reported = new Promise<void>((resolve) => {
      store.onProblem = (message, fields) => {
        problems.push({ message, fields });
        resolve();
      };
    });
    await oneTask(store);
    await reported;
    expect(problems).toHaveLength(1);
    expect(problems[0]!.message).toBe('SQLite checkpoints run in commits again');
    expect(String(problems[0]!.fields.reason)).toMatch(/could not checkpoint the file/);
    expect(autocheckpoint(store)).toBe(1000);
    expect(existsSync(path)).toBe(false);
    // The store goes on, its writes as before; nothing more is reported.
    await oneTask(store);
    expect(problems).toHaveLength(1);
    await store.close();
  });

  it('with backgroundCheckpoints: false the commits checkpoint, as SQLite does by default', async () => {
    const store = await SqliteStore.open(await fresh(), { backgroundCheckpoints: false });
    await oneTask(store);
    expect(store.checkpoints).toBeNull();
    expect(autocheckpoint(store)).toBe(1000);
    await store.close();
  });

  it('a process that never closes its store still exits when its work is done', async () => {
    const path = await fresh();
    const store = pathToFileURL(join(ROOT, 'dist/store/sqlite/store.js')).href;
    // The built store (npm test builds first), in a process of its own: it commits, hears the thread
    // checkpoint, and ends its script without closing anything. A thread that held the process
    // would keep it running, and this test would time out.
    const script = `
      const { SqliteStore } = await import(${JSON.stringify(store)});
      const store = await SqliteStore.open(${JSON.stringify(path)});
      await store.sweepExpired({ now: Date.now(), limit: 10, retentionMs: 0 });
      // The thread keeps no process alive: an interval does, until the run is heard.
      const alive = setInterval(() => undefined, 60_000);
      const run = await store.checkpoints.nextRun();
      clearInterval(alive);
      console.log(JSON.stringify(run));
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    // A test that failed (timed out) leaves no process behind.
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(out).toMatch(/"busy":false/);
    expect(code).toBe(0);
  });
});
