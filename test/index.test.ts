import { readdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
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
    // pino: the runtime's logger; the OpenTelemetry API (a no-op until an SDK is registered) and
    // its W3C trace-context propagator. No SDK: the CLI imports one only when asked.
    expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['@opentelemetry/api', '@opentelemetry/core', 'canonicalize', 'pino', 'zod']);
  });

  it('tasklatch/sdk-v2 loads no MCP SDK (it works on the caller’s McpServer); tasklatch/client only the 2.x client packages', () => {
    const sdkV2 = staticGraph(resolve(SRC, 'sdk-v2.ts')).packages;
    expect(sdkV2.has('@modelcontextprotocol/server')).toBe(false);
    expect(sdkV2.has('@modelcontextprotocol/sdk')).toBe(false);
    const client = [...staticGraph(resolve(SRC, 'client.ts')).packages].sort();
    expect(client).toEqual(['@modelcontextprotocol/client', '@modelcontextprotocol/ext-tasks']);
  });

  it('tasklatch/core loads the core alone; tasklatch/replay no driver and no MCP SDK', () => {
    const core = staticGraph(resolve(SRC, 'core.ts'));
    expect([...core.files].filter((file) => file !== resolve(SRC, 'core.ts') && !file.startsWith(resolve(SRC, 'core') + '/'))).toEqual([]);
    expect([...core.packages].sort()).toEqual(['canonicalize', 'node:crypto']);
    const replay = staticGraph(resolve(SRC, 'replay.ts')).packages;
    for (const heavy of ['pg', 'better-sqlite3', '@modelcontextprotocol/sdk', '@modelcontextprotocol/server', '@modelcontextprotocol/client'])
      expect(replay.has(heavy)).toBe(false);
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
    core: () => import('../src/core.js'),
    replay: () => import('../src/replay.js'),
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
        'ERROR_CODES',
        'JSON_RPC_CODES',
        'MemoryStore',
        'ProtocolError',
        'StepFailedError',
        'TasklatchError',
        'Worker',
        'awaitTaskResult',
        'createRuntime',
        'createTask',
        'defineTool',
        'errorResult',
        'isTasklatchError',
        'openGuard',
        'openStore',
        'pathSegmentOf',
        'principalProblem',
        'stepOf',
      ],
    ],
    [
      'core',
      [
        'ANSWER_DECISIONS',
        'APP_NAME_MAX',
        'ASK_DECISIONS',
        'CREATE_DECISIONS',
        'DEFAULT_APP',
        'DEFAULT_VERSION_SILENCE_MS',
        'ERROR_CODES',
        'IDEMPOTENCY_META_KEY',
        'JOURNAL_MISMATCH_ACTIONS',
        'LIMIT_DECISION',
        'LIST_DECISIONS',
        'META_KEYS',
        'PARK_DECISIONS',
        'PRINCIPAL_MAX',
        'READ_DECISIONS',
        'READ_METHODS',
        'RELEASE_DECISION',
        'STEP_DECISIONS',
        'STEP_KINDS',
        'STEP_STATUSES',
        'STORED_LIMIT_DECISION',
        'SURFACES',
        'TASKS_EXTENSION',
        'TASK_STATUSES',
        'TERMINAL_STATUSES',
        'TOOL_VERSION_MAX',
        'TRANSITION_DECISIONS',
        'TasklatchError',
        'authKeyOf',
        'checkAppName',
        'checkToolVersion',
        'classifyMiss',
        'compareCodePoints',
        'compareListOrder',
        'decideAdmission',
        'decideAnswer',
        'decideAsk',
        'decideCallMode',
        'decideCancel',
        'decideCreate',
        'decideCreateEntry',
        'decideDispatch',
        'decideFreshEntry',
        'decideGateRevision',
        'decideLimitedAdmission',
        'decideList',
        'decidePark',
        'decidePatch',
        'decideRead',
        'decideStepRecord',
        'decideStepReplay',
        'decideTransition',
        'decideVersionGrants',
        'decideVisibleRead',
        'declaresTaskCalls',
        'defaultToolVersion',
        'formatTimestamp',
        'holdsFence',
        'idempotencyKeyOf',
        'isAugmented',
        'isExpired',
        'isForClaimer',
        'isTaskStatus',
        'isTasklatchError',
        'isTerminal',
        'jcsSha256',
        'leaseHeld',
        'mayClaimVersion',
        'parkDelay',
        'parkWrite',
        'parkedMessage',
        'parsePrincipal',
        'parseTimestamp',
        'principalOf',
        'principalProblem',
        'requestDigest',
        'resultDigest',
        'taskSupportOf',
        'toolDigest',
        'visibleTasks',
        'visibleTo',
      ],
    ],
    ['replay', ['parseFixture', 'runReplay']],
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

  // Types are API too: the names an entry exports only as types (values are pinned above). The
  // entries name every export (no `export *`), so their own text lists them.
  it('pins the type-only exports of the root, core and replay entries', () => {
    const files = ['index', 'core', 'replay'].map((entry) => resolve(SRC, `${entry}.ts`));
    const typeOnly = (file: string) =>
      ts
        .createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022)
        .statements.filter(ts.isExportDeclaration)
        .flatMap((declaration) => {
          const clause = declaration.exportClause;
          if (clause === undefined || !ts.isNamedExports(clause)) throw new Error(`${file}: name every export`);
          return clause.elements.filter((element) => declaration.isTypeOnly || element.isTypeOnly).map((element) => element.name.text);
        })
        .sort();
    expect(typeOnly(files[0]!)).toEqual([
      'AskRequest',
      'AwaitResultInput',
      'ChildOptions',
      'ChildResult',
      'ClaimRequest',
      'ConcurrencyOptions',
      'CreateInput',
      'CreateOutcome',
      'ErrorCode',
      'Guard',
      'GuardOptions',
      'JsonRpcCode',
      'Logger',
      'Principal',
      'PrincipalProblem',
      'RecordStepRequest',
      'RuntimeOptions',
      'SendEventRefusal',
      'SendEventRequest',
      'SendEventResult',
      'Step',
      'StepConfig',
      'StepContext',
      'StepFunction',
      'TaskLimits',
      'TaskRuntime',
      'TaskStore',
      'TaskSupport',
      'TaskTool',
      'ToolContext',
      'ToolResult',
      'WaitForEventOptions',
      'WorkerOptions',
      'WorkerPort',
    ]);
    expect(typeOnly(files[1]!)).toEqual([
      'AnswerDecision',
      'AskDecision',
      'AskedRecord',
      'CallMode',
      'CallModeInput',
      'Claimer',
      'CreateDecision',
      'CreateEntry',
      'Decision',
      'DispatchKind',
      'DispatchStep',
      'DispatchedRecord',
      'ErrorCode',
      'Fence',
      'FencedRecord',
      'FreshEntry',
      'GuardedRecord',
      'InputDecision',
      'InputRequest',
      'JournalEntry',
      'JournalMismatchAction',
      'JournalSize',
      'LimitDecision',
      'ListDecision',
      'ListedTask',
      'Millis',
      'MissDecision',
      'ParkDecision',
      'ParkMark',
      'PatchDecision',
      'Principal',
      'PrincipalProblem',
      'PriorRecord',
      'ReadDecision',
      'ReadMethod',
      'ReleaseDecision',
      'StatusWrite',
      'StepDecision',
      'StepError',
      'StepKind',
      'StepRecord',
      'StepReplay',
      'StepStatus',
      'StepWrite',
      'SteppedRecord',
      'StoredInput',
      'Surface',
      'TaskAsk',
      'TaskCapabilities',
      'TaskRecord',
      'TaskStatus',
      'TaskSupport',
      'TerminalStatus',
      'ToolDefinition',
      'ToolDescriptor',
      'ToolVersionGrant',
      'TransitionDecision',
      'VersionAnnouncement',
      'VersionGrants',
      'VisibleRecord',
      'WireRequest',
    ]);
    expect(typeOnly(files[2]!)).toEqual(['CaseOutcome', 'ReplayCase', 'ReplayFixture', 'ReplayReport']);
  });
});
