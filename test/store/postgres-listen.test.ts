import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { T0, record } from '../support/records.js';
import { freshPostgresUrl } from '../support/postgres.js';

const open: PostgresStore[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function storeAt(url: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(url, { poolSize: 4 });
  open.push(store);
  return store;
}

function collector() {
  const seen: Array<string | null> = [];
  let wake = () => {};
  return {
    seen,
    onChange: (taskId: string | null) => {
      seen.push(taskId);
      wake();
    },
    next: (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
  };
}

describe('PostgreSQL change notifications', () => {
  it('tell another connection of every committed write in the same schema, and nothing of other schemas', async () => {
    const url = await freshPostgresUrl('listen');
    const writer = await storeAt(url);
    const reader = await storeAt(url);
    const other = await storeAt(await freshPostgresUrl('listen_other'));
    const mine = collector();
    const theirs = collector();
    stops.push(await reader.listen(mine.onChange), await other.listen(theirs.onChange));
    await writer.seed([record({ taskId: 'n1' })]);

    const t0 = performance.now();
    const waiting = mine.next(5000);
    await writer.transition({
      taskId: 'n1',
      authKey: 'tenant-a/alice',
      write: { status: 'completed', expectedVersion: 1, result: { ok: 1 } },
      correlationId: 'c',
      now: T0,
    });
    await waiting;
    expect(mine.seen).toEqual(['n1']);
    expect(performance.now() - t0).toBeLessThan(1000);

    // A refused write changes nothing and notifies nobody.
    await writer.transition({ taskId: 'n1', authKey: 'tenant-a/alice', write: { status: 'failed', expectedVersion: 2 }, correlationId: 'c', now: T0 });
    await writer.cancel({ authKey: 'tenant-a/alice', taskId: 'n1', now: T0, correlationId: 'c' });
    await mine.next(300);
    expect(mine.seen).toEqual(['n1']);
    expect(theirs.seen).toEqual([]);
  });
});
