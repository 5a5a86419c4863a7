/**
 * `tasklatch/core`: the rules, pure (no I/O, no clock of their own: `now` is passed in). Statuses,
 * every surface's decisions and the functions that make them, digests, who may see a task, the
 * principal check and auth keys, the protocol's `_meta` keys: what a contract fixture is written
 * in and what a replay or another implementation checks its decisions against. Loads nothing but
 * `node:crypto` and `canonicalize`.
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
  type ListedTask,
  type TaskCapabilities,
  type TaskSupport,
  type ToolDescriptor,
  type WireRequest,
  type ReadMethod,
  type StatusWrite,
  type Fence,
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
  PARK_DECISIONS,
  SURFACES,
  type CreateDecision,
  type TransitionDecision,
  type ReadDecision,
  type ListDecision,
  type LimitDecision,
  type ReleaseDecision,
  type ParkDecision,
  type MissDecision,
  type AskDecision,
  type AnswerDecision,
  type InputDecision,
  type StepDecision,
  type Decision,
  type Surface,
} from './core/decisions.js';
export { TasklatchError, isTasklatchError, ERROR_CODES, type ErrorCode } from './core/errors.js';
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
export { decideCallMode, type CallMode, type CallModeInput, type TaskAsk } from './core/call-rules.js';
export { decideTransition, type GuardedRecord } from './core/transition-rules.js';
export { classifyMiss, visibleTo, type VisibleRecord } from './core/visibility.js';
export { authKeyOf, principalOf, parsePrincipal, principalProblem, PRINCIPAL_MAX, type Principal, type PrincipalProblem } from './core/principal.js';
export { decideRead, decideVisibleRead, decideCancel, decideList, visibleTasks, compareListOrder, compareCodePoints } from './core/read-rules.js';
export { decideAsk, decideAnswer, type AskedRecord, type InputRequest, type StoredInput } from './core/input-rules.js';
export {
  STEP_KINDS,
  STEP_STATUSES,
  decideStepRecord,
  decideStepReplay,
  decideFreshEntry,
  decideGateRevision,
  decidePatch,
  type StepRecord,
  type StepWrite,
  type StepKind,
  type StepStatus,
  type StepError,
  type SteppedRecord,
  type JournalSize,
  type StepReplay,
  type JournalEntry,
  type FreshEntry,
  type PatchDecision,
} from './core/step-rules.js';
export { decidePark, parkDelay, parkWrite, parkedMessage, JOURNAL_MISMATCH_ACTIONS, type JournalMismatchAction, type ParkMark } from './core/park-rules.js';
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
export {
  checkToolVersion,
  decideVersionGrants,
  defaultToolVersion,
  mayClaimVersion,
  DEFAULT_VERSION_SILENCE_MS,
  TOOL_VERSION_MAX,
  type ToolVersionGrant,
  type VersionAnnouncement,
  type VersionGrants,
} from './core/version-rules.js';
