// The chaos fleet's tools (`--tools` of every process): the demo tools, and a tool of durable
// steps whose every step appends a line to CHAOS_STEPS_LOG before it returns, so that the run can
// count the recorded steps that ran again (none may). Loads the built package: `npm run build` first.
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { demoTools } from '../../dist/demo/demo-tools.js';

const ledgerSteps = {
  name: 'ledger_steps',
  description: 'Steps with side effects, a durable sleep, and a step whose first attempt fails (a durable retry)',
  inputSchema: z.object({ steps: z.number().int().min(2).max(10), delayMs: z.number().int().min(0).max(5000) }),
  execution: { taskSupport: 'required' },
  async handler({ steps, delayMs }, ctx) {
    const tokens = [];
    for (let i = 1; i <= steps; i++) {
      const step = `step-${i}`;
      const token = await ctx.step.do(step, { retries: { limit: 2, baseDelayMs: 50 } }, async ({ signal, attempt }) => {
        await sleep(delayMs / steps / 2, undefined, { signal });
        const made = randomUUID();
        appendFileSync(process.env.CHAOS_STEPS_LOG, `${JSON.stringify({ taskId: ctx.taskId, step, token: made })}\n`);
        if (i === 2 && attempt === 1) throw new Error('the first attempt of step-2 fails');
        await sleep(delayMs / steps / 2, undefined, { signal });
        return made;
      });
      tokens.push(token);
      if (i === 1) await ctx.step.sleep('pause', 100);
    }
    return { content: [{ type: 'text', text: `${steps} steps` }], structuredContent: { tokens } };
  },
};

export default () => [...demoTools({ exportsDir: process.env.CHAOS_EXPORTS }), ledgerSteps];
