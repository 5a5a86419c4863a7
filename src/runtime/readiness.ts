import { coerceError } from '../core/errors.js';
import type { Guard } from '../service/guard.js';

/** One check of `/readyz` and `tasklatch doctor`: ok, or what is wrong and what to do. */
export interface ReadinessCheck {
  name: 'store' | 'driver' | 'migrations' | 'notifications';
  ok: boolean;
  detail: string;
  /** What to do about it, when not ok. */
  fix?: string;
}

export interface Readiness {
  ready: boolean;
  checks: ReadinessCheck[];
  /** The first failed check's detail, when not ready. */
  reason?: string;
}

/** Builds the answer of a list of checks. */
export function readinessOf(checks: ReadinessCheck[]): Readiness {
  const failed = checks.find((c) => !c.ok);
  return failed === undefined ? { ready: true, checks } : { ready: false, checks, reason: `${failed.name}: ${failed.detail}` };
}

/**
 * Whether this process can do its work now: the store answers (within `timeoutMs`), its schema
 * is the one this code migrates to, and, where the store notifies, the notification connection
 * is up (without it, waiters and idle workers hear other processes only by polling).
 */
export async function checkReadiness(guard: Pick<Guard, 'context' | 'relay'>, timeoutMs = 2000): Promise<Readiness> {
  const { context, relay } = guard;
  const { store } = context;
  const checks: ReadinessCheck[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const schema = await Promise.race([context.timed('schemaState', context.started(), store.schemaState()), timeout]);
    checks.push({ name: 'store', ok: true, detail: `${store.kind} store answers` });
    if (schema.mismatch !== null) {
      checks.push({ name: 'migrations', ok: false, detail: schema.mismatch, fix: 'run the tasklatch version that migrated this store, or a newer one' });
    } else if (schema.pending.length > 0) {
      checks.push({ name: 'migrations', ok: false, detail: `pending: ${schema.pending.join(', ')}`, fix: 'run tasklatch migrate --store URL' });
    } else {
      checks.push({ name: 'migrations', ok: true, detail: 'schema current' });
    }
  } catch (error) {
    const detail = `unreachable: ${coerceError(error).message}`;
    checks.push({ name: 'store', ok: false, detail, fix: 'check that the database is up and that --store points at it' });
  } finally {
    clearTimeout(timer);
  }
  if (store.supports.listenNotify) {
    const state = relay.state;
    checks.push(
      state === 'down'
        ? { name: 'notifications', ok: false, detail: 'the notification connection is lost; reconnecting', fix: 'check the database connection (LISTEN)' }
        : { name: 'notifications', ok: true, detail: state === 'up' ? 'listening' : 'not started' },
    );
  }
  return readinessOf(checks);
}
