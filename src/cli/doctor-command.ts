import { parseArgs } from 'node:util';
import { readinessOf, type ReadinessCheck } from '../runtime/readiness.js';
import { describeStoreUrl } from '../store/open-store.js';
import { STORE_USAGE_LINE, storeUrlFrom } from './store-url.js';
import { probeStore } from '../store/probe-store.js';
import type { CliIo } from './io.js';

export const DOCTOR_USAGE = `Usage: tasklatch doctor [--store URL] [--json]

Checks what /readyz checks, from the command line, and says what to fix: the store answers,
its schema is current, PostgreSQL notifications work. Creates and migrates nothing.
Exit 0 when healthy, 1 when a check fails, 2 on bad input.
${STORE_USAGE_LINE}
  --json                 the checks as JSON`;

export async function doctorCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { store: { type: 'string' }, json: { type: 'boolean', default: false }, help: { type: 'boolean' } },
  });
  if (values.help === true) {
    io.out(DOCTOR_USAGE);
    return 0;
  }
  const storeUrl = storeUrlFrom(values.store);
  const probe = await probeStore(storeUrl);
  const checks: ReadinessCheck[] = [];
  if (probe.unreachable !== null) {
    checks.push({
      name: 'store',
      ok: false,
      detail: `${probe.where}: ${probe.unreachable}`,
      fix: 'start the database, or point --store at it (tasklatch migrate creates a new store)',
    });
  } else {
    checks.push({ name: 'store', ok: true, detail: `${probe.where} answers` });
    if (probe.driver !== undefined) checks.push({ name: 'driver', ok: true, detail: probe.driver });
    const schema = probe.schema!;
    if (schema.mismatch !== null)
      checks.push({ name: 'migrations', ok: false, detail: schema.mismatch, fix: 'use the tasklatch version that migrated this store, or a newer one' });
    else if (schema.pending.length > 0)
      checks.push({
        name: 'migrations',
        ok: false,
        detail: `not applied: ${schema.pending.join(', ')}`,
        fix: `run: tasklatch migrate --store ${describeStoreUrl(storeUrl)}`,
      });
    else checks.push({ name: 'migrations', ok: true, detail: 'schema current' });
    if (probe.notifications !== null) {
      checks.push(
        probe.notifications === 'ok'
          ? { name: 'notifications', ok: true, detail: 'LISTEN works' }
          : {
              name: 'notifications',
              ok: false,
              detail: `LISTEN failed: ${probe.notifications}`,
              fix: 'connect directly, not through a transaction-pooling proxy (LISTEN needs a session)',
            },
      );
    }
  }
  const readiness = readinessOf(checks);
  if (values.json) io.out(JSON.stringify(readiness));
  else {
    for (const c of checks) io.out(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(13)} ${c.detail}${c.fix === undefined ? '' : `\n      fix: ${c.fix}`}`);
    io.out(readiness.ready ? 'healthy' : 'unhealthy');
  }
  return readiness.ready ? 0 : 1;
}
