/**
 * tasklatch public API: what README documents for a library user, and the types those need.
 * Every export is listed here. The pure rules (statuses, decisions, digests, visibility, the
 * principal check) are `tasklatch/core`; the contract replay is `tasklatch/replay`; SQL stores, the
 * MCP wires and the HTTP endpoint are subpath exports too, so that importing the root loads
 * neither `pg`, `better-sqlite3` nor the MCP SDK.
 */
export { defineTool, type ConcurrencyOptions, type TaskTool, type ToolContext, type ToolResult } from './tools/tool.js';
export {
  StepFailedError,
  stepOf,
  type ChildOptions,
  type ChildResult,
  type Step,
  type StepConfig,
  type StepContext,
  type StepFunction,
  type WaitForEventOptions,
} from './tools/step.js';
export { errorResult } from './tools/invoke-tool.js';
export { ProtocolError } from './tools/protocol-error.js';
export { pathSegmentOf } from './tools/path-segment.js';
export { createRuntime, type TaskRuntime, type RuntimeOptions } from './runtime/task-runtime.js';
export type { Logger } from './runtime/log.js';
export type { TaskLimits } from './service/limits.js';
export { openStore } from './store/open-store.js';
export { MemoryStore } from './store/memory/memory-store.js';
export { openGuard, type Guard, type GuardOptions } from './service/guard.js';
export { awaitTaskResult, type AwaitResultInput } from './service/result-wait.js';
export { createTask, type CreateInput, type CreateOutcome } from './runtime/requests/create-task.js';
export type { SendEventRequest, SendEventResult, SendEventRefusal } from './runtime/requests/send-event.js';
export type { TaskStore } from './store/types.js';
export { Worker, type WorkerOptions } from './worker/worker.js';
export type { WorkerPort, ClaimRequest, AskRequest, RecordStepRequest } from './service/worker-port.js';
export { principalProblem, type Principal, type PrincipalProblem } from './core/principal.js';
export { TasklatchError, isTasklatchError, ERROR_CODES, type ErrorCode } from './core/errors.js';
export { JSON_RPC_CODES, type JsonRpcCode } from './core/json-rpc-codes.js';
export type { TaskSupport } from './core/types.js';
