import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { rpc, settle } from '../support/stateless.js';

// The MCP SDK takes zod 3 or zod 4 schemas, so a tools module may be written with either. zod 4's
// `zod/v3` is zod 3 itself (`_def`, no `_zod`): the schema zod 4's JSON Schema converter cannot read.
const ZOD3 = JSON.stringify(join(ROOT, 'node_modules/zod/v3/index.js'));
const ZOD4 = JSON.stringify(join(ROOT, 'node_modules/zod/index.js'));

const MODULE = `import { z as z3 } from ${ZOD3};
import { z as z4 } from ${ZOD4};
const greet = (z, name) => ({
  name,
  description: 'greets someone, several times',
  inputSchema: z.object({ who: z.string().min(1).describe('whom to greet'), times: z.number().int().min(1).default(2), loud: z.boolean().optional() }),
  execution: { taskSupport: 'optional' },
  async handler({ who, times, loud }) {
    const text = Array.from({ length: times }, () => (loud ? 'HELLO ' + who.toUpperCase() : 'hello ' + who)).join(', ');
    return { content: [{ type: 'text', text }], structuredContent: { text } };
  },
});
export default [greet(z3, 'greet3'), greet(z4, 'greet4')];
`;

describe('--tools PATH: a module with zod 3 and zod 4 schemas', () => {
  let server: ServeProcess;
  let client: Client;

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tasklatch-zod3-'));
    await writeFile(join(dir, 'tools.mjs'), MODULE);
    server = await spawnServe(['--store', `sqlite:${join(dir, 'tasks.db')}`, '--tools', join(dir, 'tools.mjs')]);
    client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });

  afterAll(async () => {
    await client?.close();
    expect(await server?.stop()).toBe(0);
  });

  it('lists the same JSON Schema for both', async () => {
    const { tools } = await client.listTools();
    const schema = (name: string) => tools.find((t) => t.name === name)?.inputSchema;
    expect(schema('greet3')).toMatchObject({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        who: { type: 'string', minLength: 1, description: 'whom to greet' },
        times: { type: 'integer', minimum: 1, default: 2 },
        loud: { type: 'boolean' },
      },
      required: ['who'],
    });
    // The 2026-07-28 wire lists from the same registry.
    const listed = await rpc(server.url, 'tools/list');
    const modern = (listed.result?.tools as Array<{ name: string; inputSchema: unknown }>).find((t) => t.name === 'greet3');
    expect(modern?.inputSchema).toEqual(schema('greet3'));
    // What zod 4 says of the same schema, less the integer range zod 3 does not state.
    const { maximum: _max, ...times } = (schema('greet4')?.properties as Record<string, Record<string, unknown>>).times!;
    expect(times).toMatchObject({ type: 'integer', minimum: 1, default: 2 });
  });

  it('validates, defaults and runs a zod 3 tool: plain call, 2025-11-25 task, 2026-07-28 task', async () => {
    const plain = await client.request({ method: 'tools/call', params: { name: 'greet3', arguments: { who: 'ada' } } }, CallToolResultSchema);
    expect(plain.structuredContent).toEqual({ text: 'hello ada, hello ada' });

    const created = await client.request(
      { method: 'tools/call', params: { name: 'greet3', arguments: { who: 'bo', times: 1, loud: true }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const result = await client.request({ method: 'tasks/result', params: { taskId: created.task.taskId } }, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ text: 'HELLO BO' });

    const modern = await rpc(server.url, 'tools/call', { name: 'greet3', arguments: { who: 'cy', times: 3 } });
    const done = await settle(server.url, modern.result!.taskId as string);
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { text: 'hello cy, hello cy, hello cy' } } });
  });

  it('refuses arguments the zod 3 schema rejects, as it does for zod 4', async () => {
    for (const name of ['greet3', 'greet4']) {
      const bad = await client.request({ method: 'tools/call', params: { name, arguments: { who: '', times: 0 } } }, CallToolResultSchema);
      expect(bad.isError).toBe(true);
      expect(JSON.stringify(bad.content)).toMatch(new RegExp(`Invalid arguments for tool ${name}`));
      const modern = await rpc(server.url, 'tools/call', { name, arguments: { who: 7 } });
      expect(JSON.stringify(modern.error ?? modern.result)).toMatch(/Invalid arguments|invalid/i);
      expect(modern.result?.taskId).toBeUndefined();
    }
  });
});
