import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TaskStore } from '../../src/store/types.js';
import { listen, readEvents, rpc, startListen } from '../support/stateless.js';
import { until } from '../support/until.js';
import { startWireServer, type WireServer } from '../support/wire-server.js';

let wire: WireServer | undefined;
const opened: AbortController[] = [];

afterEach(async () => {
  for (const abort of opened.splice(0)) abort.abort();
  await wire?.close();
  wire = undefined;
});

const randomIds = (n: number) => Array.from({ length: n }, () => randomUUID());

/** A store whose `visibleTaskIds` reads wait until `release()`: a database slow on purpose, for as long as a test needs. */
function holdVisibility(store: TaskStore): { store: TaskStore; waiting: () => number; release: () => void } {
  let waiting = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'visibleTaskIds') return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      return async (...args: unknown[]) => {
        waiting++;
        await released;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: held, waiting: () => waiting, release };
}

async function holdTask(url: string, token: string): Promise<string> {
  const created = await rpc(url, 'tools/call', { name: 'hold', arguments: {} }, { token });
  return created.result!.taskId as string;
}

describe('subscriptions/listen under a flood (2026-07-28)', () => {
  it('refuses one caller past its cap (429) and everyone past the server cap (503), while another tenant is answered', async () => {
    wire = await startWireServer(new MemoryStore(), { execute: false, limits: { maxSubscriptionsPerCaller: 5, maxSubscriptions: 8, maxListenTaskIds: 100 } });
    const { url } = wire.http;
    const bobsTask = await holdTask(url, 'token-bob');
    const statuses: number[] = [];
    const retryAfter: Array<string | null> = [];
    const bodies: Array<{ error?: { code: number; message: string } }> = [];
    // 150 listens of 100 random ids each, all at once, while bob polls his task.
    const flood = Array.from({ length: 150 }, async (_, i) => {
      const { res, abort } = await listen(url, 'token-alice', randomIds(100), `flood-${i}`);
      opened.push(abort);
      statuses.push(res.status);
      if (res.status === 200) return;
      retryAfter.push(res.headers.get('retry-after'));
      bodies.push((await res.json()) as { error?: { code: number; message: string } });
    });
    // Bob is answered, and rightly, in the middle of the flood (how fast is not a test's claim).
    const bobs = await rpc(url, 'tasks/get', { taskId: bobsTask }, { token: 'token-bob' });
    await Promise.all(flood);
    expect(bobs.result).toMatchObject({ taskId: bobsTask, status: 'working' });
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(145);
    expect(retryAfter.every((v) => v !== null && Number(v) > 0)).toBe(true);
    expect(bodies[0]?.error).toMatchObject({ code: -32000, message: expect.stringContaining('at most 5') as unknown });
    // Each accepted listen named 100 ids: one store read for all of them.
    expect(wire.calls.visibleTaskIds).toBe(5);
    expect(wire.calls.get ?? 0).toBeLessThanOrEqual(1);

    // Past the server's cap: 503 with Retry-After, whoever asks.
    const bobStreams = [];
    for (let i = 0; i < 3; i++) bobStreams.push(await listen(url, 'token-bob', [bobsTask], `bob-${i}`));
    opened.push(...bobStreams.map((s) => s.abort));
    expect(bobStreams.map((s) => s.res.status)).toEqual([200, 200, 200]);
    const full = await listen(url, 'token-carol', [], 'carol');
    opened.push(full.abort);
    expect(full.res.status).toBe(503);
    expect(Number(full.res.headers.get('retry-after'))).toBeGreaterThan(0);

    // A closed stream gives its slot back.
    for (const s of bobStreams) await readEvents(s.res, new AbortController(), (m) => m.length >= 1);
    bobStreams[0]!.abort.abort();
    const again = await until(async () => {
      const { res, abort } = await listen(url, 'token-carol', [], 'carol-again');
      opened.push(abort);
      return res.status === 200 ? res : (abort.abort(), undefined);
    });
    expect(again.status).toBe(200);
  });

  it('refuses a listen naming more ids than the bound with -32602, reading nothing', async () => {
    wire = await startWireServer(new MemoryStore(), { execute: false, limits: { maxListenTaskIds: 100 } });
    const { res, abort } = await listen(wire.http.url, 'token-alice', randomIds(101), 'too-many');
    opened.push(abort);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(body.error).toMatchObject({ code: -32602, message: expect.stringContaining('at most 100') as unknown });
    expect((wire.calls.get ?? 0) + (wire.calls.visibleTaskIds ?? 0)).toBe(0);
  });

  it('abandoned listens read nothing once their clients are gone, even while the store is slow', async () => {
    // Each listen's read of which ids are hers is held until its client has gone; each listen's
    // slot (ten per caller here) comes back only once it is done, which is what the end waits for.
    const held = holdVisibility(new MemoryStore());
    wire = await startWireServer(held.store, { execute: false, limits: { maxSubscriptionsPerCaller: 10 } });
    const { url } = wire.http;
    const mine = [];
    for (let i = 0; i < 10; i++) mine.push(await holdTask(url, 'token-alice'));
    const readsBefore = wire.calls.get ?? 0;
    const streams = [];
    for (let i = 0; i < 10; i++) streams.push(startListen(url, 'token-alice', [...mine, ...randomIds(90)], `gone-${i}`));
    await until(() => (held.waiting() >= 10 ? true : undefined));
    for (const s of streams) s.abort.abort();
    await Promise.allSettled(streams.map((s) => s.response));
    // A request sent after the clients went away is answered after the server has heard them go.
    await rpc(url, 'tools/list', {}, { token: 'token-bob' });
    const baseline = wire.server.runtime.guard.context.changes.watchers;
    held.release();
    // The slots came back: ten more listens are taken, each only once a gone one is done.
    for (let i = 0; i < 10; i++) {
      opened.push(
        await until(async () => {
          const { res, abort } = await listen(url, 'token-alice', [], `back-${i}`);
          if (res.status === 200) return abort;
          abort.abort();
          return undefined;
        }),
      );
    }
    // One read per listen said which ids are hers; the per-task reads never started.
    expect(wire.calls.visibleTaskIds).toBe(10);
    expect((wire.calls.get ?? 0) - readsBefore).toBe(0);
    expect(wire.server.runtime.guard.context.changes.watchers).toBeLessThanOrEqual(baseline);
  });
});
