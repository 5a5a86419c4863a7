import { expect, it } from 'vitest';
import { PROGRESS_MESSAGE_CHARS } from '../../../src/store/progress-event.js';
import type { ProgressEvent, TaskStore } from '../../../src/store/types.js';
import { T0 } from '../../support/records.js';
import { until as waitFor } from '../../support/until.js';
import { A, admission, defineStoreSuite, ok } from './store-suite.js';

// Progress between processes: what one handle publishes, a listener on another handle of the
// same schema or file hears, bounded and coalesced, ahead of the task's next change.

type Heard = { kind: 'progress'; event: ProgressEvent } | { kind: 'change'; taskId: string | null; version?: number | undefined };

async function listening(store: TaskStore) {
  const heard: Heard[] = [];
  const errors: Error[] = [];
  const stop = await store.listen(
    (taskId, version) => heard.push({ kind: 'change', taskId, version }),
    (error) => errors.push(error),
    (event) => heard.push({ kind: 'progress', event }),
  );
  const progress = () => heard.flatMap((h) => (h.kind === 'progress' ? [h.event] : []));
  // Waits for what was heard, not for a time: the bound only turns a loss into a clear failure.
  const until = (done: () => boolean) => waitFor(() => (done() ? true : undefined));
  return { heard, errors, stop, progress, until };
}

const event = (taskId: string, progress: number, extra: Partial<ProgressEvent> = {}): ProgressEvent => ({ taskId, progress, origin: 'writer', ...extra });

defineStoreSuite('progress', ({ harness, freshMany }) => {
  it.runIf(harness.name === 'memory')('a store of one process takes progress and carries it nowhere', async () => {
    const [store] = await freshMany('progress-memory', 1);
    const heard: unknown[] = [];
    const stop = await store!.listen(
      () => heard.push('change'),
      undefined,
      (e) => heard.push(e),
    );
    expect(() => store!.publishProgress(event('t', 1))).not.toThrow();
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual([]);
    await stop();
  });

  it.skipIf(harness.name === 'memory')('progress published through one handle is heard by a listener on another, field for field', async () => {
    const [writer, reader, other] = await freshMany('progress-cross', 3);
    const listener = await listening(reader!);
    try {
      writer!.publishProgress(event('task-p1', 3, { version: 2, total: 10, message: 'three of ten' }));
      writer!.publishProgress(event('task-p2', 0.5));
      await listener.until(() => listener.progress().length >= 2);
      expect(listener.progress()).toEqual([event('task-p1', 3, { version: 2, total: 10, message: 'three of ten' }), event('task-p2', 0.5)]);
      // A handle that publishes hears its own too (the service drops that echo, by origin).
      const own = await listening(other!);
      try {
        other!.publishProgress(event('task-p3', 1, { origin: 'other' }));
        await own.until(() => own.progress().length >= 1);
        await listener.until(() => listener.progress().length >= 3);
        expect(own.progress()).toEqual([event('task-p3', 1, { origin: 'other' })]);
        expect(listener.progress()[2]).toEqual(event('task-p3', 1, { origin: 'other' }));
      } finally {
        await own.stop();
      }
      expect(listener.errors).toEqual([]);
    } finally {
      await listener.stop();
    }
  });

  it.skipIf(harness.name === 'memory')(
    'a burst is coalesced to the latest, and a malformed progress or an oversized message does not travel as it is',
    async () => {
      const [writer, reader] = await freshMany('progress-bounds', 2);
      const listener = await listening(reader!);
      try {
        for (let i = 1; i <= 500; i++) writer!.publishProgress(event('burst', i, { total: 500 }));
        writer!.publishProgress(event('bad', Number.NaN));
        writer!.publishProgress(event('long', 1, { message: 'x'.repeat(100_000) }));
        // Control characters take six bytes each in JSON: beside a long task id (seeded, replayed) the
        // clipped message cannot fit a payload and is left off; the progress still travels.
        const longId = 'e'.repeat(1500);
        writer!.publishProgress(event(longId, 2, { message: '\u0001'.repeat(PROGRESS_MESSAGE_CHARS * 2) }));
        await listener.until(
          () => listener.progress().some((e) => e.taskId === 'burst' && e.progress === 500) && listener.progress().some((e) => e.taskId === longId),
        );
        await new Promise((r) => setTimeout(r, 200));
        const burst = listener.progress().filter((e) => e.taskId === 'burst');
        expect(burst.at(-1)?.progress).toBe(500);
        expect(burst.length).toBeLessThanOrEqual(4);
        expect(listener.progress().some((e) => e.taskId === 'bad')).toBe(false);
        expect(listener.progress().find((e) => e.taskId === 'long')?.message).toBe('x'.repeat(PROGRESS_MESSAGE_CHARS));
        expect(listener.progress().find((e) => e.taskId === longId)).toEqual(event(longId, 2));
      } finally {
        await listener.stop();
      }
    },
  );

  it.skipIf(harness.name === 'memory')('a task’s waiting progress is heard before the status write that follows it', async () => {
    const [writer, reader] = await freshMany('progress-order', 2);
    const admitted = (await writer!.admit(admission())).record!;
    const listener = await listening(reader!);
    try {
      writer!.publishProgress(event(admitted.taskId, 1, { total: 2 }));
      // Within the same window: it waits, and the terminal write must not overtake it.
      writer!.publishProgress(event(admitted.taskId, 2, { total: 2 }));
      const done = await writer!.transition({
        taskId: admitted.taskId,
        authKey: A,
        write: { status: 'completed', expectedVersion: 1, result: ok },
        correlationId: 'c',
        now: T0,
      });
      const version = done.record!.version;
      // Progress and changes travel in order on one connection: once the change is heard, whatever
      // was sent ahead of it has been heard too.
      await listener.until(() => listener.heard.some((h) => h.kind === 'change' && h.version === version));
      // The admission's own notification goes out after admit returns and may still be heard here: only what follows it counts.
      const mine = listener.heard.filter((h) => (h.kind === 'change' ? h.taskId === admitted.taskId && h.version !== 1 : h.event.taskId === admitted.taskId));
      expect(mine.map((h) => (h.kind === 'change' ? `change ${h.version}` : `progress ${h.event.progress}`))).toEqual([
        'progress 1',
        'progress 2',
        `change ${version}`,
      ]);
    } finally {
      await listener.stop();
    }
  });

  it.runIf(harness.name === 'sqlite')('the SQLite progress table is trimmed as it goes', async () => {
    const [writer] = await freshMany('progress-trim', 1);
    for (let i = 0; i < 2000; i++) writer!.publishProgress(event(`t-${i}`, i));
    const db = (writer as unknown as { db: import('../../../src/store/sqlite/driver.js').SqliteDatabase }).db;
    const rows = (db.prepare('SELECT count(*) AS n FROM task_progress').get() as { n: number }).n;
    expect(rows).toBeGreaterThan(0);
    expect(rows).toBeLessThanOrEqual(256);
  });
});
