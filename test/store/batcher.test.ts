import { describe, expect, it } from 'vitest';
import { Batcher, KeyedQueue, MemberQueue, type BatcherOptions } from '../../src/store/batcher.js';

// The one gather-then-flush mechanism under the stores' batches: when a batch goes, how many go at
// once, what one member's failure does to the others, and what drain waits for.

interface Member {
  id: number;
  resolve: (value: string) => void;
  reject: (error: unknown) => void;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

class Deferred {
  resolve!: () => void;
  reject!: (error: unknown) => void;
  readonly promise = new Promise<void>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });
}

/** A batcher whose flushes are recorded (ids per batch) and answer each member `ok <id>`, or wait for `hold` when given. */
function recording(options: Partial<BatcherOptions<Member>> & Pick<BatcherOptions<Member>, 'schedule'>, hold?: () => Promise<void>) {
  const batches: number[][] = [];
  const batcher = new Batcher<Member>(
    {
      flush: async (batch) => {
        batches.push(batch.map((m) => m.id));
        if (hold !== undefined) await hold();
        for (const m of batch) m.resolve(`ok ${m.id}`);
      },
      fail: (batch, error) => {
        for (const m of batch) m.reject(error);
      },
      ...options,
    },
    new MemberQueue<Member>(),
  );
  const join = (id: number) => new Promise<string>((resolve, reject) => batcher.add({ id, resolve, reject }));
  return { batcher, batches, join };
}

describe('Batcher: when a batch goes', () => {
  it('turns 0: gathers what one turn adds and flushes it at the turn’s end, in the order it joined', async () => {
    const { batches, join } = recording({ schedule: { at: 'turns', turns: 0 } });
    const answers = [join(1), join(2), join(3)];
    expect(batches).toEqual([]);
    await turn();
    expect(batches).toEqual([[1, 2, 3]]);
    expect(await Promise.all(answers)).toEqual(['ok 1', 'ok 2', 'ok 3']);
  });

  it('turns k: members that join during the next k turns share the batch', async () => {
    const { batches, join } = recording({ schedule: { at: 'turns', turns: 3 } });
    const answers = [join(1)];
    await turn();
    answers.push(join(2));
    await turn();
    answers.push(join(3));
    await turn();
    expect(batches).toEqual([]);
    await turn();
    await turn();
    expect(batches).toEqual([[1, 2, 3]]);
    await Promise.all(answers);
  });

  it('turns k: goes early once maxBatch members wait, or maxMs after the gathering began', async () => {
    const full = recording({ schedule: { at: 'turns', turns: 1000 }, maxBatch: 2 });
    const answers = [full.join(1), full.join(2), full.join(3)];
    await turn();
    expect(full.batches[0]).toEqual([1, 2]);
    const late = recording({ schedule: { at: 'turns', turns: 1_000_000, maxMs: 5 } });
    answers.push(late.join(1));
    await sleep(30);
    expect(late.batches).toEqual([[1]]);
    await Promise.all(answers);
  });

  it('at once: a member alone goes in the call that adds it; a timer waits its time', async () => {
    const once = recording({ schedule: { at: 'once' } });
    const answer = once.join(1);
    expect(once.batches).toEqual([[1]]);
    await answer;
    const timed = recording({ schedule: { at: 'timer', ms: 40 } });
    const answers = [timed.join(1)];
    await sleep(10);
    answers.push(timed.join(2));
    expect(timed.batches).toEqual([]);
    await sleep(60);
    expect(timed.batches).toEqual([[1, 2]]);
    await Promise.all(answers);
  });

  it('flushNow hands over what waits, synchronously for a synchronous flush', () => {
    const seen: number[][] = [];
    const batcher = new Batcher<number>(
      { schedule: { at: 'turns', turns: 0 }, flush: (batch) => void seen.push(batch), fail: () => undefined },
      new MemberQueue<number>(),
    );
    batcher.add(1);
    batcher.add(2);
    batcher.flushNow();
    expect(seen).toEqual([[1, 2]]);
    batcher.flushNow();
    expect(seen).toEqual([[1, 2]]);
  });
});

describe('Batcher: bounds', () => {
  it('keeps at most inFlight flushes out; what arrives meanwhile shares the next, and each gathers again', async () => {
    const gates: Deferred[] = [];
    const { batcher, batches, join } = recording({ schedule: { at: 'turns', turns: 1 }, inFlight: 1 }, () => {
      const gate = new Deferred();
      gates.push(gate);
      return gate.promise;
    });
    const answers = [join(1)];
    await turn();
    await turn();
    expect(batches).toEqual([[1]]);
    answers.push(join(2), join(3));
    await turn();
    await turn();
    await turn();
    expect(batches).toEqual([[1]]);
    gates[0]!.resolve();
    await answers[0];
    // The members that waited gather one more turn (`turns: 1`) after the flush before them ended.
    expect(batches).toEqual([[1]]);
    await turn();
    await turn();
    expect(batches).toEqual([[1], [2, 3]]);
    gates[1]!.resolve();
    expect(await Promise.all(answers)).toEqual(['ok 1', 'ok 2', 'ok 3']);
    expect(batcher.waiting).toBe(0);
  });

  it('sends up to inFlight batches at once, each at most maxBatch members, oldest first', async () => {
    const gates: Deferred[] = [];
    const { batches, join } = recording({ schedule: { at: 'once' }, inFlight: 2, maxBatch: 2 }, () => {
      const gate = new Deferred();
      gates.push(gate);
      return gate.promise;
    });
    const answers = [1, 2, 3, 4, 5, 6, 7].map(join);
    // 1 goes alone at once, 2 too (a second slot), the rest wait for a slot.
    expect(batches).toEqual([[1], [2]]);
    gates[0]!.resolve();
    await turn();
    expect(batches).toEqual([[1], [2], [3, 4]]);
    gates[1]!.resolve();
    gates[2]!.resolve();
    await turn();
    expect(batches).toEqual([[1], [2], [3, 4], [5, 6], [7]]);
    gates[3]!.resolve();
    gates[4]!.resolve();
    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4, 5, 6, 7].map((id) => `ok ${id}`));
  });

  it('a weighed queue bounds a batch’s weight, and a member heavier than the bound goes alone', () => {
    const queue = new MemberQueue<number>((n) => n, 10);
    for (const n of [4, 4, 4, 20, 1]) queue.push(n);
    expect(queue.take(100)).toEqual([4, 4]);
    expect(queue.take(100)).toEqual([4]);
    expect(queue.take(100)).toEqual([20]);
    expect(queue.take(100)).toEqual([1]);
    expect(queue.size).toBe(0);
  });

  it('a keyed queue holds one member per key, in the order the keys joined', () => {
    const queue = new KeyedQueue<{ key: string; n: number }>((m) => m.key);
    queue.push({ key: 'a', n: 1 });
    queue.push({ key: 'b', n: 1 });
    queue.push({ key: 'a', n: 2 });
    expect(queue.size).toBe(2);
    expect(queue.take(1)).toEqual([{ key: 'a', n: 2 }]);
    expect(queue.take(5)).toEqual([{ key: 'b', n: 1 }]);
  });
});

describe('Batcher: failures', () => {
  const guilty = new Error('member 2 is refused');
  const outage = new Error('connection lost');
  function failing(error: Error, memberError: boolean) {
    const flushes: number[][] = [];
    const batcher = new Batcher<Member>(
      {
        schedule: { at: 'turns', turns: 0 },
        flush: async (batch) => {
          flushes.push(batch.map((m) => m.id));
          await turn();
          if (batch.some((m) => m.id === 2)) throw error;
          for (const m of batch) m.resolve(`ok ${m.id}`);
        },
        isMemberError: memberError ? (e) => e === guilty : undefined,
        fail: (batch, e) => {
          for (const m of batch) m.reject(e);
        },
      },
      new MemberQueue<Member>(),
    );
    const answers = [1, 2, 3].map((id) => new Promise<string>((resolve, reject) => batcher.add({ id, resolve, reject })));
    return { flushes, answers };
  }

  it('a member’s error is flushed again member by member: only the guilty one fails', async () => {
    const { flushes, answers } = failing(guilty, true);
    const settled = await Promise.allSettled(answers);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual(['ok 1', 'member 2 is refused', 'ok 3']);
    expect(flushes).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it('any other error fails the batch as a whole, once', async () => {
    const { flushes, answers } = failing(outage, true);
    const settled = await Promise.allSettled(answers);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(flushes).toEqual([[1, 2, 3]]);
  });

  it('without isMemberError, the members share the batch’s fate', async () => {
    const { flushes, answers } = failing(guilty, false);
    const settled = await Promise.allSettled(answers);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(flushes).toEqual([[1, 2, 3]]);
  });

  it('a failure that holds its slot (a backoff) keeps the next batch waiting, and the batcher goes on after it', async () => {
    const batches: number[][] = [];
    let attempts = 0;
    const batcher = new Batcher<number>(
      {
        schedule: { at: 'turns', turns: 0 },
        flush: (batch) => {
          batches.push(batch);
          if (attempts++ === 0) throw new Error('down');
        },
        fail: async (batch) => {
          for (const n of batch) batcher.queue.push(n);
          await sleep(20);
        },
      },
      new MemberQueue<number>(),
    );
    batcher.add(1);
    await turn();
    batcher.add(2);
    await sleep(5);
    expect(batches).toEqual([[1]]);
    await batcher.drain();
    // The failed member went back first: it goes again ahead of the one that came meanwhile.
    expect(batches).toEqual([[1], [1, 2]]);
  });
});

describe('Batcher: drain', () => {
  it('resolves once nothing waits or is out, cutting a gathering short', async () => {
    const { batcher, batches, join } = recording({ schedule: { at: 'timer', ms: 10_000 } }, () => sleep(10));
    const answers = [join(1), join(2)];
    const started = Date.now();
    await batcher.drain();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(batches).toEqual([[1, 2]]);
    expect(await Promise.all(answers)).toEqual(['ok 1', 'ok 2']);
    // Idle: at once.
    await batcher.drain();
  });

  it('waits for the members that join while a batch is out, and gives up after its timeout', async () => {
    const gate = new Deferred();
    const { batcher, batches, join } = recording({ schedule: { at: 'turns', turns: 0 } }, () => gate.promise);
    const first = join(1);
    await turn();
    const second = join(2);
    await batcher.drain(30);
    // Timed out: the first batch is still out, the second waits for it.
    expect(batches).toEqual([[1]]);
    expect(batcher.waiting).toBe(1);
    const drained = batcher.drain();
    gate.resolve();
    await drained;
    expect(batches).toEqual([[1], [2]]);
    expect(await Promise.all([first, second])).toEqual(['ok 1', 'ok 2']);
  });
});
