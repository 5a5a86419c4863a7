import { TasklatchError } from '../core/errors.js';
import { isStorableText } from '../core/text.js';

/**
 * The store's own check that what a caller hands it can be stored as it is, made before the
 * caller's work joins a batch with anyone else's: a NUL or a lone surrogate refused here is the
 * caller's `INVALID_INPUT` alone, where inside a batch it would fail the batch's statement (a NUL
 * in a PostgreSQL message is a protocol violation that closes the connection; a lone surrogate in
 * a JSON parameter is refused by json and jsonb) and with it every caller sharing it, or would
 * reach the database changed (a lone surrogate becomes U+FFFD on the way, so two distinct auth
 * keys would be stored as one). The wire refuses such input first; library callers reach the
 * store directly, so the store checks again. One regex test per string the caller gave.
 */

/**
 * Fields whose values are JSON values, checked as their JSON text by the store that stores them
 * as JSON (PostgreSQL's `toJson`): a SQL store that keeps JSON as text stores any of them.
 * `responses` holds JSON values under input keys: its keys are checked, not its values.
 */
const JSON_VALUED = new Set(['request', 'result', 'abandonedResult', 'value', 'error', 'params']);

/** Most nesting walked: inputs are a few levels deep (a fence, a claim, questions). */
const MOST_DEPTH = 4;

/**
 * Throws `INVALID_INPUT` naming the first string of `input` (its fields, their fields, arrays'
 * elements, object keys) that is not storable text; JSON-valued fields are left to the store's
 * JSON check. `what` names the operation in the message.
 */
export function refuseUnstorable(what: string, input: object): void {
  const refused = unstorableRefusal(what, input);
  if (refused !== null) throw refused;
}

/** The error `refuseUnstorable` throws, or null when every string of `input` is storable. */
export function unstorableRefusal(what: string, input: object): TasklatchError | null {
  const bad = unstorableIn(input, '', 0);
  return bad === null ? null : unstorableError(`${what}: ${bad}`);
}

function unstorableIn(value: unknown, path: string, depth: number): string | null {
  if (typeof value === 'string') return isStorableText(value) ? null : path;
  if (typeof value !== 'object' || value === null || depth > MOST_DEPTH) return null;
  if (Array.isArray(value)) {
    for (const [i, element] of value.entries()) {
      const bad = unstorableIn(element, `${path}[${i}]`, depth + 1);
      if (bad !== null) return bad;
    }
    return null;
  }
  const fields = value as Record<string, unknown>;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key) || JSON_VALUED.has(key)) continue;
    const inner = fields[key];
    // Most fields are numbers, null or text: the path is built only for what is walked or refused.
    if (typeof inner === 'string' && isStorableText(inner) && isStorableText(key)) continue;
    if (!isStorableText(key)) return `a key of ${path === '' ? 'the input' : path}`;
    const at = path === '' ? key : `${path}.${key}`;
    if (key === 'responses' && typeof inner === 'object' && inner !== null) {
      for (const answered of Object.keys(inner)) if (!isStorableText(answered)) return `a key of ${at}`;
      continue;
    }
    const bad = unstorableIn(inner, at, depth + 1);
    if (bad !== null) return bad;
  }
  return null;
}

/** The error of a value that is not storable text. */
export function unstorableError(where: string): TasklatchError {
  return new TasklatchError('INVALID_INPUT', `${where} holds a NUL or an unpaired surrogate: not storable text`);
}

/**
 * An escape `JSON.stringify` writes for a NUL (`\u0000`, which jsonb refuses) or for a lone
 * surrogate (`\ud800`…`\udfff`, which json and jsonb refuse), preceded by an even run of
 * backslashes (an odd one makes it the escaped text of a backslash and `u…`). `JSON.stringify`
 * writes a surrogate pair as the character itself, never as escapes, so any surrogate escape in
 * its output is a lone one.
 */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/** Whether JSON text `JSON.stringify` wrote can be stored as json and jsonb. */
export function isStorableJson(text: string): boolean {
  // The backslash test first: most JSON has no escape at all.
  return !text.includes('\\u') || !UNSTORABLE_ESCAPE.test(text);
}
