import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy answers on a path instead of passing the request on: an answer of its own, a reset connection, or nothing until the fault is lifted. */
export type Fault = { status: number; body: string } | 'reset' | 'hang';

/** An HTTP proxy on a loopback port in front of one origin: it counts requests per path and answers a path with a fault when told. */
export interface FaultProxy {
  url: string;
  /** Where requests go (set once the origin has started). */
  forwardTo(origin: string): void;
  /** Answers `path` with `fault` from now on; null passes it on again (and lets held requests through). */
  fault(path: string, fault: Fault | null): void;
  /** Requests received for `path` so far. */
  count(path: string): number;
  /** Resolves once `n` requests for `path` have been received. */
  received(path: string, n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(): Promise<FaultProxy> {
  let origin = '';
  const faults = new Map<string, Fault>();
  const counts = new Map<string, number>();
  const waiters: Array<{ path: string; n: number; resolve: () => void }> = [];
  const held: Array<() => void> = [];

  const pass = (req: IncomingMessage, res: ServerResponse): void => {
    const target = new URL(req.url ?? '/', origin);
    const out = request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  };

  const answer = (req: IncomingMessage, res: ServerResponse, fault: Fault): void => {
    if (fault === 'reset') return void req.socket.destroy();
    if (fault === 'hang') return void held.push(() => pass(req, res));
    res.writeHead(fault.status, { 'content-type': 'application/json' }).end(fault.body);
  };

  const http = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    for (const w of waiters.filter((w) => w.path === path && w.n <= counts.get(path)!)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const fault = faults.get(path);
    if (fault === undefined) pass(req, res);
    else answer(req, res, fault);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  return {
    url,
    forwardTo(to) {
      origin = to;
    },
    fault(path, fault) {
      if (fault === null) faults.delete(path);
      else faults.set(path, fault);
      if (fault === null) for (const release of held.splice(0)) release();
    },
    count: (path) => counts.get(path) ?? 0,
    received(path, n) {
      if ((counts.get(path) ?? 0) >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ path, n, resolve }));
    },
    async close() {
      for (const release of held.splice(0)) release();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
