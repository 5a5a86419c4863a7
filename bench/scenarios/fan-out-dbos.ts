import { DBOS } from '@dbos-inc/dbos-sdk';

/**
 * The DBOS Transact side of the fan-out scenario, in a process of its own (DBOS is a process-wide
 * singleton; started with `fork` through `Child`): a parent workflow that starts `children` child
 * workflows with `DBOS.startWorkflow` at once, awaits their handles and sums their values, on a
 * system database of its own. It answers `start` (launch), `parents` (time that many parents one
 * after another, after a warm-up) and `stop`.
 */

export type FanOutDbosRequest =
  { op: 'start'; url: string; poolSize: number } | { op: 'parents'; children: number; parents: number; warmup: number } | { op: 'stop' };

/** Each parent's time from start to result (ms), and the time of all of them (ms). */
export interface FanOutDbosReport {
  times: number[];
  elapsedMs: number;
}

const child = DBOS.registerWorkflow(async (n: number): Promise<number> => Promise.resolve(n), { name: 'benchFanOutChild' });

const parent = DBOS.registerWorkflow(
  async (children: number): Promise<number> => {
    const handles = [];
    for (let i = 0; i < children; i++) handles.push(await DBOS.startWorkflow(child)(i));
    const values = await Promise.all(handles.map((h) => h.getResult()));
    return values.reduce((a, b) => a + b, 0);
  },
  { name: 'benchFanOutParent' },
);

async function parents(children: number, count: number, warmup: number): Promise<FanOutDbosReport> {
  const expected = (children * (children - 1)) / 2;
  const one = async (): Promise<number> => {
    const t0 = performance.now();
    const sum = await (await DBOS.startWorkflow(parent)(children)).getResult();
    if (sum !== expected) throw new Error(`DBOS parent returned ${sum}, expected ${expected}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < warmup; i++) await one();
  const times: number[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) times.push(await one());
  return { times, elapsedMs: performance.now() - start };
}

async function answer(request: FanOutDbosRequest): Promise<unknown> {
  switch (request.op) {
    case 'start':
      DBOS.setConfig({ name: 'tlbench', systemDatabaseUrl: request.url, systemDatabasePoolSize: request.poolSize, logLevel: 'error' });
      await DBOS.launch();
      return {};
    case 'parents':
      return parents(request.children, request.parents, request.warmup);
    case 'stop':
      await DBOS.shutdown();
      setImmediate(() => process.exit(0));
      return {};
  }
}

process.on('message', (message: { id: number; request: FanOutDbosRequest }) => {
  answer(message.request).then(
    (value) => process.send?.({ id: message.id, value }),
    (error: unknown) => process.send?.({ id: message.id, error: String((error as Error).stack ?? error) }),
  );
});
