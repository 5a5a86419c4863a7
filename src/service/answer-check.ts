import { Ajv, type ValidateFunction } from 'ajv';
import { jcsSha256 } from '../core/digest.js';
import type { InputRequest } from '../core/input-rules.js';
import { jsonBytes } from './limits.js';

/**
 * One validator for every question's `requestedSchema`. Formats are not checked (no format
 * vocabulary is bundled); types, `required`, `enum`, lengths and ranges are. Not strict: a
 * schema with annotations Ajv does not know (`enumNames`, …) still compiles.
 */
const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: false });

/** Compiled validators by schema digest; a tool asks with few schemas, the bound only guards memory. */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 256;

function validatorOf(schema: Record<string, unknown>): ValidateFunction | null {
  const digest = jcsSha256(schema);
  let validate = compiled.get(digest);
  if (validate === undefined) {
    try {
      validate = ajv.compile(schema);
    } catch {
      // A schema Ajv cannot compile is the tool's: the answer is taken as the client sent it.
      return null;
    }
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(digest, validate);
  }
  return validate;
}

/**
 * Why an answer to a question is refused, or null: larger than `maxBytes` as JSON, or an
 * accepted elicitation whose `content` does not match the question's `requestedSchema`. The
 * reason names the key; the caller refuses with invalid params and stores nothing.
 */
export function answerProblem(key: string, request: InputRequest, answer: unknown, maxBytes: number): string | null {
  const bytes = jsonBytes(answer);
  if (bytes > maxBytes) return `the answer to ${key} is ${bytes} bytes; at most ${maxBytes} are accepted`;
  if (request.method !== 'elicitation/create') return null;
  const a = answer as { action?: unknown; content?: unknown };
  if (a.action !== 'accept') return null;
  const schema = request.params?.requestedSchema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  const validate = validatorOf(schema as Record<string, unknown>);
  if (validate === null || validate(a.content ?? {})) return null;
  const issue = validate.errors?.[0];
  const where = `${key}.content${issue?.instancePath.replaceAll('/', '.') ?? ''}`;
  return `the answer to ${key} does not match its requestedSchema: ${where} ${issue?.message ?? 'is invalid'}`.slice(0, 300);
}
