import { awaitTaskResult } from '../../src/service/result-wait.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isTerminal, type ListedTask, type TaskRecord } from '../../src/core/types.js';
import { openGuard } from '../../src/service/guard.js';
import type { TaskStore } from '../../src/store/types.js';
import { delayedNotifications } from '../support/delayed-notifications.js';
import { ALL_CAPS } from '../support/records.js';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { createTask } from '../../src/runtime/requests/create-task.js';

const TOOL = { name: 't', execution: { taskSupport: 'required' as const } };

type Op = { kind: 'create' } | { kind: 'message' | 'complete' | 'cancel' | 'fail'; pick: number };

const opArb: fc.Arbitrary<{ writer: 0 | 1; op: Op; notify: 'late' | 'lost' | 'soon' }> = fc.record({
  writer: fc.constantFrom(0 as const, 1 as const),
  op: fc.oneof(
    fc.constant<Op>({ kind: 'create' }),
    fc.record({ kind: fc.constantFrom('message' as const, 'complete' as const, 'cancel' as const, 'fail' as const), pick: fc.nat() }),
  ),
  notify: fc.constantFrom('late' as const, 'lost' as const, 'soon' as const),
});

const closing: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closing.splice(0)) await close();
});

/**
 * Two "processes" on one store (each its own handle: connections, listener), their change
 * notifications held back for up to 300 ms or lost, as the test says per write. After every
 * write acknowledged by one, the other reads at once: `tasks/get`, a held `tasks/result` on a
 * terminal task, `tasks/list`. Each must show the write or a later one, and what one reader
 * saw of a task never goes back.
 */
for (const harness of [sqliteHarness, postgresHarness]) {
  describe(`reads after an acknowledged write of another process (${harness.name})`, () => {
    it('never trail it, whatever the notifications do', async () => {
      const handles = await harness.openMany('read_consistency', 2);
      let mode: 'late' | 'lost' | 'soon' = 'soon';
      const delay = () => (mode === 'lost' ? null : mode === 'late' ? 100 + Math.random() * 200 : Math.random() * 5);
      const guards = handles.map((store: TaskStore) => openGuard({ store: delayedNotifications(store, delay), capabilities: ALL_CAPS }));
      for (const guard of guards) await guard.relay.start();
      closing.push(async () => {
        for (const guard of guards) await guard.relay.stop();
        for (const store of new Set(handles)) await store.close();
      });
      const tasks: TaskRecord[] = [];
      /** Per reader and task: the newest version and status it was shown. */
      const seen = [new Map<string, ListedTask>(), new Map<string, ListedTask>()];
      let reads = 0;
      let runs = 0;

      const check = (reader: 0 | 1, acknowledged: TaskRecord, shown: ListedTask | null) => {
        reads += 1;
        expect(shown, `reader ${reader} lost ${acknowledged.taskId}`).not.toBeNull();
        expect(shown!.version, `reader ${reader} trails the write of ${acknowledged.taskId}`).toBeGreaterThanOrEqual(acknowledged.version);
        if (shown!.version === acknowledged.version) expect(shown!.status).toBe(acknowledged.status);
        const before = seen[reader]!.get(shown!.taskId);
        if (before !== undefined) {
          expect(shown!.version, 'a version went back').toBeGreaterThanOrEqual(before.version);
          if (isTerminal(before.status)) expect(shown!.status, 'a terminal status went back').toBe(before.status);
        }
        seen[reader]!.set(shown!.taskId, shown!);
      };

      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 40 }), async (ops) => {
          // A caller per run: its tasks fit one tasks/list page and no caller's bound.
          const ALICE = `acme/run-${++runs}`;
          tasks.length = 0;
          for (const { writer, op, notify } of ops) {
            mode = notify;
            const w = guards[writer]!;
            const readerIndex = (1 - writer) as 0 | 1;
            const r = guards[readerIndex]!;
            let written: TaskRecord | null = null;
            if (op.kind === 'create' || tasks.length === 0) {
              const out = await createTask(w, {
                auth: ALICE,
                tool: TOOL,
                request: { method: 'tools/call', params: { name: 't', arguments: {}, task: { ttl: 600_000 } } },
              });
              written = out.record;
              if (written !== null) tasks.push(written);
            } else {
              const index = (op as { pick: number }).pick % tasks.length;
              const taskId = tasks[index]!.taskId;
              const current = (await w.worker.lookup({ auth: ALICE, taskId })).record!;
              if (op.kind === 'cancel') {
                const out = await w.requestor.cancel({ auth: ALICE, taskId });
                written = out.record;
              } else if (!isTerminal(current.status)) {
                const write =
                  op.kind === 'message'
                    ? { status: 'working' as const, expectedVersion: current.version, statusMessage: `step ${current.version}` }
                    : op.kind === 'complete'
                      ? { status: 'completed' as const, expectedVersion: current.version, result: { content: [] } }
                      : { status: 'failed' as const, expectedVersion: current.version, result: { content: [], isError: true } };
                const out = await w.worker.transition({ auth: ALICE, taskId, write });
                written = out.decision === 'APPLY_TRANSITION' ? out.record : null;
              }
              if (written !== null) tasks[index] = written;
            }
            if (written === null) continue;
            // The write is acknowledged: the other process reads at once.
            check(readerIndex, written, (await r.requestor.read({ auth: ALICE, method: 'tasks/get', taskId: written.taskId })).record);
            if (isTerminal(written.status)) {
              const held = await awaitTaskResult(r, { auth: ALICE, taskId: written.taskId, signal: AbortSignal.timeout(5_000) });
              expect(held.decision).toBe('RETURN_RESULT');
              check(readerIndex, written, held.record);
            }
            const listed = await r.requestor.list({ auth: ALICE, limit: 1000 });
            check(readerIndex, written, (listed.records ?? []).find((t) => t.taskId === written.taskId) ?? null);
          }
        }),
        { numRuns: harness.name === 'postgres' ? 100 : 120, seed: 20_261_202 },
      );
      console.log(`${harness.name}: ${reads} reads after another process's acknowledged write, none older`);
      expect(reads).toBeGreaterThan(2000);
    });
  });
}
