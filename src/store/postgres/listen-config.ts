import type pg from 'pg';
import { TasklatchError } from '../../core/errors.js';
import { parsePostgresUrl, type PostgresTarget } from './connection.js';

/**
 * The connection a PostgreSQL store LISTENs on. A direct store URL listens on its own server;
 * one behind a pooler in transaction mode (`pgbouncer=true`) needs a direct URL (`listenUrl`,
 * `--listen-store`) for it, since LISTEN lasts as long as a session, and has none without one
 * (null: its waiters and workers poll). The listen URL connects with the store's schema: a
 * `?schema=` of its own must name the same one.
 */
export function listenConfigOf(store: PostgresTarget, listenUrl: string | undefined): pg.ClientConfig | null {
  if (listenUrl === undefined) return store.pgbouncer ? null : directConfig(store);
  // On a direct store too: the listen URL may go another way to the same server.
  const target = parsePostgresUrl(listenUrl);
  if (target.pgbouncer) {
    throw new TasklatchError(
      'INVALID_STORE_URL',
      'the listen URL must connect directly (LISTEN needs a session a pooler in transaction mode does not keep): drop pgbouncer=true',
    );
  }
  if (target.schema !== null && target.schema !== store.schema) {
    throw new TasklatchError('INVALID_STORE_URL', `the listen URL names schema ${target.schema}, the store ${store.schema ?? '(none)'}: they must be the same`);
  }
  return directConfig(Object.assign({}, target, { schema: store.schema }));
}

function directConfig(target: PostgresTarget): pg.ClientConfig {
  const options = [target.options, target.schema === null ? null : `-c search_path=${target.schema}`].filter((o) => o !== null);
  return {
    connectionString: target.connectionString,
    connectionTimeoutMillis: 10_000,
    ...(options.length === 0 ? {} : { options: options.join(' ') }),
  };
}

/** `config`, or INTERNAL when there is none: the store says it has no notifications (`listenNotify`). */
export function listenConfigIn(config: pg.ClientConfig | null): pg.ClientConfig {
  if (config === null) throw new TasklatchError('INTERNAL', 'no notifications behind a pooler (pgbouncer=true) without a direct listen URL');
  return config;
}
