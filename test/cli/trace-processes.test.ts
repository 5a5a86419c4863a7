import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';
import { rpc } from '../support/stateless.js';
import { until } from '../support/until.js';

// One trace from a client's `traceparent` through `serve --no-workers` into a separate `worker`
// process, both exporting OTLP/HTTP (JSON) to a receiver inside the test; one PostgreSQL schema.

const APP = 'trace-test';
const STEPS = ['reserve', 'charge', 'ship'];

const MODULE = `
import { z } from ${JSON.stringify(join(ROOT, 'node_modules/zod/index.js'))};
export default [
  {
    name: 'three_steps',
    description: 'three durable steps',
    inputSchema: z.object({}),
    execution: { taskSupport: 'required' },
    async handler(_args, ctx) {
      const done = [];
      for (const step of ${JSON.stringify(STEPS)}) done.push(await ctx.step.do(step, async () => step + ' done'));
      return { content: [{ type: 'text', text: done.join(', ') }] };
    },
  },
];
`;

let dir: string;
let url: string;
let receiver: OtlpReceiver;
let serve: ServeProcess | null = null;
const children = new Set<ChildProcess>();

function otelEnv(): NodeJS.ProcessEnv {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-trace-'));
  await writeFile(join(dir, 'tools.mjs'), MODULE);
  url = await freshPostgresUrl('trace_processes');
  receiver = await startOtlpReceiver();
});

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await serve?.stop('SIGKILL');
  serve = null;
  await receiver.close();
});

function startWorker(): WorkerProcess {
  const worker = spawnWorker(['--store', url, '--tools', join(dir, 'tools.mjs'), '--app', APP], { env: otelEnv() });
  children.add(worker.child);
  return worker;
}

/** The spans from `span` up its parents, as far as the received spans go. */
function ancestors(span: ReceivedSpan, spans: ReceivedSpan[]): string[] {
  const chain: string[] = [];
  let parent = span.parentSpanId;
  while (parent !== '') {
    chain.push(parent);
    parent = spans.find((s) => s.spanId === parent)?.parentSpanId ?? '';
  }
  return chain;
}

describe('traces across processes (PostgreSQL)', () => {
  it("the client's trace runs through serve into a separate worker, one span per step, in order", async () => {
    serve = await spawnServe(['--no-workers', '--store', url, '--tools', join(dir, 'tools.mjs'), '--app', APP], { env: otelEnv() });
    const worker = startWorker();
    await worker.ready;

    const traceId = randomBytes(16).toString('hex');
    const clientSpan = randomBytes(8).toString('hex');
    const traceparent = `00-${traceId}-${clientSpan}-01`;
    const created = await rpc(
      serve.url,
      'tools/call',
      { name: 'three_steps', arguments: {} },
      { meta: { traceparent, tracestate: 'client=1' }, headers: { traceparent } },
    );
    const { taskId } = created.result as { taskId: string };
    await until(async () => (((await rpc(serve!.url, 'tasks/get', { taskId })).result as { status: string }).status === 'completed' ? true : undefined));

    // The receiver's arrivals: the run's span and its three steps from the worker, the call's from serve.
    const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
    await until(() => {
      const spans = inTrace();
      const run = spans.find((s) => s.name === 'run three_steps');
      const steps = spans.filter((s) => s.attributes['tasklatch.step.kind'] === 'do');
      return run !== undefined && steps.length >= STEPS.length && spans.some((s) => s.name === 'tools/call') ? true : undefined;
    });
    const spans = inTrace();
    const call = spans.find((s) => s.name === 'tools/call')!;
    const run = spans.find((s) => s.name === 'run three_steps')!;

    // Two processes, one trace.
    expect(call.resource['process.pid']).toBe(serve.child.pid);
    expect(run.resource['process.pid']).toBe(worker.child.pid);
    expect(call.resource['service.instance.id']).not.toBe(run.resource['service.instance.id']);
    expect(call.resource['service.name']).toBe('tasklatch');

    // The call is the client span's child; the run's parent chain reaches the client's span.
    expect(call.parentSpanId).toBe(clientSpan);
    expect(call.attributes['mcp.method.name']).toBe('tools/call');
    expect(call.attributes['tasklatch.decision']).toBe('ACCEPT_TASK');
    expect(call.attributes['tasklatch.task.id']).toBe(taskId);
    expect(ancestors(run, spans)).toContain(clientSpan);
    expect(run.parentSpanId).toBe(call.spanId);
    expect(run.attributes).toMatchObject({
      'tasklatch.task.id': taskId,
      'tasklatch.task.attempt': 1,
      'tasklatch.tool.name': 'three_steps',
      'tasklatch.outcome': 'completed',
    });
    expect(typeof run.attributes['tasklatch.worker.id']).toBe('string');

    // Exactly one span per step, each the run's child, in the order the handler ran them.
    const steps = spans.filter((s) => s.attributes['tasklatch.step.kind'] === 'do').sort((a, b) => (a.startNanos < b.startNanos ? -1 : 1));
    expect(steps.map((s) => s.name)).toEqual(STEPS.map((s) => `step ${s}`));
    for (const step of steps) {
      expect(step.parentSpanId).toBe(run.spanId);
      expect(step.resource['process.pid']).toBe(worker.child.pid);
      expect(step.attributes).toMatchObject({ 'tasklatch.step.attempt': 1, 'tasklatch.outcome': 'returned' });
    }
    // Store round trips are children of the span they were made in.
    expect(spans.some((s) => s.name.startsWith('store ') && s.parentSpanId === call.spanId)).toBe(true);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  }, 120_000);
});
