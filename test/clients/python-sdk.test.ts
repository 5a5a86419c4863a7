import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';

// What a client without tasks sees of `tasklatch serve`, through the MCP Python SDKs from PyPI
// (test/clients/requirements.txt: `mcp` 2.3.0 and FastMCP 4.0.10, neither with a task client),
// with and without --task-tools, and the README's Python snippet run as pasted. The venv is made
// once by scripts/python-sdk-venv.sh (.ci/run makes it before the tests; here it is a no-op
// then). No Python, or no venv: the test fails and says why; it never skips.

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** What plain_client.py reports of one call: the tool's answer, or the error the client raised. */
interface Answer {
  isError?: boolean;
  text?: string | null;
  structured?: Record<string, unknown> | null;
  error?: { type: string; code?: number; message: string; data?: unknown };
}

interface ClientReport {
  protocolVersion: string;
  tools: Record<string, string | null>;
  [call: string]: unknown;
}

interface Report {
  taskTools: Record<'mcp' | 'mcpLegacy' | 'fastmcp', ClientReport>;
  plain: Record<'mcp' | 'mcpLegacy' | 'fastmcp', ClientReport>;
  advertised: ClientReport;
}

const CLIENTS = [
  ['mcp', '2026-07-28'],
  ['mcpLegacy', '2025-11-25'],
  ['fastmcp', '2026-07-28'],
] as const;

let python: string;
let dir: string;
let withTaskTools: ServeProcess;
let without: ServeProcess;
let report: Report;
const snippet: { withTaskTools?: Run; without?: Run } = {};

/** Runs the README's first Python block, as pasted, with its URL replaced by `url`. */
async function readmeSnippetAgainst(url: string): Promise<Run> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const code = /```python\n([\s\S]*?)```/.exec(readme)?.[1];
  if (code === undefined || !code.includes('http://127.0.0.1:3000/mcp')) throw new Error('README has no Python block naming http://127.0.0.1:3000/mcp');
  const file = join(dir, `snippet-${new URL(url).port}.py`);
  await writeFile(file, code.replace('http://127.0.0.1:3000/mcp', url));
  return run(python, [file], 120_000);
}

beforeAll(async () => {
  // Up to a few minutes on a machine where the venv is not made yet (pip from PyPI); instant after.
  const made = await run('bash', [join(ROOT, 'scripts/python-sdk-venv.sh')], 10 * 60_000);
  if (made.code !== 0) {
    throw new Error(
      `The Python SDK client test needs Python 3.10+ and a venv with test/clients/requirements.txt from PyPI; ` +
        `scripts/python-sdk-venv.sh (which .ci/run runs) exited ${made.code}:\n${made.stderr}`,
    );
  }
  python = join(made.stdout.trim().split('\n').at(-1)!, 'bin', 'python');
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-python-'));
  // A short pollInterval: the clients wait it between two task_status calls.
  const serve = (name: string, flags: string[]) =>
    spawnServe(['--store', `sqlite:${join(dir, `${name}.db`)}`, '--exports', join(dir, name), '--poll-interval', '200', ...flags]);
  [withTaskTools, without] = await Promise.all([serve('task-tools', ['--task-tools']), serve('plain', [])]);
  // Three Python processes at once: importing the SDKs is most of each one's time.
  let clients: Run;
  [clients, snippet.withTaskTools, snippet.without] = await Promise.all([
    run(python, [join(ROOT, 'test/clients/plain_client.py'), withTaskTools.url, without.url], 120_000),
    readmeSnippetAgainst(withTaskTools.url),
    readmeSnippetAgainst(without.url),
  ]);
  if (clients.code !== 0) throw new Error(`plain_client.py exited ${clients.code}:\n${clients.stderr}`);
  report = JSON.parse(clients.stdout) as Report;
}, 15 * 60_000);

afterAll(async () => {
  await Promise.all([withTaskTools?.stop(), without?.stop()]);
});

describe('a Python client without tasks, against tasklatch serve --task-tools', () => {
  it.each(CLIENTS)('%s (%s) sees the task tools, and a required tool listed without execution', (client, version) => {
    const { protocolVersion, tools } = report.taskTools[client];
    expect(protocolVersion).toBe(version);
    expect(Object.keys(tools)).toEqual(['export_ledger', 'summarize', 'lookup', 'task_status', 'task_result', 'task_cancel']);
    expect(tools.export_ledger).toBeNull();
    // 2026-07-28 lists no execution at all; a 2025-11-25 session keeps an optional tool's.
    expect(tools.summarize).toBe(version === '2025-11-25' ? 'optional' : null);
  });

  it.each(CLIENTS)('%s (%s) calls a required tool plainly, follows its task with task_status and reads task_result', (client) => {
    const got = report.taskTools[client];
    const started = got.started as Answer;
    expect(started.isError).toBe(false);
    const taskId = (started.structured as { taskId: string }).taskId;
    expect(started.structured).toMatchObject({ taskId, status: 'working', pollInterval: 200 });
    expect(started.text).toContain(`Started task ${taskId} (working)`);
    expect(started.text).toContain(`Call task_status with {"taskId":"${taskId}"}`);
    expect((got.statuses as string[]).at(-1)).toBe('completed');
    const result = got.result as Answer;
    expect(result.isError).toBe(false);
    expect(result.structured).toMatchObject({ rows: 40, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown });
  });

  it.each(CLIENTS)('%s (%s) cancels a task with task_cancel; task_result then says it was cancelled', (client) => {
    const got = report.taskTools[client];
    const cancel = got.cancel as Answer;
    const taskId = (cancel.structured as { taskId: string }).taskId;
    expect(cancel).toMatchObject({ isError: false, text: `Task ${taskId} is cancelled.`, structured: { status: 'cancelled' } });
    expect(got.cancelledResult).toEqual({ isError: true, text: `Task ${taskId} was cancelled`, structured: null });
  });

  it.each(CLIENTS)('%s (%s) gets an optional tool answered inline, not as a task', (client) => {
    const optional = report.taskTools[client].optional as Answer;
    expect(optional).toMatchObject({ isError: false, structured: { month: '2026-06' } });
    expect(optional.structured).not.toHaveProperty('taskId');
  });
});

describe('a Python client without tasks, against tasklatch serve without --task-tools', () => {
  it.each(CLIENTS)('%s (%s) gets a clear error for a required tool, and no task tools', (client, version) => {
    const got = report.plain[client];
    expect(got.protocolVersion).toBe(version);
    expect(Object.keys(got.tools)).toEqual(['export_ledger', 'summarize', 'lookup']);
    const required = (got.required as Answer).error;
    if (version === '2026-07-28') {
      expect(required).toEqual({
        type: 'MCPError',
        code: -32021,
        message: "Tool export_ledger needs the io.modelcontextprotocol/tasks extension in this request's client capabilities",
        data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      });
    } else {
      // Listed required; the Python SDK sends the plain call anyway, and the server refuses it.
      expect(got.tools.export_ledger).toBe('required');
      expect(required).toEqual({ type: 'MCPError', code: -32601, message: 'Tool export_ledger must be called as a task (params.task)', data: null });
    }
    expect((got.taskStatus as Answer).error).toEqual({ type: 'MCPError', code: -32602, message: 'Unknown tool: task_status', data: null });
    expect(got.optional).toMatchObject({ isError: false, structured: { month: '2026-06' } });
  });

  it('an mcp client that declares the tasks extension without handling it cannot read the task it gets, even of an optional tool', () => {
    const { advertised } = report;
    expect(advertised.protocolVersion).toBe('2026-07-28');
    for (const call of ['required', 'optional'] as const) {
      const { error } = advertised[call] as Answer;
      expect(error?.type).toBe('ValidationError');
      expect(error?.message).toContain("input_value={'resultType': 'task'");
    }
  });
});

describe("README's Python snippet", () => {
  it('follows a task to its result against serve --task-tools, as pasted', () => {
    const got = snippet.withTaskTools!;
    expect(got.stderr).toBe('');
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/^Started task \S+ \(working\); it runs in the background\. Call task_status with/);
    expect(got.stdout).toMatch(/\ncompleted \{'file': '[^']+\.csv', 'rows': 50, 'sha256': '[0-9a-f]{64}'\}\n$/);
  });

  it('fails with the missing-extension error against serve without --task-tools', () => {
    const got = snippet.without!;
    expect(got.code).not.toBe(0);
    expect(got.stderr).toContain("MCPError: Tool export_ledger needs the io.modelcontextprotocol/tasks extension in this request's client capabilities");
  });
});
