import { describe, expect, it } from 'vitest';
import { AuditWriter } from '../../src/store/audit-writer.js';
import { boundedAuditLine } from '../../src/store/audit-line.js';
import type { ReadAuditRow } from '../../src/store/read-audit.js';
import type { AuditEntry } from '../../src/store/types.js';
import { ALL_HARNESSES } from '../support/stores.js';

const line = (taskId: string | null, decision: AuditEntry['decision'] = 'RETURN_STATUS'): AuditEntry => ({
  at: 1,
  surface: 'read',
  decision,
  authKey: 'acme/alice',
  taskId,
  correlationId: 'c',
  status: null,
  version: null,
});

/** A database that refuses lines whose task id is 'bad' (as PostgreSQL refuses an index row too large), and can be down. */
function database() {
  const stored: ReadAuditRow[] = [];
  let down = false;
  const insert = async (batch: readonly ReadAuditRow[]) => {
    if (down) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    if (batch.some((l) => l.taskId === 'bad')) throw Object.assign(new Error('index row size exceeds maximum'), { code: '54000' });
    stored.push(...batch);
  };
  return { stored, insert, setDown: (value: boolean) => (down = value) };
}

const isLineError = (error: unknown) => (error as { code?: string }).code === '54000';

describe('AuditWriter', () => {
  it('drops the one line the database refuses and stores the others, reporting it', async () => {
    const db = database();
    const problems: string[] = [];
    const writer = new AuditWriter(db.insert, { isLineError, onProblem: (m) => problems.push(m) });
    for (const id of ['a', 'bad', 'b', 'c']) writer.count(line(id));
    await writer.drain(2000);
    expect(db.stored.map((l) => l.taskId)).toEqual(['a', 'b', 'c']);
    expect(problems).toEqual(['audit line refused by the database; dropped']);
    writer.count(line('d'));
    await writer.drain(2000);
    expect(db.stored.map((l) => l.taskId)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('keeps the lines while the database is down and stores them once it is back', async () => {
    const db = database();
    db.setDown(true);
    const writer = new AuditWriter(db.insert, { isLineError });
    writer.count(line('a'));
    writer.count(line('b'));
    await writer.drain(150);
    expect(db.stored).toEqual([]);
    expect(writer.pending).toBe(2);
    db.setDown(false);
    await writer.drain(5000);
    expect(db.stored.map((l) => l.taskId)).toEqual(['a', 'b']);
  });

  it('bounds its queue: the oldest lines go, and that is reported once, then the count', async () => {
    const db = database();
    db.setDown(true);
    const problems: Array<[string, Record<string, unknown>]> = [];
    const writer = new AuditWriter(db.insert, { isLineError, maxQueue: 3, onProblem: (m, f) => problems.push([m, f]) });
    for (const id of ['1', '2', '3', '4', '5']) writer.count(line(id));
    expect(writer.pending).toBe(3);
    db.setDown(false);
    await writer.drain(5000);
    expect(db.stored.map((l) => l.taskId)).toEqual(['3', '4', '5']);
    expect(problems.map(([m]) => m)).toEqual(['audit queue full: dropping the oldest read-decision lines', 'audit queue drained after dropping lines']);
    expect(problems.at(-1)?.[1]).toEqual({ dropped: 2 });
  });

  it('queues a burst of one key as one row and stores its count, and a row stored while more arrive adds up', async () => {
    const db = database();
    const writer = new AuditWriter(db.insert, { isLineError });
    for (let i = 0; i < 1000; i++) writer.count({ ...line('t'), at: 1000 + i, correlationId: `c${i}` });
    writer.count(line('u'));
    expect(writer.pending).toBe(2);
    await writer.drain(2000);
    expect(db.stored).toHaveLength(2);
    expect(db.stored[0]).toMatchObject({ taskKey: 't', count: 1000, firstAt: 1000, lastAt: 1999, correlationId: 'c999' });
    expect(db.stored[1]).toMatchObject({ taskKey: 'u', count: 1 });
  });

  it('keeps the counts of a failed batch and adds the decisions that came meanwhile', async () => {
    const db = database();
    db.setDown(true);
    const writer = new AuditWriter(db.insert, { isLineError });
    writer.count(line('t'));
    writer.count(line('t'));
    await writer.drain(120);
    writer.count(line('t'));
    db.setDown(false);
    await writer.drain(5000);
    expect(db.stored.map((r) => [r.taskKey, r.count])).toEqual([['t', 3]]);
  });

  it('says what it could not store when it has to stop', async () => {
    const db = database();
    db.setDown(true);
    const problems: Array<[string, Record<string, unknown>]> = [];
    const writer = new AuditWriter(db.insert, { isLineError, onProblem: (m, f) => problems.push([m, f]) });
    writer.count(line('a'));
    await writer.drain(100);
    expect(problems.at(-1)).toEqual(['audit lines not stored before the writer stopped', { lines: 1 }]);
  });

  it('counts the batch it is storing when the time is up among the lines not stored', async () => {
    // The first attempt fails, the retry hangs: the time runs out with the line off the queue, in flight.
    let attempts = 0;
    let release: () => void = () => undefined;
    const stored: ReadAuditRow[] = [];
    const insert = async (batch: readonly ReadAuditRow[]) => {
      attempts += 1;
      if (attempts === 1) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
      await new Promise<void>((resolve) => (release = resolve));
      stored.push(...batch);
    };
    const problems: Array<[string, Record<string, unknown>]> = [];
    const writer = new AuditWriter(insert, { isLineError, onProblem: (m, f) => problems.push([m, f]) });
    writer.count(line('a'));
    await writer.drain(400);
    expect(attempts).toBe(2);
    expect(writer.pending).toBe(1);
    expect(problems.at(-1)).toEqual(['audit lines not stored before the writer stopped', { lines: 1 }]);
    release();
    await writer.drain(2000);
    expect(stored.map((r) => r.taskId)).toEqual(['a']);
    expect(writer.pending).toBe(0);
  });
});

describe('boundedAuditLine', () => {
  it('keeps a task id a store can hold, and leaves out one that is too long or not text, saying so', () => {
    expect(boundedAuditLine(line('t-1')).taskId).toBe('t-1');
    expect(boundedAuditLine(line('x'.repeat(5000)))).toMatchObject({ taskId: null, detail: 'task id not kept (5000 characters)' });
    expect(boundedAuditLine(line('a\u0000b'))).toMatchObject({ taskId: null, detail: 'task id not kept (3 characters, not storable text)' });
    expect(boundedAuditLine(line('\uD800'))).toMatchObject({ taskId: null });
  });
});

describe.each(ALL_HARNESSES)('the $name store’s audit trail under hostile ids', (harness) => {
  it('stores later lines of every tenant after a 5 KB and a NUL task id', async () => {
    const store = await harness.open('audit_hostile');
    try {
      await store.recordDecision({ ...line('x'.repeat(5000), 'NOT_FOUND'), authKey: 'evil/mallory' });
      await store.recordDecision({ ...line('a\u0000b', 'NOT_FOUND'), authKey: 'evil/mallory' });
      await store.recordDecision(line('t-after'));
      expect((await store.auditTrail({ taskId: 't-after' })).map((e) => e.decision)).toEqual(['RETURN_STATUS']);
    } finally {
      await store.close();
    }
  });

  it('keeps text that JSON and SQL escape exactly as it was counted: quotes, backslashes, braces, commas, line breaks, emoji', async () => {
    const store = await harness.open('audit_text');
    const awkward = 'a "quoted", {braced} \\ back\\slash\nnew line \t tab 😀 NULL null \'single\'';
    try {
      await store.recordDecision({ ...line('t-text'), authKey: `acme/${awkward}`, correlationId: awkward, detail: awkward, status: 'working', version: 7 });
      await store.recordDecision({
        ...line('t-text'),
        at: 2,
        authKey: `acme/${awkward}`,
        correlationId: awkward,
        detail: awkward,
        status: 'working',
        version: 7,
      });
      const trail = await store.auditTrail({ taskId: 't-text' });
      expect(trail).toHaveLength(1);
      expect(trail[0]).toMatchObject({ authKey: `acme/${awkward}`, correlationId: awkward, detail: awkward, status: 'working', version: 7, count: 2 });
    } finally {
      await store.close();
    }
  });
});
