import { META_KEYS } from '../core/meta-keys.js';
import type { TaskRecord } from '../core/types.js';
import { askingContext } from '../tools/asking.js';
import { principalOf } from '../tools/principal.js';
import type { ToolContext } from '../tools/tool.js';
import type { TaskRun } from './task-run.js';

/** Where a task's progress goes: the wire sessions that asked for it, wherever they are. */
export type ProgressSink = (record: TaskRecord, progress: number, total?: number, message?: string) => Promise<void>;

/**
 * The client capabilities the creating request carried in its `_meta` (2026-07-28 requests
 * do); null when it carried none (2025-11-25 declares them once per session).
 */
export function requestCapabilities(request: unknown): Record<string, unknown> | null {
  const meta = (request as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
  const capabilities = meta?.[META_KEYS.clientCapabilities];
  return typeof capabilities === 'object' && capabilities !== null && !Array.isArray(capabilities) ? (capabilities as Record<string, unknown>) : null;
}

/** What a handler running as a task is given: its run's signal, fenced writes and checkpoint. */
export function taskToolContext(run: TaskRun, progress?: ProgressSink): ToolContext {
  const { record } = run;
  const clientCapabilities = requestCapabilities(record.request);
  // Object.assign onto the asking part, not a spread followed by properties (V8's slow path on Node 20).
  return Object.assign(
    askingContext((requests, options) => run.ask(requests, options), clientCapabilities),
    {
      taskId: record.taskId,
      principal: principalOf(record.authKey),
      signal: run.signal,
      // The same for every attempt of the task: side effects named after it are idempotent.
      idempotencyKey: `task:${record.taskId}`,
      step: run.steps.api(),
      clientCapabilities,
      prepared: ((record.request as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta ?? {})[META_KEYS.prepared],
      reportStatus: (message) => run.reportStatus(message),
      reportProgress: async (value, total, message) => {
        if (!run.signal.aborted) await progress?.(record, value, total, message);
      },
      checkpoint: () => run.checkpoint(),
    } satisfies Partial<ToolContext>,
  );
}
