import { parseArgs } from 'node:util';
import { coerceError, TasklatchError } from '../core/errors.js';
import { DEFAULT_RETENTION_MS, sweepStore } from '../service/expiry-sweeper.js';
import { describeStoreUrl } from '../store/open-store.js';
import { STORE_USAGE_LINE, storeUrlFrom } from './store-url.js';
import type { CliIo } from './io.js';
import { openOperatorStore } from './operator-store.js';
import { parseDuration } from './worker-options.js';

export const PRUNE_USAGE = `Usage: tasklatch prune [--store URL] [--retention DURATION] [--dry-run]

Removes now what the sweeper of serve and worker removes on its timer: tasks expired or finished
(without a ttl) longer ago than the retention, with their outbox entries, questions and audit
trails, and audit rows older than the retention whose task is gone.
${STORE_USAGE_LINE}
  --retention DURATION   7d (default), 36h, 90m, 30s or milliseconds
  --dry-run              count what would go, and remove nothing`;

/** Tasks per batch: each batch is one short transaction, so serving processes are not held up. */
const BATCH = 500;

export async function pruneCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      store: { type: 'string' },
      retention: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      help: { type: 'boolean' },
    },
  });
  if (values.help === true) {
    io.out(PRUNE_USAGE);
    return 0;
  }
  // Checked before the store is opened: bad input changes nothing.
  const retentionMs = values.retention === undefined ? DEFAULT_RETENTION_MS : parseDuration('--retention', values.retention);
  const storeUrl = storeUrlFrom(values.store);
  const store = await openOperatorStore(storeUrl);
  try {
    const now = Date.now();
    const where = describeStoreUrl(storeUrl);
    if (values['dry-run']) {
      const due = await store.retentionDue({ now, retentionMs });
      io.out(`${where}: would remove ${due.tasks} task(s) and ${due.auditRows} audit row(s) (dry run: nothing removed)`);
      return 0;
    }
    const gone = await sweepStore(store, { now, retentionMs, batchSize: BATCH, maxBatches: Number.MAX_SAFE_INTEGER });
    io.out(`${where}: removed ${gone.tasks} task(s) and ${gone.auditRows} audit row(s)`);
    return 0;
  } catch (error) {
    if (error instanceof TasklatchError) throw error;
    throw new TasklatchError('STORE_UNAVAILABLE', `the store failed: ${coerceError(error).message}`, { cause: error });
  } finally {
    await store.close();
  }
}
