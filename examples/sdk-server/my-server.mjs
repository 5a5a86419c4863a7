// A user's own server module, written with the official SDK alone: three tools registered with
// registerTool. It knows nothing of tasklatch; server.mjs and worker.mjs attach tasklatch to it.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

export function buildServer() {
  const server = new McpServer({ name: 'my-server', version: '1.0.0' });

  // Slow: worth a durable task.
  server.registerTool(
    'render_report',
    {
      description: 'Renders a report for a quarter (slow)',
      inputSchema: { quarter: z.string().regex(/^\d{4}-Q[1-4]$/), pages: z.number().int().min(1).max(50) },
    },
    async ({ quarter, pages }, extra) => {
      for (let page = 1; page <= pages; page++) {
        await new Promise((resolve) => setTimeout(resolve, 40));
        extra.signal.throwIfAborted();
        if (extra._meta?.progressToken !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: extra._meta.progressToken, progress: page, total: pages },
          });
      }
      return {
        content: [{ type: 'text', text: `report ${quarter}: ${pages} pages` }],
        structuredContent: { quarter, pages, for: extra.authInfo?.clientId ?? 'anonymous', pid: process.pid },
      };
    },
  );

  // Sometimes slow: a task when the client can take one, a plain call otherwise.
  server.registerTool('count_words', { description: 'Counts the words of a text', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: String(text.split(/\s+/).filter(Boolean).length) }],
  }));

  // Instant: stays a plain SDK tool, untouched by tasklatch.
  server.registerTool('ping', { description: 'Answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  return server;
}

/** Which of the tools run as durable tasks, and how. */
export const TASKS = { render_report: 'required', count_words: 'optional' };
