import { createHash } from 'node:crypto';
import type pg from 'pg';
import { sqlLiteral } from './connection.js';

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
}

const byText = new Map<string, Prepared>();
const preparedOn = new WeakMap<pg.ClientBase, Set<string>>();

/** The prepared form of `text` (parameters `$1`…), one object per text. */
export function prepared(text: string): Prepared {
  let found = byText.get(text);
  if (found === undefined) {
    found = { name: `tl_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, text };
    byText.set(text, found);
  }
  return found;
}

/** `EXECUTE name(args as literals)`; null when an argument has no exact literal. */
export function executeCall(statement: Prepared, args: readonly unknown[]): string | null {
  const literals: string[] = [];
  for (const arg of args) {
    const literal = sqlLiteral(arg);
    if (literal === null) return null;
    literals.push(literal);
  }
  return `EXECUTE ${statement.name}(${literals.join(', ')})`;
}

/**
 * Prepares on `client` whichever of `statements` it has not prepared yet, one message each: a
 * PREPARE that fails created nothing, so the next use tries again.
 */
export async function ensurePrepared(client: pg.ClientBase, statements: readonly Prepared[]): Promise<void> {
  let have = preparedOn.get(client);
  if (have === undefined) {
    have = new Set();
    preparedOn.set(client, have);
  }
  for (const statement of statements) {
    if (have.has(statement.name)) continue;
    await client.query(`PREPARE ${statement.name} AS ${statement.text}`);
    have.add(statement.name);
  }
}
