import { readdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Every module the root entry loads statically (dynamic `import()` is not followed). */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const spec = m[1]!;
      if (/^\s*(?:import|export)\s+type\s/.test(m[0])) continue;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

describe('the root entry', () => {
  it('loads neither pg, better-sqlite3 nor the MCP SDK', () => {
    const { packages } = staticGraph(resolve(SRC, 'index.ts'));
    expect(packages.has('pg')).toBe(false);
    expect(packages.has('better-sqlite3')).toBe(false);
    expect(packages.has('@modelcontextprotocol/sdk')).toBe(false);
    expect(packages.has('@modelcontextprotocol/server')).toBe(false);
    expect(packages.has('@modelcontextprotocol/client')).toBe(false);
    // pino: the runtime's logger.
    expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['canonicalize', 'pino', 'zod']);
  });

  it('tasklatch/sdk-v2 loads no MCP SDK (it works on the caller’s McpServer); tasklatch/client only the 2.x client packages', () => {
    const sdkV2 = staticGraph(resolve(SRC, 'sdk-v2.ts')).packages;
    expect(sdkV2.has('@modelcontextprotocol/server')).toBe(false);
    expect(sdkV2.has('@modelcontextprotocol/sdk')).toBe(false);
    const client = [...staticGraph(resolve(SRC, 'client.ts')).packages].sort();
    expect(client).toEqual(['@modelcontextprotocol/client', '@modelcontextprotocol/ext-tasks']);
  });

  it('keeps the core free of I/O: only node:crypto and its own files', () => {
    const files = new Set<string>();
    const packages = new Set<string>();
    for (const f of readdirSync(resolve(SRC, 'core')).filter((name) => name.endsWith('.ts'))) {
      const graph = staticGraph(resolve(SRC, 'core', f));
      graph.files.forEach((file) => files.add(file));
      graph.packages.forEach((p) => packages.add(p));
    }
    expect([...files].filter((f) => !f.startsWith(resolve(SRC, 'core')))).toEqual([]);
    expect([...packages].sort()).toEqual(['canonicalize', 'node:crypto']);
  });

  const ENTRY_POINTS = {
    index: () => import('../src/index.js'),
    mcp: () => import('../src/mcp.js'),
    http: () => import('../src/http.js'),
    sqlite: () => import('../src/sqlite.js'),
    postgres: () => import('../src/postgres.js'),
    sdk: () => import('../src/sdk.js'),
    'sdk-v2': () => import('../src/sdk-v2.js'),
    client: () => import('../src/client.js'),
  };

  // The public API is a list: a change to any entry point's exports is a decision, made here.
  it.each([
    [
      'index',
      [
        'ANONYMOUS',
        'ANSWER_DECISIONS',
        'APP_NAME_MAX',
        'ASK_DECISIONS',
        'CREATE_DECISIONS',
        'ChangeFeed',
        'DEFAULT_APP',
        'DEFAULT_LIMITS',
        'ERROR_CODES',
        'ExpirySweeper',
        'IDEMPOTENCY_META_KEY',
        'JSON_RPC_CODES',
        'LIMIT_DECISION',
        'LIST_DECISIONS',
        'META_KEYS',
        'MemoryStore',
        'PRINCIPAL_MAX',
        'ProtocolError',
        'READ_DECISIONS',
        'READ_METHODS',
        'RELEASE_DECISION',
        'STEP_DECISIONS',
        'STORED_LIMIT_DECISION',
        'SURFACES',
        'StepFailedError',
        'TASKS_EXTENSION',
        'TASK_STATUSES',
        'TERMINAL_STATUSES',
        'TRANSITION_DECISIONS',
        'TaskExecutor',
        'TaskRuntime',
        'TasklatchError',
        'ToolRegistry',
        'Worker',
        'argumentProblem',
        'authKeyOf',
        'checkAppName',
        'classifyMiss',
        'compareCodePoints',
        'compareListOrder',
        'createLogger',
        'createRuntime',
        'decideAdmission',
        'decideCancel',
        'decideCreate',
        'decideCreateEntry',
        'decideDispatch',
        'decideLimitedAdmission',
        'decideList',
        'decideRead',
        'decideTransition',
        'decideVisibleRead',
        'declaresTaskCalls',
        'defineTool',
        'errorResult',
        'formatTimestamp',
        'holdsFence',
        'idempotencyKeyOf',
        'invokeTool',
        'isAugmented',
        'isExpired',
        'isForClaimer',
        'isStoredError',
        'isTaskStatus',
        'isTasklatchError',
        'isTerminal',
        'jcsSha256',
        'leaseHeld',
        'openGuard',
        'openStore',
        'parseFixture',
        'parsePrincipal',
        'parseTimestamp',
        'pathSegmentOf',
        'principalOf',
        'principalProblem',
        'requestDigest',
        'resultDigest',
        'runReplay',
        'stepOf',
        'taskSupportOf',
        'toolDigest',
        'visibleTasks',
        'visibleTo',
      ],
    ],
    ['mcp', ['ANONYMOUS', 'TASK_NOT_FOUND_MESSAGE', 'TOO_MANY_TASKS', 'TaskServer', 'WireError', 'createTaskServer', 'demoTools', 'wireResult', 'wireTask']],
    [
      'http',
      [
        'CLOCK_SKEW_SECONDS',
        'DEFAULT_CONNECTION_LIMITS',
        'DEFAULT_SESSION_LIMITS',
        'PROTOCOL_GENERATIONS',
        'createOAuthResource',
        'loadTokenFile',
        'startHttpServer',
        'tokensAuthenticate',
        'watchTokenFile',
      ],
    ],
    ['sqlite', ['SqliteStore', 'migrateSqlite']],
    ['postgres', ['POSTGRES_MIGRATIONS_DIR', 'PostgresStore', 'migratePostgres', 'readPostgresMigrations']],
    ['sdk', ['RequestAuth', 'SUPPORTED_SDK_RANGE', 'SdkTaskStore', 'SdkTasklatch', 'attachTasklatch', 'principalFromAuthInfo', 'tasklatchWorker']],
    ['sdk-v2', ['SUPPORTED_SDK_V2_RANGE', 'SdkV2Tasklatch', 'attachTasklatchV2', 'tasklatchWorkerV2']],
    ['client', ['MODERN_PROTOCOL_VERSION', 'framed', 'httpDispatch', 'legacyRequester', 'modernRequester', 'post']],
  ])('pins the exports of src/%s.ts', async (entry, names) => {
    const api = (await ENTRY_POINTS[entry as keyof typeof ENTRY_POINTS]()) as Record<string, unknown>;
    expect(Object.keys(api).sort()).toEqual(names);
  });
});
