import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProgressBuffer, PROGRESS_PENDING_TASKS } from '../../src/store/progress-buffer.js';
import { clipProgress, decodeProgress, encodeProgress, PROGRESS_MESSAGE_CHARS, PROGRESS_PAYLOAD_BYTES } from '../../src/store/progress-event.js';
import type { ProgressEvent } from '../../src/store/types.js';

// The bounds every store puts on progress before it travels: per-task coalescing and the payload.

const event = (taskId: string, progress: number, extra: Partial<ProgressEvent> = {}): ProgressEvent => ({ taskId, progress, origin: 'o', ...extra });

describe('ProgressBuffer', () => {
  let sent: ProgressEvent[][];
  let buffer: ProgressBuffer;
  beforeEach(() => {
    vi.useFakeTimers();
    sent = [];
    buffer = new ProgressBuffer((events) => sent.push(events), 50);
  });
  afterEach(() => {
    buffer.close();
    vi.useRealTimers();
  });

  it('sends a task’s first progress at once and only the latest of the rest of its window at the window’s end', () => {
    buffer.add(event('a', 1));
    buffer.add(event('b', 1));
    for (let i = 2; i <= 100; i++) buffer.add(event('a', i));
    expect(sent).toEqual([[event('a', 1)], [event('b', 1)]]);
    vi.advanceTimersByTime(50);
    expect(sent.slice(2)).toEqual([[event('a', 100)]]);
    // A task that sent at a window's end waits out the next window; a quiet task sends at once.
    buffer.add(event('a', 101));
    buffer.add(event('b', 2));
    expect(sent.slice(3)).toEqual([[event('b', 2)]]);
    vi.advanceTimersByTime(50);
    expect(sent.slice(4)).toEqual([[event('a', 101)]]);
    vi.advanceTimersByTime(200);
    buffer.add(event('a', 102));
    expect(sent.slice(5)).toEqual([[event('a', 102)]]);
  });

  it('a steady stream sends about one event per window, whatever the rate', () => {
    for (let ms = 0; ms < 1000; ms++) {
      buffer.add(event('chatty', ms));
      vi.advanceTimersByTime(1);
    }
    const count = sent.flat().length;
    expect(count).toBeGreaterThanOrEqual(19);
    expect(count).toBeLessThanOrEqual(21);
  });

  it('take and flush hand a task’s waiting progress over early; close sends the rest and drops what comes after', () => {
    buffer.add(event('a', 1));
    buffer.add(event('a', 2));
    buffer.add(event('b', 1));
    buffer.add(event('b', 2));
    buffer.add(event('c', 1));
    buffer.add(event('c', 2));
    expect(buffer.take(['a', 'x'])).toEqual([event('a', 2)]);
    buffer.flush(['b']);
    expect(sent.at(-1)).toEqual([event('b', 2)]);
    buffer.close();
    expect(sent.at(-1)).toEqual([event('c', 2)]);
    buffer.add(event('d', 1));
    vi.advanceTimersByTime(500);
    expect(sent.flat().map((e) => `${e.taskId}${e.progress}`)).toEqual(['a1', 'b1', 'c1', 'b2', 'c2']);
  });

  it('holds at most PROGRESS_PENDING_TASKS tasks waiting, and drops what is no progress', () => {
    for (let i = 0; i < PROGRESS_PENDING_TASKS + 10; i++) buffer.add(event(`t${i}`, 1));
    for (let i = 0; i < PROGRESS_PENDING_TASKS + 10; i++) buffer.add(event(`t${i}`, 2));
    buffer.add(event('nan', Number.NaN));
    buffer.add(event('inf', Infinity));
    sent = [];
    vi.advanceTimersByTime(50);
    expect(sent.flat()).toHaveLength(PROGRESS_PENDING_TASKS);
  });
});

describe('progress events on the wire between processes', () => {
  it.each([
    { name: 'as given', input: event('t', 1, { version: 3, total: 2, message: 'm' }), out: event('t', 1, { version: 3, total: 2, message: 'm' }) },
    { name: 'NaN progress', input: event('t', Number.NaN), out: null },
    { name: 'infinite total left off', input: event('t', 1, { total: Infinity }), out: event('t', 1) },
    { name: 'fractional version left off', input: event('t', 1, { version: 1.5 }), out: event('t', 1) },
    { name: 'long message clipped', input: event('t', 1, { message: 'y'.repeat(5000) }), out: event('t', 1, { message: 'y'.repeat(PROGRESS_MESSAGE_CHARS) }) },
    {
      name: 'no half surrogate pair at the cut',
      input: event('t', 1, { message: `${'y'.repeat(PROGRESS_MESSAGE_CHARS - 1)}😀` }),
      out: event('t', 1, { message: 'y'.repeat(PROGRESS_MESSAGE_CHARS - 1) }),
    },
  ])('clip: $name', ({ input, out }) => {
    expect(clipProgress(input)).toEqual(out);
  });

  it('encodes within the payload bound, dropping the message first and the event last', () => {
    const fits = encodeProgress(event('t', 1, { message: 'ok' }))!;
    expect(decodeProgress(fits)).toEqual(event('t', 1, { message: 'ok' }));
    const longId = 'i'.repeat(2000);
    const bare = encodeProgress(event(longId, 1, { message: '\u0001'.repeat(PROGRESS_MESSAGE_CHARS) }))!;
    expect(Buffer.byteLength(bare)).toBeLessThanOrEqual(PROGRESS_PAYLOAD_BYTES);
    expect(decodeProgress(bare)).toEqual(event(longId, 1));
    expect(encodeProgress(event('i'.repeat(PROGRESS_PAYLOAD_BYTES), 1))).toBeNull();
  });

  it.each([
    '',
    'not json',
    'null',
    '[]',
    '{"taskId":1,"progress":1,"origin":"o"}',
    '{"taskId":"t","origin":"o"}',
    '{"taskId":"t","progress":1,"origin":"o","message":5}',
  ])('decodes %j as nothing', (text) => {
    expect(decodeProgress(text)).toBeNull();
  });
});
