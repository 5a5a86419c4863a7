/**
 * tasklatch public API. Every export is listed here; SQL stores and the MCP adapter are subpath
 * exports so that importing the root loads neither `pg`, `better-sqlite3` nor the MCP SDK.
 */
export {
  TASK_STATUSES,
  TERMINAL_STATUSES,
  READ_METHODS,
  isTaskStatus,
  isTerminal,
  type TaskStatus,
  type TerminalStatus,
  type TaskRecord,
  type TaskCapabilities,
  type TaskSupport,
  type ToolDescriptor,
  type WireRequest,
  type ReadMethod,
  type StatusWrite,
  type Millis,
} from './core/types.js';
export {
  CREATE_DECISIONS,
  TRANSITION_DECISIONS,
  READ_DECISIONS,
  LIST_DECISIONS,
  LIMIT_DECISION,
  STORED_LIMIT_DECISION,
  RELEASE_DECISION,
  ASK_DECISIONS,
  ANSWER_DECISIONS,
  STEP_DECISIONS,
  SURFACES,
  type CreateDecision,
  type TransitionDecision,
  type ReadDecision,
  type ListDecision,
  type MissDecision,
  type AskDecision,
  type AnswerDecision,
  type InputDecision,
  type StepDecision,
  type Decision,
  type Surface,
} from './core/decisions.js';
export { TasklatchError, isTasklatchError, ERROR_CODES, type ErrorCode } from './core/errors.js';
export { JSON_RPC_CODES, type JsonRpcCode } from './core/json-rpc-codes.js';
export { META_KEYS, TASKS_EXTENSION } from './core/meta-keys.js';
export { requestDigest, resultDigest, jcsSha256, toolDigest, type ToolDefinition } from './core/digest.js';
export { checkAppName, DEFAULT_APP, APP_NAME_MAX } from './core/app-name.js';
export { parseTimestamp, formatTimestamp, isExpired } from './core/time.js';
export {
  IDEMPOTENCY_META_KEY,
  decideCreate,
  decideCreateEntry,
  decideAdmission,
  decideLimitedAdmission,
  declaresTaskCalls,
  isAugmented,
  taskSupportOf,
  idempotencyKeyOf,
  type CreateEntry,
  type PriorRecord,
} from './core/create-rules.js';
export { decideTransition, type GuardedRecord } from './core/transition-rules.js';
export { classifyMiss, visibleTo, type VisibleRecord } from './core/visibility.js';
export { authKeyOf, principalOf, parsePrincipal, principalProblem, PRINCIPAL_MAX, type Principal, type PrincipalProblem } from './core/principal.js';
export { decideRead, decideVisibleRead, decideCancel, decideList, visibleTasks, compareListOrder, compareCodePoints } from './core/read-rules.js';
export {
  decideDispatch,
  holdsFence,
  isForClaimer,
  leaseHeld,
  type DispatchStep,
  type DispatchKind,
  type DispatchedRecord,
  type FencedRecord,
  type Claimer,
} from './core/dispatch-rules.js';
export type {
  TaskStore,
  TaskRecords,
  TaskDispatch,
  TaskUpkeep,
  TaskRef,
  ClaimInput,
  Fence,
  StoreCapabilities,
  AdmitInput,
  AdmitOutcome,
  TransitionInput,
  TransitionOutcome,
  LookupOutcome,
  CancelOutcome,
  ListPosition,
  ListPage,
  AuditEntry,
  ProgressEvent,
  SweepOutcome,
  TaskSteps,
  RecordStepInput,
  RecordStepOutcome,
  StepsOutcome,
} from './store/types.js';
export type { StepRecord, StepWrite, StepKind, StepStatus, StepError } from './core/step-rules.js';
export { MemoryStore } from './store/memory/memory-store.js';
export { openStore } from './store/open-store.js';
export { openGuard, type Guard, type GuardOptions } from './service/guard.js';
export type { CreateInput } from './service/requestor-surface.js';
export type { CreateOutcome, ReadOutcome, CancelTaskOutcome, ListOutcome } from './service/outcomes.js';
export type { WorkerPort, ClaimRequest, AskRequest, RecordStepRequest } from './service/worker-port.js';
export { DEFAULT_LIMITS, type TaskLimits } from './service/limits.js';
export { defineTool, type TaskTool, type ToolContext, type ToolResult } from './tools/tool.js';
export { ANONYMOUS } from './tools/principal.js';
export { StepFailedError, stepOf, type Step, type StepConfig, type StepContext, type StepFunction } from './tools/step.js';
export { ToolRegistry } from './tools/tool-registry.js';
export { pathSegmentOf } from './tools/path-segment.js';
export { invokeTool, errorResult, argumentProblem } from './tools/invoke-tool.js';
export { ProtocolError, isStoredError, type StoredError } from './tools/protocol-error.js';
export { TaskRuntime, createRuntime, type RuntimeOptions, type ProgressListener } from './runtime/task-runtime.js';
export { createLogger, type Logger } from './runtime/log.js';
export { Worker, type WorkerOptions } from './worker/worker.js';
export { TaskExecutor, type ExecutionHooks } from './worker/task-executor.js';
export { ChangeFeed, type TaskWatch } from './service/change-feed.js';
export { ExpirySweeper, type SweeperOptions, type SweepTotals } from './service/expiry-sweeper.js';
export type { TaskObserver, DecisionEvent, TaskEndEvent, ClaimEvent, RunEvent, TaskEvents } from './service/task-events.js';
export type {
  TaskOperations,
  TaskFilter,
  TaskStats,
  TaskInspection,
  DispatchEntry,
  OperatorPage,
  OperatorPosition,
  SchemaState,
  RetentionDue,
} from './store/task-operations.js';
export type { Readiness, ReadinessCheck } from './runtime/readiness.js';
export { parseFixture, type ReplayFixture, type ReplayCase } from './replay/fixture.js';
export { runReplay, type ReplayReport, type CaseOutcome } from './replay/run-replay.js';
