import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkConcurrencyLimit, concurrencySlot, holdsSlot, isWaitingMessage, slotFree, slotOf, waitingMessage } from '../../src/core/concurrency-rules.js';
import { isTasklatchError } from '../../src/core/errors.js';
import { META_KEYS } from '../../src/core/meta-keys.js';
import type { WireRequest } from '../../src/core/types.js';
import { stampConcurrency, withoutConcurrency } from '../../src/runtime/requests/concurrency-stamp.js';
import { defineTool, type TaskTool } from '../../src/tools/tool.js';

const NOW = 1_000;
const running = { status: 'working' as const, leaseOwner: 'w1', leaseExpiresAt: NOW + 1, expiresAt: null };

describe('concurrency rules', () => {
  it.each([
    ['working and leased', running, true],
    ['lease run out', { ...running, leaseExpiresAt: NOW }, false],
    ['no lease (asleep, parked, given back, never claimed)', { ...running, leaseOwner: null, leaseExpiresAt: null }, false],
    ['waiting for input', { ...running, status: 'input_required' as const }, false],
    ['ended', { ...running, status: 'completed' as const }, false],
    ['expired', { ...running, expiresAt: NOW }, false],
  ])('a task %s holds a slot: %s', (_what, task, holds) => {
    expect(holdsSlot(task, NOW)).toBe(holds);
  });

  it('frees a slot only below the limit', () => {
    expect([slotFree(2, 0), slotFree(2, 1), slotFree(2, 2), slotFree(2, 3)]).toEqual([true, true, false, false]);
  });

  it('says what a waiting task waits for, and recognises its own message', () => {
    const message = waitingMessage('acme', 2, 2);
    expect(message).toBe('waiting for a concurrency slot (key "acme", 2 of 2 running)');
    expect([isWaitingMessage(message), isWaitingMessage('charging the card'), isWaitingMessage(null)]).toEqual([true, false, false]);
  });

  it.each([0, -1, 1.5, Number.NaN, '2', 1_000_001])('refuses the limit %s', (limit) => {
    expect(() => checkConcurrencyLimit(limit, 'limit')).toThrow(/integer from 1/);
  });

  it('keys a task by the key given, the tool name without one, and refuses a key that is no name', () => {
    expect(concurrencySlot('charge', 2, 'acme')).toEqual({ key: 'acme', limit: 2 });
    expect(concurrencySlot('charge', 2, undefined)).toEqual({ key: 'charge', limit: 2 });
    for (const bad of ['', 'x'.repeat(201), 42, null]) {
      expect(() => concurrencySlot('charge', 2, bad)).toThrow(/concurrency key of tool charge/);
    }
  });

  it('reads the slot back from a stored request, and none from a request without one', () => {
    const request = { method: 'tools/call', params: { name: 'x', _meta: { [META_KEYS.concurrency]: { key: 'k', limit: 3 } } } };
    expect(slotOf(request)).toEqual({ key: 'k', limit: 3 });
    expect([slotOf({ method: 'tools/call', params: {} }), slotOf(null), slotOf({ params: { _meta: { [META_KEYS.concurrency]: 'k' } } })]).toEqual([
      null,
      null,
      null,
    ]);
  });
});

describe('the concurrency stamp of an admission', () => {
  const ALICE = { tenant: 'acme', subject: 'alice' };
  const tool = (concurrency?: TaskTool['concurrency']) =>
    defineTool({
      name: 'charge',
      description: 'charges a card',
      inputSchema: z.object({ customer: z.string() }),
      ...(concurrency === undefined ? {} : { concurrency }),
      handler: async () => ({ content: [] }),
    }) as unknown as TaskTool;
  const forged = (): WireRequest => ({
    method: 'tools/call',
    params: { name: 'charge', arguments: { customer: 'c1' }, _meta: { [META_KEYS.concurrency]: { key: 'mine', limit: 999 }, other: 1 } },
  });

  it('computes the key from the arguments and the principal, replacing whatever the client sent', () => {
    const stored = forged();
    stampConcurrency(stored, tool({ limit: 2, key: (args, who) => `${who.tenant}:${String(args.customer)}` }), { customer: 'c1' }, ALICE);
    expect(stored.params._meta).toEqual({ [META_KEYS.concurrency]: { key: 'acme:c1', limit: 2 }, other: 1 });
  });

  it('removes a client entry for a tool without a limit, and from a library admission', () => {
    const stored = forged();
    stampConcurrency(stored, tool(), { customer: 'c1' }, ALICE);
    expect(stored.params._meta).toEqual({ other: 1 });
    expect(withoutConcurrency(forged()).params._meta).toEqual({ other: 1 });
  });

  it('refuses the call when the key function throws', () => {
    const failing = tool({
      limit: 1,
      key: () => {
        throw new Error('no customer');
      },
    });
    let thrown: unknown;
    try {
      stampConcurrency(forged(), failing, { customer: 'c1' }, ALICE);
    } catch (error) {
      thrown = error;
    }
    expect(isTasklatchError(thrown, 'INVALID_INPUT')).toBe(true);
  });

  it('refuses a tool defined with a bad limit', () => {
    expect(() => tool({ limit: 0 })).toThrow(/concurrency.limit of tool charge/);
  });
});
