import { describe, expect, it } from 'vitest';
import { childError, childIdempotencyKey, childRecheckDelay, childTtl, decideChildWait, waitingChildrenMessage } from '../../src/core/child-rules.js';
import { decideStepReplay } from '../../src/core/step-rules.js';

const NOW = 1_800_000_000_000;
const child = (status: 'working' | 'completed' | 'failed' | 'cancelled' | 'input_required', extra: { result?: unknown; expiresAt?: number | null } = {}) => ({
  taskId: 'c-1',
  toolName: 'square',
  status,
  result: extra.result ?? null,
  expiresAt: extra.expiresAt ?? null,
});

describe('child rules', () => {
  it('derives one idempotency key per parent and step name', () => {
    expect(childIdempotencyKey('p-1', 'square-1')).toBe('tasklatch:child:p-1:square-1');
    expect(childIdempotencyKey('p-1', 'square-1')).not.toBe(childIdempotencyKey('p-2', 'square-1'));
  });

  it('cuts a child’s ttl to its parent’s expiry', () => {
    expect(childTtl(60_000, null, NOW)).toBe(60_000);
    expect(childTtl(null, null, NOW)).toBeNull();
    expect(childTtl(60_000, NOW + 10_000, NOW)).toBe(10_000);
    expect(childTtl(null, NOW + 10_000, NOW)).toBe(10_000);
    expect(childTtl(5_000, NOW + 10_000, NOW)).toBe(5_000);
    expect(childTtl(5_000, NOW - 1, NOW)).toBe(1);
  });

  it('decides a waiting child from its record: its result, its failure, or wait', () => {
    const result = { content: [{ type: 'text', text: '4' }], structuredContent: { value: 4 } };
    expect(decideChildWait({ child: child('completed', { result }), now: NOW, childTaskId: 'c-1' })).toEqual({ kind: 'RETURN', value: result });
    expect(decideChildWait({ child: child('working'), now: NOW, childTaskId: 'c-1' })).toEqual({ kind: 'WAIT' });
    expect(decideChildWait({ child: child('input_required'), now: NOW, childTaskId: 'c-1' })).toEqual({ kind: 'WAIT' });
    const failed = decideChildWait({
      child: child('failed', { result: { content: [{ type: 'text', text: 'no square' }], isError: true } }),
      now: NOW,
      childTaskId: 'c-1',
    });
    expect(failed).toEqual({ kind: 'THROW', error: { name: 'ChildTaskError', message: 'child task c-1 (square) failed: no square' } });
    expect(decideChildWait({ child: child('cancelled'), now: NOW, childTaskId: 'c-1' })).toEqual({
      kind: 'THROW',
      error: { name: 'ChildTaskError', message: 'child task c-1 (square) cancelled' },
    });
    expect(decideChildWait({ child: child('working', { expiresAt: NOW }), now: NOW, childTaskId: 'c-1' })).toMatchObject({
      kind: 'THROW',
      error: { message: 'child task c-1 (square) expired' },
    });
    expect(decideChildWait({ child: null, now: NOW, childTaskId: 'c-9' })).toMatchObject({
      kind: 'THROW',
      error: { message: 'child task c-9 is gone (expired and removed)' },
    });
  });

  it('names a JSON-RPC error of a failed child', () => {
    expect(childError({ taskId: 'c-1', toolName: null, status: 'failed', result: { error: { code: -32603, message: 'boom' } } }).message).toBe(
      'child task c-1 (tool) failed: boom',
    );
  });

  it('rechecks a waiting parent a quarter of its wait later, from 1 s to 60 s', () => {
    expect(childRecheckDelay(0)).toBe(1000);
    expect(childRecheckDelay(20_000)).toBe(5000);
    expect(childRecheckDelay(10 * 60_000)).toBe(60_000);
  });

  it('says which children a parent waits for', () => {
    expect(waitingChildrenMessage(['a'])).toBe('waiting for child task "a"');
    expect(waitingChildrenMessage(['a', 'b', 'c', 'd', 'e'])).toBe('waiting for child tasks "a", "b", "c" and 2 more');
  });

  it('replays a waiting child row as a look at the child, a final one as its value or error', () => {
    const base = { position: 0, name: 's', kind: 'child' as const, attempts: 0, error: null, wakeAt: null };
    expect(decideStepReplay({ named: Object.assign({ status: 'waiting' as const, value: 'c-1' }, base), name: 's', kind: 'child', now: NOW })).toEqual({
      kind: 'AWAIT',
      taskId: 'c-1',
    });
    expect(
      decideStepReplay({ named: Object.assign({ status: 'completed' as const, value: { content: [] } }, base), name: 's', kind: 'child', now: NOW }),
    ).toEqual({
      kind: 'RETURN',
      value: { content: [] },
    });
    expect(decideStepReplay({ named: Object.assign({ status: 'waiting' as const, value: 'c-1' }, base), name: 's', kind: 'do', now: NOW })).toMatchObject({
      kind: 'ORDER',
    });
  });
});
