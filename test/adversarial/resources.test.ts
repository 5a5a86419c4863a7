import { afterEach, describe, expect, it } from 'vitest';
import { AuditWriter } from '../../src/store/audit-writer.js';
import type { ReadAuditRow } from '../../src/store/read-audit.js';
import type { AuditEntry } from '../../src/store/types.js';
import { listen, readEvents } from '../support/stateless.js';
import { sqliteHarness } from '../support/stores.js';
import { until } from '../support/until.js';
import { messageOf, openSession, postRaw, startWireServer, type WireServer } from '../support/wire-server.js';

let wire: WireServer | undefined;

afterEach(async () => {
  await wire?.close();
  wire = undefined;
});

async function holdTask(url: string, headers: Record<string, string>, id: number): Promise<string> {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: {}, task: {} } });
  const created = await messageOf(await postRaw(url, body, headers));
  return (created?.result?.task as { taskId: string }).taskId;
}

const quiet = () => new Promise((r) => setTimeout(r, 300));

describe('resources come back (SQLite)', () => {
  it('50 idle sessions of two callers are closed and freed: the session maps go back to empty', async () => {
    wire = await startWireServer(await sqliteHarness.open('resources-sessions'), { http: { sessions: { idleMs: 300 } } });
    const opened = new Set<string>();
    for (let i = 0; i < 50; i++) opened.add((await openSession(wire.http.url, i % 2 === 0 ? 'token-alice' : 'token-bob')).sessionId);
    // All 50 were opened (some may be closed already: the idle time is short).
    expect(opened.size).toBe(50);
    expect(wire.server.openSessions).toBe(wire.http.openSessions());
    await until(() => (wire!.http.openSessions() === 0 && wire!.server.openSessions === 0 ? true : undefined));
  });

  it('20 held tasks/result whose clients go away: watchers given back, no store read or audit line after the close', async () => {
    wire = await startWireServer(await sqliteHarness.open('resources-waiters'), { execute: false });
    const { url } = wire.http;
    const baseline = wire.server.runtime.guard.context.changes.watchers;
    const waits = [];
    const taskIds: string[] = [];
    for (let i = 0; i < 20; i++) {
      const { headers } = await openSession(url, 'token-alice');
      const taskId = await holdTask(url, headers, 1);
      taskIds.push(taskId);
      const abort = new AbortController();
      const held = postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } }), headers, abort.signal);
      waits.push({ abort, held });
    }
    // Every waiter has decided once (from the store or from this process's cached record) and waits.
    await until(() => (wire!.server.runtime.guard.context.changes.watchers >= baseline + 40 ? true : undefined));
    await until(async () => {
      for (const taskId of taskIds) {
        const trail = await wire!.store.auditTrail({ taskId });
        if (!trail.some((line) => line.surface === 'read' && line.decision === 'WAIT_TERMINAL')) return undefined;
      }
      return true;
    });
    for (const w of waits) w.abort.abort();
    await Promise.allSettled(waits.map((w) => w.held));
    // The status watches of the creating sessions stay (they are the session's, freed with it); the waits are gone.
    await until(() => (wire!.server.runtime.guard.context.changes.watchers === baseline + 20 ? true : undefined));
    await quiet();
    const reads = wire.calls.get ?? 0;
    const audits = wire.calls.recordDecision ?? 0;
    for (let round = 0; round < 5; round++) for (const taskId of taskIds) wire.server.runtime.guard.context.changes.publish(taskId, 1000 + round);
    await quiet();
    // The status watches look once per publish; no tasks/result reads or audit lines.
    expect(wire.calls.recordDecision ?? 0).toBe(audits);
    expect((wire.calls.get ?? 0) - reads).toBeLessThanOrEqual(taskIds.length * 5);
    const trail = await wire.store.auditTrail({ taskId: taskIds[0]! });
    expect(trail.filter((line) => line.surface === 'read').length).toBeLessThanOrEqual(2);
  });

  it('20 task subscriptions (2026-07-28) whose clients go away: watchers given back, no lookup after the close', async () => {
    wire = await startWireServer(await sqliteHarness.open('resources-listen'), { execute: false });
    const { url } = wire.http;
    const { headers } = await openSession(url, 'token-alice');
    const taskId = await holdTask(url, headers, 1);
    const baseline = wire.server.runtime.guard.context.changes.watchers;
    const streams = [];
    for (let i = 0; i < 20; i++) {
      const { res, abort } = await listen(url, 'token-alice', [taskId], `sub-${i}`);
      streams.push({ res, abort });
    }
    await until(() => (wire!.server.runtime.guard.context.changes.watchers === baseline + 20 ? true : undefined));
    for (const s of streams) await readEvents(s.res, new AbortController(), (m) => m.length >= 2);
    for (const s of streams) s.abort.abort();
    await until(() => (wire!.server.runtime.guard.context.changes.watchers === baseline ? true : undefined));
    await quiet();
    const reads = wire.calls.get ?? 0;
    for (let round = 0; round < 5; round++) wire.server.runtime.guard.context.changes.publish(taskId, 1000 + round);
    await quiet();
    // Only the creating session's status watch looks (once per publish).
    expect((wire.calls.get ?? 0) - reads).toBeLessThanOrEqual(5);
  });
});

describe('the audit queue under a flood', () => {
  it('stays bounded while the database stalls, says what it dropped, and empties when it recovers', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    const stored: ReadAuditRow[] = [];
    const problems: string[] = [];
    const writer = new AuditWriter(
      async (batch) => {
        await stalled;
        stored.push(...batch);
      },
      { maxQueue: 1000, onProblem: (message) => problems.push(message) },
    );
    const line = (i: number): AuditEntry => ({
      at: i,
      surface: 'read',
      decision: 'RETURN_STATUS',
      authKey: 'acme/alice',
      taskId: `t-${i}`,
      correlationId: `c-${i}`,
    });
    for (let i = 0; i < 20_000; i++) writer.count(line(i));
    expect(writer.pending).toBeLessThanOrEqual(1000);
    expect(problems.some((p) => p.includes('dropping'))).toBe(true);
    release();
    await writer.drain();
    expect(writer.pending).toBe(0);
    expect(stored.length).toBeLessThanOrEqual(1000 + 100);
    expect(problems.some((p) => p.includes('drained after dropping'))).toBe(true);
  });
});
