import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';

let dir: string;
let tokens: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-serve-'));
  tokens = join(dir, 'tokens.json');
  await writeFile(tokens, JSON.stringify({ 'token-alice': { tenant: 'acme', subject: 'alice' }, 'token-bob': { tenant: 'globex', subject: 'bob' } }));
});

async function httpClient(url: string, token: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } } }));
  return client;
}

describe('tasklatch serve --http (SQLite, bearer tokens)', () => {
  let serve: ServeProcess;
  beforeAll(async () => {
    serve = await spawnServe(['--store', `sqlite:${join(dir, 'tasks.db')}`, '--auth-tokens', tokens, '--exports', join(dir, 'exports')]);
  });
  afterAll(async () => {
    expect(await serve.stop()).toBe(0);
  });

  it('refuses requests without a known bearer token with 401', async () => {
    for (const auth of [undefined, 'Bearer nope', 'Basic token-alice']) {
      const res = await fetch(serve.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });
      expect(res.status).toBe(401);
    }
  });

  it('runs the export lifecycle and honours the Idempotency-Key header', async () => {
    const client = await httpClient(serve.url, 'token-alice', { 'Idempotency-Key': 'june-export' });
    const call = () =>
      client.request({ method: 'tools/call', params: { name: 'export_ledger', arguments: { month: '2026-06', rows: 10 }, task: {} } }, CreateTaskResultSchema);
    const first = await call();
    const second = await call();
    expect(second.task.taskId).toBe(first.task.taskId);
    const result = await client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ rows: 10 });
    const bob = await httpClient(serve.url, 'token-bob');
    await expect(bob.experimental.tasks.getTask(first.task.taskId)).rejects.toThrow(/Task not found/);
    await Promise.all([client.close(), bob.close()]);
  });
});

describe('tasklatch serve --stdio', () => {
  it('serves one client over stdin/stdout as --principal', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'serve', '--stdio', '--principal', 'acme/alice', '--store', `sqlite:${join(dir, 'stdio.db')}`, '--exports', join(dir, 'exports')],
      env: { ...process.env, TASKLATCH_LOG_LEVEL: 'silent' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    expect(client.getServerCapabilities()?.tasks).toMatchObject({ list: {}, cancel: {} });
    const created = await client.request(
      { method: 'tools/call', params: { name: 'summarize', arguments: { month: '2026-06' }, task: {} } },
      CreateTaskResultSchema,
    );
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toEqual([created.task.taskId]);
    await client.close();
  });
});

describe('serve argument errors', () => {
  it.each([
    [['--stdio', '--http', '1'], /exclude each other/],
    [['--http', 'nope'], /\[HOST:\]PORT/],
    [['--principal', 'x'], /--stdio/],
    [['--stdio', '--principal', 'nosubject'], /TENANT\/SUBJECT/],
    [['--auth-tokens', '/nonexistent.json'], /--auth-tokens/],
    [['--max-ttl=-1'], /positive whole number/],
    [['--max-ttl', 'soon'], /positive whole number/],
    [['--store', 'redis://x'], /unsupported store URL/],
    [['--max-connections', '0'], /--max-connections takes a positive whole number/],
    [['--headers-timeout-ms', '40000'], /--headers-timeout-ms \(40000\) must not be longer than --request-timeout-ms \(30000\)/],
    [['--max-journal-steps', 'many'], /--max-journal-steps takes a positive whole number/],
  ])('%j', async (args, message) => {
    const run = await runCli(['serve', ...args], { env: { TASKLATCH_LOG_LEVEL: 'silent' }, cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
