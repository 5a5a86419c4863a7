import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { errorResult } from '../tools/invoke-tool.js';
import { pathSegmentOf } from '../tools/path-segment.js';
import { defineTool, type TaskTool } from '../tools/tool.js';
import { partRows, publishExport, removeParts, writePart, type ExportFiles } from './export-parts.js';
import { ledgerLine, MONTH_PATTERN } from './ledger.js';

export interface DemoToolOptions {
  /** Where `export_ledger` writes its files (one folder per tenant, named by `pathSegmentOf`). */
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
      // One folder per tenant, whatever its name: never shared with another tenant, never outside the exports folder.
      const dir = join(options.exportsDir, pathSegmentOf(ctx.principal.tenant));
      await mkdir(dir, { recursive: true });
      // Named after the task: every run of the task writes the same files.
      const stem = ctx.taskId === null ? pathSegmentOf(ctx.idempotencyKey) : `task_${pathSegmentOf(ctx.taskId)}`;
      const files: ExportFiles = {
        file: join(dir, `${stem}.${args.format}`),
        format: args.format,
        parts: Math.max(1, Math.min(20, args.rows)),
      };
      let sha256: string;
      try {
        // One step per part: a run after a crash (or a drain) gets back the parts already
        // recorded without writing them again, and goes on from the first one that is not.
        for (let c = 0; c < files.parts; c++) {
          await ctx.step.do(`rows-${c + 1}-of-${files.parts}`, async ({ signal }) => {
            await writePart(files, ctx.principal.tenant, args.month, args.rows, c, signal);
            const { to } = partRows(files, args.rows, c);
            await ctx.reportProgress(to, args.rows);
            await ctx.reportStatus(`${to} of ${args.rows} rows written`);
            if (args.delayMs > 0) await sleep(args.delayMs / files.parts, undefined, { signal });
          });
        }
        // The export becomes real with the rename: make sure the task is still ours first.
        // Recorded, so a run after a crash between the rename and the task's end renames nothing.
        sha256 = await ctx.step.do('publish', async () => {
          await ctx.checkpoint();
          return publishExport(files);
        });
      } catch (error) {
        // A cancelled or expired export never runs again: it leaves nothing behind. Any other stop
        // (a drain, a lost lease) keeps its parts for the run that carries on.
        if (endsTask(ctx.signal)) await removeParts(files);
        throw error;
      }
      const { file } = files;
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

/** Whether the task of a stopped handler will never run again (cancelled or expired), from its signal's reason. */
function endsTask(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return signal.aborted && reason instanceof Error && /^task (cancelled|expired)$/.test(reason.message);
}
