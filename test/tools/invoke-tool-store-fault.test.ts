import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TasklatchError } from '../../src/core/errors.js';
import { invokeTool } from '../../src/tools/invoke-tool.js';
import { ProtocolError } from '../../src/tools/protocol-error.js';
import { defineTool, type ToolContext } from '../../src/tools/tool.js';

// A handler's own failure is its `isError` result, with its message; a store fault it lets
// through, or wraps as the cause of its own error, is the retryable Store unavailable instead,
// never a result carrying the store's text.

const FAULT = new TasklatchError('STORE_UNAVAILABLE', 'cannot connect to PostgreSQL at 10.255.0.9:6543: Connection terminated unexpectedly');

function throwing(error: Error) {
  return defineTool({
    name: 'throws',
    description: 'throws what it is given',
    inputSchema: z.object({}),
    handler: async () => {
      throw error;
    },
  });
}

const ctx = { signal: new AbortController().signal } as unknown as ToolContext;

describe('invokeTool and store faults', () => {
  it.each([
    ['a store fault', FAULT],
    ['an error caused by one', new Error('lookup failed', { cause: FAULT })],
    ['one deeper in the chain', new Error('outer', { cause: new Error('inner', { cause: FAULT }) })],
  ])('%s is -32001 Store unavailable, not a result', async (_name, error) => {
    const heard: unknown[] = [];
    const thrown = await invokeTool(throwing(error), {}, ctx, (e) => heard.push(e)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(ProtocolError);
    expect((thrown as ProtocolError).toJSON()).toEqual({ code: -32001, message: 'Store unavailable: retry later', data: { retryAfterMs: 2000 } });
    expect(heard).toEqual([error]);
  });

  it("keeps the handler's own failure as its result, with its message", async () => {
    const result = await invokeTool(throwing(new Error('no such account')), {}, ctx);
    expect(result).toEqual({ content: [{ type: 'text', text: 'no such account' }], isError: true });
  });
});
