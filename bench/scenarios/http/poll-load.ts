import { Agent, request as httpRequest } from 'node:http';
import type { Generation, LoadClosed, LoadFleet, LoadHold, LoadReport, LoadRequest, PollTarget } from './protocol.js';
import { runQueueWaitMs } from './run-queue.js';
import { openSession, pollBody, pollHeaders, type Send, type Session, type WireReply } from './poll-wire.js';
import { WireConnection } from './wire-client.js';

/**
 * The load generator, in a process of its own so that it never shares the server's event loop:
 * keep-alive `node:http` clients that poll `tasks/get` on either generation (or the bare
 * server), closed loop (N pollers back to back) or as a fleet (each client once per interval).
 */

function post(agent: Agent, url: URL, headers: Record<string, string>, body: string): Promise<WireReply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const session = res.headers['mcp-session-id'];
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), sessionId: typeof session === 'string' ? session : null });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One poller's client: its target, its session on the 2025-11-25 wire, its request ids. */
class Poller {
  private session: Session | null = null;
  private id = 0;
  constructor(
    private readonly send: Send,
    private readonly generation: Generation,
    readonly target: PollTarget,
  ) {}

  async open(): Promise<void> {
    if (this.generation === '2025') this.session = await openSession(this.send, this.target.token);
  }

  /** One tasks/get; false when the answer is not the task. */
  async poll(): Promise<boolean> {
    const id = ++this.id;
    const reply = await this.send(pollHeaders(this.generation, this.target, this.session), pollBody(this.generation, this.target, id));
    return reply.status === 200 && reply.body.includes('"working"');
  }
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** The report of a measured window: its latencies, errors, polls sent, and the CPU used and waited for since `cpu` / `waited`. */
function report(w: { latencies: number[]; errors: number; allOps: number; cpu: NodeJS.CpuUsage; waited: number; wallMs: number }): LoadReport {
  return {
    ops: w.latencies.length,
    rate: (w.latencies.length * 1000) / w.wallMs,
    latencies: w.latencies,
    errors: w.errors,
    cpuMs: cpuMs(w.cpu),
    wallMs: w.wallMs,
    waitMs: runQueueWaitMs() - w.waited,
    allOps: w.allOps,
  };
}

async function closedLoop(job: LoadClosed): Promise<LoadReport> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const url = new URL(job.url);
  const pollers = Array.from(
    { length: job.concurrency },
    (_, i) => new Poller((h, b) => post(agent, url, h, b), job.generation, job.targets[i % job.targets.length] as PollTarget),
  );
  await Promise.all(pollers.map((p) => p.open()));
  let allOps = 0;
  const run = async (ms: number, latencies: number[] | null) => {
    let errors = 0;
    const deadline = performance.now() + ms;
    await Promise.all(
      pollers.map(async (p) => {
        while (performance.now() < deadline) {
          const t0 = performance.now();
          if (!(await p.poll())) errors++;
          allOps++;
          latencies?.push(performance.now() - t0);
        }
      }),
    );
    return errors;
  };
  await run(job.warmupMs, null);
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const waited = runQueueWaitMs();
  const start = performance.now();
  const errors = await run(job.durationMs, latencies);
  agent.destroy();
  return report({ latencies, errors, allOps, cpu, waited, wallMs: performance.now() - start });
}

/**
 * Each client polls its own task once per interval, its phase spread evenly over the interval;
 * a poll answered late is followed by the next at once (and counted late), as a client's
 * timer would fire. Latency is from sending the request to its answer.
 */
async function fleet(job: LoadFleet): Promise<LoadReport> {
  // Each client keeps its own connection between polls (see WireConnection for why not node:http).
  const url = new URL(job.url);
  const connections = job.targets.map(() => new WireConnection(url.hostname, Number(url.port), url.pathname));
  const pollers = job.targets.map((t, i) => new Poller((h, b) => (connections[i] as WireConnection).request(h, b), job.generation, t));
  for (let i = 0; i < pollers.length; i += 64) await Promise.all(pollers.slice(i, i + 64).map((p) => p.open()));
  const latencies: number[] = [];
  let errors = 0;
  let late = 0;
  let allOps = 0;
  const begin = performance.now();
  const countFrom = begin + job.warmupMs;
  const end = countFrom + job.windows * job.durationMs;
  const windows: number[][] = Array.from({ length: job.windows }, () => []);
  let cpu = process.cpuUsage();
  let waited = runQueueWaitMs();
  let cpuTaken = false;
  await Promise.all(
    pollers.map(async (p, i) => {
      let next = begin + (i / pollers.length) * job.intervalMs;
      for (;;) {
        const wait = next - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const t0 = performance.now();
        if (t0 >= end) return;
        if (!cpuTaken && t0 >= countFrom) {
          cpu = process.cpuUsage();
          waited = runQueueWaitMs();
          cpuTaken = true;
        }
        const ok = await p.poll().catch(() => false);
        const dt = performance.now() - t0;
        allOps++;
        if (t0 >= countFrom) {
          latencies.push(dt);
          windows[Math.min(job.windows - 1, Math.floor((t0 - countFrom) / job.durationMs))]?.push(dt);
          if (!ok) errors++;
          if (t0 - next > job.intervalMs) late++;
        }
        next = Math.max(next + job.intervalMs, performance.now());
      }
    }),
  );
  for (const c of connections) c.close();
  return { ...report({ latencies, errors, allOps, cpu, waited, wallMs: performance.now() - countFrom }), late, windows };
}

/** Held open until 'release': sessions (memory per session) or blocked tasks/result requests. */
let held: { agent: Agent; pending: Array<Promise<unknown>> } | null = null;

async function hold(job: LoadHold): Promise<{ opened: number }> {
  held ??= { agent: new Agent({ keepAlive: true, maxSockets: Infinity }), pending: [] };
  const agent = held.agent;
  const url = new URL(job.url);
  const send = (h: Record<string, string>, b: string) => post(agent, url, h, b);
  const sessions: Session[] = [];
  for (let i = 0; i < job.targets.length; i += 32) {
    sessions.push(...(await Promise.all(job.targets.slice(i, i + 32).map((t) => openSession(send, t.token)))));
  }
  if (job.op === 'block') {
    job.targets.forEach((t, i) => {
      const s = sessions[i] as Session;
      const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId: t.taskId } });
      held?.pending.push(send(s.headers, body).catch(() => undefined));
    });
  }
  return { opened: sessions.length };
}

async function answer(job: LoadRequest): Promise<unknown> {
  switch (job.op) {
    case 'closed':
      return closedLoop(job);
    case 'fleet':
      return fleet(job);
    case 'sessions':
    case 'block':
      return hold(job);
    case 'release':
      held?.agent.destroy();
      held = null;
      return {};
    case 'stop':
      setImmediate(() => process.exit(0));
      return {};
  }
}

process.on('message', (message: { id: number; request: LoadRequest }) => {
  answer(message.request).then(
    (value) => process.send?.({ id: message.id, value }),
    (error: unknown) => process.send?.({ id: message.id, error: String((error as Error).stack ?? error) }),
  );
});
