import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { errorResult } from '../tools/invoke-tool.js';
import { defineTool, type TaskTool } from '../tools/tool.js';
import { csvHeader, csvLine, ledgerLine, MONTH_PATTERN } from './ledger.js';

export interface DemoToolOptions {
  /** Where `export_ledger` writes its files (one folder per tenant). */
  exportsDir: string;
}

/** The demo tools of `tasklatch serve`: a long export, a quick summary and an instant lookup. */
export function demoTools(options: DemoToolOptions): TaskTool[] {
  const exportLedger = defineTool({
    name: 'export_ledger',
    title: 'Export a month of the ledger',
    description: 'Writes a month of synthetic ledger lines for the caller’s tenant to a file and returns its name, row count and SHA-256. Runs as a task.',
    inputSchema: z.object({
      month: z.string().describe('YYYY-MM'),
      format: z.enum(['csv', 'json']).default('csv'),
      rows: z.number().int().min(0).max(1_000_000).default(1000),
      delayMs: z.number().int().min(0).max(3_600_000).default(0).describe('roughly how long the export takes in total'),
      confirm: z.boolean().default(false).describe('ask the requestor to confirm before anything is written'),
    }),
    execution: { taskSupport: 'required' },
    handler: async (args, ctx) => {
      if (!MONTH_PATTERN.test(args.month)) return errorResult(`month must be YYYY-MM, got ${JSON.stringify(args.month)}`);
      if (args.confirm) {
        // Asked before anything is written: a run that waits, or starts again, has done nothing.
        const answer = await ctx.elicit(
          {
            message: `Export ${args.rows} rows of ${ctx.principal.tenant}'s ledger for ${args.month}?`,
            requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', title: 'Export' } }, required: ['confirm'] },
          },
          { key: 'confirm-export' },
        );
        if (answer.action !== 'accept' || answer.content?.confirm !== true) return errorResult('export not confirmed');
      }
      const dir = join(options.exportsDir, safeName(ctx.principal.tenant));
      await mkdir(dir, { recursive: true });
      // Named after the task's stable key: a re-run after a crash rewrites the same temp file
      // and renames onto the same name, so one task never leaves two exports.
      const file = join(dir, `${safeName(ctx.idempotencyKey)}.${args.format}`);
      const temp = `${file}.partial`;
      const hash = createHash('sha256');
      const handle = await open(temp, 'w');
      try {
        const chunks = Math.max(1, Math.min(20, args.rows));
        const write = async (text: string) => {
          hash.update(text);
          await handle.write(text);
        };
        await write(args.format === 'csv' ? csvHeader() : '[');
        for (let c = 0; c < chunks; c++) {
          ctx.signal.throwIfAborted();
          const from = Math.floor((args.rows * c) / chunks);
          const to = Math.floor((args.rows * (c + 1)) / chunks);
          let text = '';
          for (let i = from; i < to; i++) {
            const line = ledgerLine(ctx.principal.tenant, args.month, i);
            text += args.format === 'csv' ? csvLine(line) : `${i === 0 ? '' : ','}\n${JSON.stringify(line)}`;
          }
          await write(text);
          await ctx.reportProgress(to, args.rows);
          await ctx.reportStatus(`${to} of ${args.rows} rows written`);
          if (args.delayMs > 0) await sleep(args.delayMs / chunks, undefined, { signal: ctx.signal });
        }
        if (args.format === 'json') await write('\n]\n');
        await handle.sync();
        await handle.close();
        // The export becomes real with the rename: make sure the task is still ours first.
        await ctx.checkpoint();
        await rename(temp, file);
      } catch (error) {
        // A stopped export leaves nothing behind; the export exists only once renamed.
        await handle.close().catch(() => undefined);
        await rm(temp, { force: true });
        throw error;
      }
      const sha256 = hash.digest('hex');
      return {
        content: [{ type: 'text', text: `exported ${args.rows} rows of ${args.month} to ${file}` }],
        structuredContent: { file, rows: args.rows, sha256 },
      };
    },
  });

  const summarize = defineTool({
    name: 'summarize',
    description: 'Totals a month of the caller’s ledger by account. Quick; may run as a task.',
    inputSchema: z.object({ month: z.string().describe('YYYY-MM') }),
    execution: { taskSupport: 'optional' },
    handler: async (args, ctx) => {
      if (!MONTH_PATTERN.test(args.month)) return errorResult(`month must be YYYY-MM, got ${JSON.stringify(args.month)}`);
      const totals: Record<string, number> = {};
      for (let i = 0; i < 200; i++) {
        const line = ledgerLine(ctx.principal.tenant, args.month, i);
        totals[line.account] = (totals[line.account] ?? 0) + line.amountCents;
      }
      const text = Object.entries(totals)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([account, cents]) => `${account}: ${(cents / 100).toFixed(2)}`)
        .join('\n');
      return { content: [{ type: 'text', text }], structuredContent: { month: args.month, totals } };
    },
  });

  const lookup = defineTool({
    name: 'lookup',
    description: 'Looks up an account’s balance. Instant; never a task.',
    inputSchema: z.object({ account: z.string().min(1) }),
    handler: async (args, ctx) => {
      const digest = createHash('sha256').update(`${ctx.principal.tenant}\n${args.account}`).digest();
      const cents = digest.readUInt32BE(0) % 10_000_000;
      return {
        content: [{ type: 'text', text: `${args.account}: ${(cents / 100).toFixed(2)}` }],
        structuredContent: { account: args.account, balanceCents: cents },
      };
    },
  });

  return [exportLedger, summarize, lookup];
}

/** A name safe for one path segment. */
function safeName(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120) || '_';
}
