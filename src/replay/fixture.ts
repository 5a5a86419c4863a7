import { z } from 'zod';
import {
  ANSWER_DECISIONS,
  ASK_DECISIONS,
  CREATE_DECISIONS,
  LIMIT_DECISION,
  LIST_DECISIONS,
  PARK_DECISIONS,
  READ_DECISIONS,
  STEP_DECISIONS,
  STORED_LIMIT_DECISION,
  TRANSITION_DECISIONS,
} from '../core/decisions.js';
import { TasklatchError } from '../core/errors.js';
import { hasWakeTime, STEP_KIND_STATUSES, STEP_KINDS, STEP_STATUSES, stepNameSpace, type StepKind, type StepStatus } from '../core/step-rules.js';
import { isTimestamp } from '../core/time.js';
import { READ_METHODS, TASK_STATUSES } from '../core/types.js';

/** The replay fixture format of the state contract (`fixture: "tasklatch-contract-replay"`). */

const timestamp = z.string().refine(isTimestamp, { message: 'expected an RFC 3339 timestamp' });
const jsonObject = z.record(z.string(), z.unknown());
const presence = z.unknown().optional();

const wireRequest = z.object({ method: z.string(), params: jsonObject });

const storedRecord = z.object({
  taskId: z.string().min(1),
  auth: z.string(),
  status: z.enum(TASK_STATUSES),
  version: z.number().int().nonnegative(),
  createdAt: timestamp,
  expiresAt: timestamp.nullable(),
  request: wireRequest.optional(),
  idempotencyKey: z.string().nullable().optional(),
  result: z.unknown().optional(),
  statusMessage: z.string().nullable().optional(),
  // The lease an ask's fence is checked against (input cases).
  leaseOwner: z.string().nullable().optional(),
  leaseExpiresAt: timestamp.nullable().optional(),
});

/** A stored question; one with a `response` (JSON null included) is answered. */
const storedInput = z.object({
  key: z.string().min(1),
  askSeq: z.number().int().nonnegative().optional(),
  request: z.object({ method: z.string(), params: jsonObject.optional() }),
  response: z.unknown().optional(),
});

const capabilities = z.object({
  list: presence,
  cancel: presence,
  requests: z.object({ tools: z.object({ call: presence }).optional() }).optional(),
});

const common = {
  id: z.string().min(1),
  title: z.string().optional(),
  hostile: z.boolean().optional(),
};

const createCase = z.object({
  ...common,
  surface: z.literal('create'),
  packet: z.object({
    now: timestamp,
    auth: z.string(),
    capabilities,
    tool: z.object({
      name: z.string(),
      execution: z.object({ taskSupport: z.enum(['required', 'optional', 'forbidden']).optional() }).optional(),
    }),
    request: wireRequest,
    prior: storedRecord.nullable(),
    /** tasklatch's own bounds beyond the contract (none when absent): the prior counts toward them. */
    limits: z
      .object({ maxActiveTasks: z.number().int().min(0).nullable().optional(), maxStoredTasks: z.number().int().min(0).nullable().optional() })
      .optional(),
  }),
  expect: z.enum([...CREATE_DECISIONS, LIMIT_DECISION, STORED_LIMIT_DECISION]),
});

const transitionCase = z.object({
  ...common,
  surface: z.literal('transition'),
  packet: z.object({
    now: timestamp,
    auth: z.string(),
    task: storedRecord.nullable(),
    write: z.object({
      // Any string: a status outside the five is the rules' BLOCK_ILLEGAL_TRANSITION, not bad input.
      status: z.string(),
      expectedVersion: z.number().int(),
      result: z.unknown().optional(),
    }),
  }),
  expect: z.enum(TRANSITION_DECISIONS),
});

const readCase = z.object({
  ...common,
  surface: z.literal('read'),
  packet: z.object({
    now: timestamp,
    auth: z.string(),
    capabilities,
    method: z.enum(READ_METHODS),
    params: z.object({ taskId: z.string() }),
    task: storedRecord.nullable(),
  }),
  expect: z.enum(READ_DECISIONS),
});

const listCase = z
  .object({
    ...common,
    surface: z.literal('list'),
    packet: z.object({
      now: timestamp,
      auth: z.string(),
      capabilities,
      method: z.literal('tasks/list'),
      params: z.object({ cursor: z.string().optional() }),
      tasks: z.array(storedRecord),
    }),
    expect: z.enum(LIST_DECISIONS),
    // Required with LIST_FILTERED; a blocked list names no tasks.
    expectTaskIds: z.array(z.string()).optional(),
  })
  .refine((c) => c.expect !== 'LIST_FILTERED' || c.expectTaskIds !== undefined, {
    message: 'required when expect is LIST_FILTERED',
    path: ['expectTaskIds'],
  });

const inputCase = z
  .object({
    ...common,
    surface: z.literal('input'),
    packet: z.object({
      now: timestamp,
      auth: z.string(),
      task: storedRecord.nullable(),
      inputs: z.array(storedInput),
      op: z.enum(['ask', 'answer']),
      ask: z.object({ expectedVersion: z.number().int(), owner: z.string(), keys: z.array(z.string().min(1)).min(1) }).optional(),
      answer: z.object({ key: z.string().min(1), response: z.unknown() }).optional(),
    }),
    expect: z.union([z.enum(ASK_DECISIONS), z.enum(ANSWER_DECISIONS)]),
  })
  .superRefine((c, ctx) => {
    const { op } = c.packet;
    if (c.packet[op] === undefined) ctx.addIssue({ code: 'custom', message: `required when op is ${op}`, path: ['packet', op] });
    const decisions: readonly string[] = op === 'ask' ? ASK_DECISIONS : ANSWER_DECISIONS;
    if (!decisions.includes(c.expect)) ctx.addIssue({ code: 'custom', message: `not a decision of ${op}`, path: ['expect'] });
  });

/** A journal row as the step rules see it; `wakeAt` is required where the status waits. */
const stepShape = {
  position: z
    .number()
    .int()
    .nonnegative()
    .max(2 ** 31 - 1),
  name: z.string().min(1).max(200),
  kind: z.enum(STEP_KINDS),
  status: z.enum(STEP_STATUSES),
};
const storedStep = z.object({
  ...stepShape,
  attempts: z
    .number()
    .int()
    .nonnegative()
    .max(2 ** 31 - 1),
  wakeAt: timestamp.nullable().optional(),
  /** A completed step's value: that many bytes of JSON (none when absent), counted by the journal's byte bound. */
  valueBytes: z.number().int().nonnegative().optional(),
});

const stepCase = z
  .object({
    ...common,
    surface: z.literal('step'),
    packet: z.object({
      now: timestamp,
      auth: z.string(),
      task: storedRecord.nullable(),
      steps: z.array(storedStep),
      /** The run's write: its fence (expected version, owner) and the row it records; a value of `valueBytes` bytes of JSON. */
      record: z.object({
        ...stepShape,
        expectedVersion: z.number().int(),
        owner: z.string(),
        valueBytes: z.number().int().nonnegative(),
        attempts: z
          .number()
          .int()
          .nonnegative()
          .max(2 ** 31 - 1)
          .optional(),
        wakeAt: timestamp.optional(),
      }),
      /** The journal's bounds beyond the contract (none when absent): rows and bytes of values. */
      limits: z
        .object({ maxJournalSteps: z.number().int().min(0).nullable().optional(), maxJournalBytes: z.number().int().min(0).nullable().optional() })
        .optional(),
    }),
    expect: z.enum(STEP_DECISIONS),
  })
  .superRefine((c, ctx) => {
    const { steps, record } = c.packet;
    const kindHolds = (row: { kind: StepKind; status: StepStatus }, path: (string | number)[]) => {
      if (!STEP_KIND_STATUSES[row.kind].includes(row.status)) ctx.addIssue({ code: 'custom', message: `a ${row.kind} step is not ${row.status}`, path });
    };
    kindHolds(record, ['packet', 'record', 'status']);
    for (const [i, row] of steps.entries()) {
      kindHolds(row, ['packet', 'steps', i, 'status']);
      // A child's waiting row needs no wake time (its child's end wakes the task); every other wait does.
      const waits = hasWakeTime(row.status) && row.kind !== 'child';
      if (waits && row.wakeAt == null)
        ctx.addIssue({ code: 'custom', message: `required when status is ${row.status}`, path: ['packet', 'steps', i, 'wakeAt'] });
      const sameName = (other: { name: string; kind: StepKind }) => other.name === row.name && stepNameSpace(other.kind) === stepNameSpace(row.kind);
      if (steps.findIndex((other) => other.position === row.position || sameName(other)) !== i) {
        ctx.addIssue({ code: 'custom', message: 'a journal holds one row per position and per name (patch markers: per id)', path: ['packet', 'steps', i] });
      }
      if ((row.valueBytes ?? 0) > 0 && row.status !== 'completed' && row.status !== 'waiting') {
        ctx.addIssue({ code: 'custom', message: 'only a completed step (or a waiting child: its id) has a value', path: ['packet', 'steps', i, 'valueBytes'] });
      }
    }
    if (record.valueBytes > 0 && record.status !== 'completed' && record.status !== 'waiting') {
      ctx.addIssue({ code: 'custom', message: 'only a completed step (or a waiting child: its id) has a value', path: ['packet', 'record', 'valueBytes'] });
    }
  });

/**
 * A park on the step surface: the task's holder found its handler disagreeing with the journal
 * and parks the task instead of failing it (`packet.park`, the fence, in place of a `record`).
 */
const parkCase = z.object({
  ...common,
  surface: z.literal('step'),
  packet: z.object({
    now: timestamp,
    auth: z.string(),
    task: storedRecord.nullable(),
    steps: z.array(storedStep),
    park: z.object({ expectedVersion: z.number().int(), owner: z.string() }),
  }),
  expect: z.enum(PARK_DECISIONS),
});

const SURFACE_SCHEMAS = { create: createCase, transition: transitionCase, read: readCase, list: listCase, input: inputCase, step: stepCase } as const;

export type StoredRecordPacket = z.infer<typeof storedRecord>;
export type CreateCase = z.infer<typeof createCase>;
export type TransitionCase = z.infer<typeof transitionCase>;
export type ReadCase = z.infer<typeof readCase>;
export type ListCase = z.infer<typeof listCase>;
export type InputCase = z.infer<typeof inputCase>;
export type StoredInputPacket = z.infer<typeof storedInput>;
export type StepCase = z.infer<typeof stepCase> | ParkCase;
export type ParkCase = z.infer<typeof parkCase>;
export type StoredStepPacket = z.infer<typeof storedStep>;
export type ReplayCase = CreateCase | TransitionCase | ReadCase | ListCase | InputCase | StepCase;

export interface ReplayFixture {
  fixture: 'tasklatch-contract-replay';
  version: 1;
  cases: ReplayCase[];
}

/** Parses fixture text. Any problem throws INVALID_FIXTURE naming the case and the field. */
export function parseFixture(text: string): ReplayFixture {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new TasklatchError('INVALID_FIXTURE', `not JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new TasklatchError('INVALID_FIXTURE', 'the fixture must be a JSON object');
  }
  const top = raw as Record<string, unknown>;
  if (top.fixture !== 'tasklatch-contract-replay') {
    throw new TasklatchError('INVALID_FIXTURE', 'field "fixture": expected "tasklatch-contract-replay"');
  }
  if (top.version !== 1) throw new TasklatchError('INVALID_FIXTURE', 'field "version": expected 1');
  if (!Array.isArray(top.cases)) throw new TasklatchError('INVALID_FIXTURE', 'field "cases": expected an array');
  if (top.cases.length === 0) throw new TasklatchError('INVALID_FIXTURE', 'field "cases": the fixture has no cases');

  const seen = new Set<string>();
  const cases = top.cases.map((item: unknown, index: number) => {
    const parsed = parseCase(item, index);
    if (seen.has(parsed.id)) {
      throw new TasklatchError('INVALID_FIXTURE', `case ${parsed.id} (cases[${index}]): duplicate case id`);
    }
    seen.add(parsed.id);
    return parsed;
  });
  return { fixture: 'tasklatch-contract-replay', version: 1, cases };
}

function parseCase(item: unknown, index: number): ReplayCase {
  const obj = typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Record<string, unknown>) : null;
  const label = typeof obj?.id === 'string' ? `case ${obj.id} (cases[${index}])` : `cases[${index}]`;
  if (obj === null) throw new TasklatchError('INVALID_FIXTURE', `${label}: expected an object`);
  const surface = obj.surface;
  if (typeof surface !== 'string' || !(surface in SURFACE_SCHEMAS)) {
    throw new TasklatchError(
      'INVALID_FIXTURE',
      `${label}: field "surface": expected one of ${Object.keys(SURFACE_SCHEMAS).join(', ')}, got ${JSON.stringify(surface) ?? 'nothing'}`,
    );
  }
  // A step packet with `park` in place of `record` is a park (`parkCase`).
  const parks = surface === 'step' && typeof obj.packet === 'object' && obj.packet !== null && 'park' in obj.packet;
  const result = (parks ? parkCase : SURFACE_SCHEMAS[surface as keyof typeof SURFACE_SCHEMAS]).safeParse(item);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = issue?.path.map(String).join('.') || '(case)';
    const extra = result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more)` : '';
    throw new TasklatchError('INVALID_FIXTURE', `${label}: field "${path}": ${issue?.message ?? 'invalid'}${extra}`, {
      data: result.error.issues,
    });
  }
  return result.data;
}
