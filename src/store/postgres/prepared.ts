import { createHash } from 'node:crypto';
import pg from 'pg';
import { isStorableText } from '../../core/text.js';
import { unstorableError } from '../storable.js';
import { functionsOf, isTransactionPooled, staleFunctionOf } from './pooled.js';

/**
 * How the PostgreSQL store sends a statement as plain SQL: parameters written as literals that
 * read back exactly as the parameters would, and the session-level prepared statements a
 * message then executes by name. A write batch (`WriteBatcher`) and a claim walk's first and last
 * messages (`ShortTransaction`) travel this way, several statements in one simple-protocol
 * message; wherever a value has no exact literal, the caller keeps the parameterised path.
 */

/**
 * `value` as a SQL literal, for statements sent without parameters; null when it has none that
 * reads back exactly as the parameter would (a number that is not a safe integer, an object), so
 * the caller keeps the parameterised path. An array of strings and safe integers is written as
 * pg writes an array parameter; the statement casts it as it casts the parameter. A string that
 * is not storable text throws `INVALID_INPUT` (see `storable`).
 */
export function sqlLiteral(value: unknown): string | null {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : null;
  if (typeof value === 'string') return escapeLiteral(storable(value));
  if (Array.isArray(value)) {
    const elements = value.map(arrayElement);
    return elements.some((element) => element === null) ? null : escapeLiteral(`{${elements.join(',')}}`);
  }
  return null;
}

/**
 * `text` as a string literal, exactly as pg's `escapeLiteral` writes it (each quote and backslash
 * doubled, ` E` ahead of a literal that holds a backslash): pg builds its literal a character at
 * a time, which for a request's JSON cost more than the rest of the statement's text.
 */
function escapeLiteral(text: string): string {
  const quoted = text.includes("'") ? text.replace(/'/g, "''") : text;
  return text.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/**
 * An element of an array literal as pg writes an array parameter (`{"a","b"}`, NULL unquoted),
 * so that the literal reads back as the parameter would; null for anything but a string, a safe
 * integer or null.
 */
function arrayElement(value: unknown): string | null {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' && !Number.isSafeInteger(value)) return null;
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  return `"${storable(String(value)).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * `text` itself when it is storable text; else `INVALID_INPUT`, thrown while the caller builds
 * its statement, before it joins a batch: a NUL in a simple-protocol message ends the message
 * early, PostgreSQL answers `08P01` and closes the connection, failing every write of the batch;
 * a lone surrogate would be stored as U+FFFD.
 */
function storable(text: string): string {
  if (!isStorableText(text)) throw unstorableError('a parameter');
  return text;
}

/** `text` with each `$n` replaced by the literal of `params[n - 1]`; null when one has none. */
export function withLiterals(text: string, params: readonly unknown[]): string | null {
  const literals = literalsOf(params);
  return literals === null ? null : filledIn(text, literals);
}

/** The literal of each of `params`; null when one has none. */
export function literalsOf(params: readonly unknown[]): string[] | null {
  const literals: string[] = [];
  for (const param of params) {
    const literal = sqlLiteral(param);
    if (literal === null) return null;
    literals.push(literal);
  }
  return literals;
}

/** `text` with each `$n` replaced by `literals[n - 1]`. */
function filledIn(text: string, literals: readonly string[]): string {
  return text.replace(/\$(\d+)/g, (whole, n: string) => literals[Number(n) - 1] ?? whole);
}

/**
 * Session-level prepared statements for the writes sent as plain SQL (`WriteBatcher`): a
 * batch's message carries `EXECUTE name(literals)` instead of the statement's text, so
 * PostgreSQL parses and plans a write once per connection instead of once per write (about half
 * of the server's work for an admission, measured with pgbench -M prepared against -M
 * extended). Each connection prepares a statement the first time a message of it needs one.
 */

export interface Prepared {
  /** `tl_` and 16 hex digits of the text's SHA-256: one name per text, the same in every process. */
  name: string;
  text: string;
  /**
   * Executed with its generic plan always (`plan_cache_mode = force_generic_plan` for the
   * transaction that executes it): see `prepared`.
   */
  generic: boolean;
}

const byText = new Map<string, Prepared>();
/** The statements each connection has prepared, each with the `generation` it was prepared in. */
const preparedOn = new WeakMap<pg.ClientBase, Map<string, number>>();
/**
 * Raised when a prepared statement was found to return other columns than it was prepared with
 * (`isStalePlan`): every connection then prepares its statements again before their next use.
 */
let generation = 0;

/**
 * The prepared form of `text` (parameters `$1`…), one object per text.
 *
 * `generic`: its transaction executes it with its generic plan, never planning it for the values
 * at hand. PostgreSQL chooses per execution: custom plans for the first five, then the generic
 * plan while its estimated cost stays below the average of every custom plan made so far. A
 * statement whose plan is the same for any values but whose estimate grows with the table (the
 * admission: its bound checks count a caller's tasks, a subquery that rarely runs but is costed
 * in full) can fall to a custom plan on every execution once the table has grown and been
 * analyzed, its generic plan costed at the new size against custom plans made at the old one:
 * about 40 % of the server's CPU in planning, admissions at half their rate (the growth scenario,
 * 10^5 then 10^6 tasks on one connection).
 */
export function prepared(text: string, options: { generic?: boolean } = {}): Prepared {
  let found = byText.get(text);
  if (found === undefined) {
    found = { name: `tl_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, text, generic: false };
    byText.set(text, found);
  }
  if (options.generic === true) found.generic = true;
  return found;
}

/** What a transaction that executes a `generic` statement sets first (see `prepared`). */
export const GENERIC_PLANS = 'SET LOCAL plan_cache_mode = force_generic_plan';

/**
 * A prepared statement with its arguments written as literals (`sqlLiteral`). Its text is formed
 * each time it is sent (`callText`), so a write sent again after its statement's function was
 * forgotten (statement-functions.ts) goes as the statement's text.
 */
export interface Call {
  statement: Prepared;
  literals: readonly string[];
}

/** `statement` with `args` as literals; null when an argument has no exact literal. */
export function callWith(statement: Prepared, args: readonly unknown[]): Call | null {
  const literals = literalsOf(args);
  return literals === null ? null : { statement, literals };
}

/**
 * `EXECUTE name(literals)`. On `db` behind a pooler in transaction mode (pooled.ts), where a
 * prepared statement may be on another server connection, the call of the statement's function
 * once it has one (statement-functions.ts), else the statement's own text with the literals.
 */
export function callText(call: Call, db?: object): string {
  if (db !== undefined && isTransactionPooled(db)) {
    return functionsOf(db)?.callOf(call.statement, call.literals) ?? filledIn(call.statement.text, call.literals);
  }
  return `EXECUTE ${call.statement.name}(${call.literals.join(', ')})`;
}

/** `callText` of `statement` with `args`; null when an argument has no exact literal. */
export function executeCall(statement: Prepared, args: readonly unknown[], db?: object): string | null {
  const call = callWith(statement, args);
  return call === null ? null : callText(call, db);
}

/**
 * Prepares on `client` whichever of `statements` it has not prepared yet, or prepared before a
 * migration changed the columns of one of them (`isStalePlan`), one message each: a PREPARE
 * that fails created nothing, so the next use tries again.
 */
export async function ensurePrepared(client: pg.ClientBase, statements: readonly Prepared[]): Promise<void> {
  // Behind a pooler in transaction mode the statements travel as text (`callText`).
  if (isTransactionPooled(client)) return;
  let have = preparedOn.get(client);
  if (have === undefined) {
    have = new Map();
    preparedOn.set(client, have);
  }
  for (const statement of statements) {
    // The generation the PREPARE below belongs to: one raised while it is on its way finds this
    // statement older than itself, and it is prepared again.
    const now = generation;
    const at = have.get(statement.name);
    if (at === now) continue;
    if (at !== undefined) {
      await client.query(`DEALLOCATE ${statement.name}`);
      have.delete(statement.name);
    }
    await client.query(`PREPARE ${statement.name} AS ${statement.text}`);
    have.set(statement.name, now);
  }
}

/**
 * Whether `error` is PostgreSQL's refusal to run a prepared statement whose columns changed
 * since it was prepared (0A000 from `RevalidateCachedQuery`, "cached plan must not change result
 * type": a migration added a column under its `RETURNING *` or `SELECT *`). Nothing of the
 * transaction it failed was stored.
 */
export function isStalePlan(error: unknown): boolean {
  const { code, routine } = (error ?? {}) as { code?: unknown; routine?: unknown };
  return code === '0A000' && routine === 'RevalidateCachedQuery';
}

/** Most times `pastStaleStatements` prepares every statement again for one `send`. */
const PREPARE_AGAIN = 3;

/**
 * `send()`, sent again when it failed on a statement that a migration left with other columns
 * than it had when the connection prepared it, or made its function with: the transaction that
 * failed stored nothing.
 * - A prepared statement (`isStalePlan`): every connection prepares its statements again before
 *   their next use (`ensurePrepared`), up to `PREPARE_AGAIN` times for one `send`.
 * - Behind a pooler, a statement function (pooled.ts `staleFunctionOf`): forgotten where it
 *   failed, so the next try sends its statement as text; once per function, so a message with
 *   two such functions fails on the first, then on the second, then goes through.
 * So the writes and claims of a process that runs while a newer version migrates do not fail.
 */
export async function pastStaleStatements<T>(send: () => Promise<T>): Promise<T> {
  const forgotten = new Set<string>();
  let preparedAgain = 0;
  for (;;) {
    try {
      return await send();
    } catch (error) {
      const name = staleFunctionOf(error);
      if (name !== undefined && !forgotten.has(name)) {
        forgotten.add(name);
      } else if (isStalePlan(error) && preparedAgain < PREPARE_AGAIN) {
        preparedAgain += 1;
        generation += 1;
      } else {
        throw error;
      }
    }
  }
}
