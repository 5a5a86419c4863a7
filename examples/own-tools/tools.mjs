// A module of your own tools, for `tasklatch serve --tools ./examples/own-tools/tools.mjs` and
// `tasklatch worker --tools ./examples/own-tools/tools.mjs` (give every process the same module),
// or for a server and worker process of your own (server.mjs, worker.mjs beside this file).
import { defineTool } from 'tasklatch';
import { z } from 'zod';

/** Counts the primes below `below`, slowly enough to be worth a task; reports progress. */
export const countPrimes = defineTool({
  name: 'count_primes',
  description: 'Counts the prime numbers below a bound (a long job: always a task)',
  inputSchema: z.object({ below: z.number().int().min(2).max(5_000_000), delayMs: z.number().int().min(0).max(60_000).optional() }),
  execution: { taskSupport: 'required' },
  async handler({ below, delayMs = 0 }, ctx) {
    let count = 0;
    for (let n = 2; n < below; n++) {
      if (isPrime(n)) count++;
      if (n % 10_000 === 0) ctx.signal.throwIfAborted();
    }
    // Stands for slow upstream work; the signal stops it on cancellation, expiry or shutdown.
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    ctx.signal.throwIfAborted();
    await ctx.reportStatus(`counted ${count} primes`);
    return { content: [{ type: 'text', text: `${count} primes below ${below}` }], structuredContent: { below, count, by: process.pid } };
  },
});

function isPrime(n) {
  for (let d = 2; d * d <= n; d++) if (n % d === 0) return false;
  return true;
}

/** A quick tool beside it: never a task. */
export const isPrimeTool = defineTool({
  name: 'is_prime',
  description: 'Whether a number is prime',
  inputSchema: z.object({ n: z.number().int().min(2) }),
  async handler({ n }) {
    return { content: [{ type: 'text', text: String(isPrime(n)) }] };
  },
});

/**
 * An order in durable steps: each step's value is recorded once in the task's journal, so a run
 * after a crash, a drain or the sleep gets it back instead of doing it again. What happens inside
 * one step may still happen twice (a crash after the side effect, before its record): the step's
 * idempotency key makes a repeated call one the upstream ignores.
 */
export const placeOrder = defineTool({
  name: 'place_order',
  description: 'Reserves, charges and ships an order in durable steps, with a durable cool-down between (always a task)',
  inputSchema: z.object({ sku: z.string().min(1), amountCents: z.number().int().positive(), coolDownMs: z.number().int().min(0).max(86_400_000).default(1000) }),
  execution: { taskSupport: 'required' },
  async handler({ sku, amountCents, coolDownMs }, ctx) {
    const hold = await ctx.step.do('reserve', () => ({ holdId: `hold:${ctx.step.idempotencyKey('reserve')}`, sku }));
    // Stands for a payment API call: retried up to 3 times, each attempt bounded, the waits durable.
    const charge = await ctx.step.do('charge', { retries: { limit: 3, baseDelayMs: 500 }, timeoutMs: 10_000 }, async ({ signal, attempt }) => {
      signal.throwIfAborted();
      return { chargeId: `charge:${ctx.step.idempotencyKey('charge')}`, amountCents, attempt };
    });
    // The task sleeps without a worker; any worker runs it on once the time has come.
    await ctx.step.sleep('cool-down', coolDownMs);
    const shipment = await ctx.step.do('ship', () => ({ shippedAt: new Date().toISOString(), by: process.pid }));
    await ctx.reportStatus(`shipped ${sku}`);
    return { content: [{ type: 'text', text: `order of ${sku} shipped` }], structuredContent: { ...hold, ...charge, ...shipment } };
  },
});

export default [countPrimes, isPrimeTool, placeOrder];
