/**
 * The synthetic population of stored tasks the reads-at-scale and growth scenarios measure on,
 * defined once for SQL and for TypeScript: task `i` (1…total) belongs to tenant `i % tenants`
 * (auth key `tenant-K/alice`), was created 50 ms after task i−1, the last one two hours before
 * the load; a hash of i picks its tool (one of four), its status (70 % completed, 10 % each
 * failed, working, cancelled) and puts 10 % of the tasks on a one-hour ttl, so they are expired,
 * spread over every tenant. The rest have the maximum ttl (7 days). A range of it can be loaded
 * at a time (`from`…`to` of `total`), so one table grows by steps to its full size.
 */
const HASH = 2654435761;
// In BigInt: past i ≈ 3.4 million the product exceeds 2^53, where a double loses the low bits SQL keeps.
const h = (i: number) => Number((BigInt(i) * BigInt(HASH)) % 4294967296n);
export const isExpired = (i: number) => Math.floor(h(i) / 256) % 10 === 3;
export const taskIdOf = (i: number) => `${h(i).toString(16).padStart(8, '0')}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
export const authKeyOf = (tenant: number) => `tenant-${tenant}/alice`;
const SPACING_MS = 50;
const LONG_TTL = 604_800_000;
const SHORT_TTL = 3_600_000;
/** The tools a task may be of, picked by the hash (a task's request names the same tool). */
const TOOLS = ['export_ledger', 'summarize_thread', 'render_invoice', 'sync_contacts'] as const;
const pgTool = `(ARRAY[${TOOLS.map((t) => `'${t}'`).join(', ')}])[1 + ((x.h / 4096) % ${TOOLS.length})::int]`;
const sqliteTool = `CASE (h / 4096) % ${TOOLS.length} ${TOOLS.map((t, k) => `WHEN ${k} THEN '${t}'`).join(' ')} END`;

/** A live (not expired) task of a population of `n`, optionally of a tenant below `onlyTenants`. */
export function randomLiveTask(n: number, tenants: number, onlyTenants?: number): { taskId: string; auth: string } {
  for (;;) {
    // Task i belongs to tenant i % tenants; with onlyTenants, pick a tenant below it first.
    const i =
      onlyTenants === undefined
        ? 1 + Math.floor(Math.random() * n)
        : Math.floor(Math.random() * onlyTenants) + tenants * Math.floor(Math.random() * Math.floor(n / tenants));
    if (i >= 1 && i <= n && !isExpired(i)) return { taskId: taskIdOf(i), auth: authKeyOf(i % tenants) };
  }
}

/**
 * PostgreSQL bulk load of tasks $1…$2 of $5 ($3 tenants, $4 the load's epoch ms): one
 * INSERT … SELECT over generate_series, in key order (the ids sorted first, so the primary key
 * fills page by page), with the outbox row of each task in the same statement, and the rows it
 * inserted counted per tenant (task_caller_counts) as the store's triggers would have counted them. Run it on a
 * `loaderPool` connection, where those triggers stay off.
 */
export const pgLoad = `
WITH ids AS (SELECT i, (i * ${HASH}) % 4294967296 AS h FROM generate_series($1::bigint, $2::bigint) AS i ORDER BY h, i),
x AS (SELECT i, h, ${pgTool.replace(/x\.h/g, 'h')} AS tool,
             CASE WHEN h % 10 < 7 THEN 'completed' WHEN h % 10 = 7 THEN 'failed' WHEN h % 10 = 8 THEN 'working' ELSE 'cancelled' END AS status,
             $4::bigint - 7200000 - ($5::bigint - i) * ${SPACING_MS} AS created,
             CASE WHEN (h / 256) % 10 = 3 THEN ${SHORT_TTL} ELSE ${LONG_TTL} END AS ttl
        FROM ids),
t AS (
INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, ttl_ms, expires_at_ms,
                   poll_interval_ms, request_digest, idempotency_key, request, cancel_requested, result, result_digest, correlation_id, attempt)
SELECT lpad(to_hex(x.h), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(i), 12, '0'),
       'tenant-' || (i % $3) || '/alice',
       x.tool,
       x.status,
       CASE WHEN x.status = 'working' THEN 1 ELSE 2 END,
       x.created,
       x.created + CASE WHEN x.status = 'working' THEN 0 ELSE 1500 END,
       x.ttl, x.created + x.ttl, 1000,
       encode(sha256(convert_to('request:' || i, 'UTF8')), 'hex'),
       CASE WHEN i % 4 = 0 THEN 'idem-' || i END,
       jsonb_build_object('method', 'tools/call', 'params', jsonb_build_object('name', x.tool,
         'arguments', jsonb_build_object('month', '2026-06', 'format', 'csv', 'rows', i % 5000, 'delayMs', 0),
         'task', jsonb_build_object('ttl', x.ttl))),
       x.status = 'cancelled',
       CASE WHEN x.status IN ('completed', 'failed') THEN jsonb_build_object(
         'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'exported ' || (i % 5000) || ' rows of 2026-06')),
         'structuredContent', jsonb_build_object('file', '/exports/tenant-' || (i % $3) || '/task_' || i || '.csv', 'rows', i % 5000,
           'sha256', encode(sha256(convert_to('result:' || i, 'UTF8')), 'hex'))) END,
       CASE WHEN x.status IN ('completed', 'failed') THEN encode(sha256(convert_to('digest:' || i, 'UTF8')), 'hex') END,
       md5('c' || i)::uuid::text,
       CASE WHEN x.status = 'working' THEN 0 ELSE 1 END
  FROM x
RETURNING task_id, auth_key, status, created_at_ms, last_updated_at_ms),
counted AS (
INSERT INTO task_caller_counts (auth_key, stored)
SELECT auth_key, count(*) FROM t GROUP BY 1 ORDER BY 1
ON CONFLICT (auth_key) DO UPDATE SET stored = task_caller_counts.stored + EXCLUDED.stored)
INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms, attempt, done_at_ms)
SELECT task_id, created_at_ms, created_at_ms, 1, CASE WHEN status <> 'working' THEN last_updated_at_ms END FROM t`;

/** The same population in SQLite: a recursive CTE (no sha256: random digests); @from…@to of @total. */
export const sqliteLoad = `
WITH RECURSIVE seq(i) AS (SELECT @from UNION ALL SELECT i + 1 FROM seq WHERE i < @to),
x AS (SELECT i, (i * ${HASH}) % 4294967296 AS h FROM seq),
y AS (SELECT i, h, ${sqliteTool} AS tool,
             CASE WHEN h % 10 < 7 THEN 'completed' WHEN h % 10 = 7 THEN 'failed' WHEN h % 10 = 8 THEN 'working' ELSE 'cancelled' END AS status,
             @base - 7200000 - (@total - i) * ${SPACING_MS} AS created,
             CASE WHEN (h / 256) % 10 = 3 THEN ${SHORT_TTL} ELSE ${LONG_TTL} END AS ttl
        FROM x)
INSERT INTO tasks (task_id, auth_key, tool_name, status, version, created_at_ms, last_updated_at_ms, ttl_ms, expires_at_ms,
                   poll_interval_ms, request_digest, idempotency_key, request, cancel_requested, result, result_digest, correlation_id, attempt)
SELECT printf('%08x-0000-4000-8000-%012x', h, i),
       'tenant-' || (i % @tenants) || '/alice',
       tool,
       status,
       CASE WHEN status = 'working' THEN 1 ELSE 2 END,
       created,
       created + CASE WHEN status = 'working' THEN 0 ELSE 1500 END,
       ttl, created + ttl, 1000,
       lower(hex(randomblob(32))),
       CASE WHEN i % 4 = 0 THEN 'idem-' || i END,
       json_object('method', 'tools/call', 'params', json_object('name', tool,
         'arguments', json_object('month', '2026-06', 'format', 'csv', 'rows', i % 5000, 'delayMs', 0),
         'task', json_object('ttl', ttl))),
       status = 'cancelled',
       CASE WHEN status IN ('completed', 'failed') THEN json_object(
         'content', json_array(json_object('type', 'text', 'text', 'exported ' || (i % 5000) || ' rows of 2026-06')),
         'structuredContent', json_object('file', '/exports/tenant-' || (i % @tenants) || '/task_' || i || '.csv', 'rows', i % 5000,
           'sha256', lower(hex(randomblob(32))))) END,
       CASE WHEN status IN ('completed', 'failed') THEN lower(hex(randomblob(32))) END,
       lower(hex(randomblob(16))),
       CASE WHEN status = 'working' THEN 0 ELSE 1 END
  FROM y ORDER BY 1`;

/** The outbox rows of the SQLite tasks @from…@to (their ids carry i in the last 12 hex digits). */
export const sqliteOutbox = `
INSERT INTO task_outbox (task_id, created_at_ms, available_at_ms, attempt, done_at_ms)
SELECT task_id, created_at_ms, created_at_ms, 1, CASE WHEN status <> 'working' THEN last_updated_at_ms END FROM tasks
 WHERE created_at_ms BETWEEN @base - 7200000 - (@total - @from) * ${SPACING_MS} AND @base - 7200000 - (@total - @to) * ${SPACING_MS}
   AND auth_key LIKE 'tenant-%'`;
