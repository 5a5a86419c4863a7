import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { TasklatchError } from '../../core/errors.js';

/**
 * Everything tasklatch reads of the SDK's `McpServer` that is not its public API, in one place:
 * the registered tools (`_registeredTools`) and the installed request handlers of its low-level
 * `Server` (`_requestHandlers`, `_taskStore`). Checked at attach time against the range below;
 * a test runs the attach against the SDK versions of that range this repository can install.
 */
export const SUPPORTED_SDK_RANGE = '>=1.32.2 <2' as const;

/** A tool as `McpServer.registerTool` keeps it. */
export interface RegisteredSdkTool {
  title?: string;
  description?: string;
  /** A zod object schema (v3, v4 or v4-mini), or undefined for a tool without arguments. */
  inputSchema?: unknown;
  /** A zod object schema of the structured result, when the tool declares one. */
  outputSchema?: unknown;
  execution?: { taskSupport?: string };
  enabled: boolean;
  handler: (...args: never[]) => unknown;
}

type Handler = (request: never, extra: never) => unknown;

interface ServerInternals {
  _requestHandlers?: Map<string, Handler>;
  _taskStore?: unknown;
  removeRequestHandler?: (method: string) => void;
}

function internalsOf(server: Server): ServerInternals {
  return server as unknown as ServerInternals;
}

/** The version of the SDK this process loads, from its package.json. */
export function sdkVersion(): string {
  // The package's `./*` export maps `package.json` into dist/; the package root is found by
  // walking up from an entry point to the package.json that names the SDK.
  const require = createRequire(import.meta.url);
  for (let dir = dirname(require.resolve('@modelcontextprotocol/sdk/server/index.js')); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (manifest.name === '@modelcontextprotocol/sdk') return manifest.version ?? 'unknown';
  }
  return 'unknown';
}

/** Whether `version` is in `SUPPORTED_SDK_RANGE` (1.x from 1.32.2; pre-releases excluded). */
export function isSupportedSdkVersion(version: string): boolean {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (match === null) return false;
  const [major, minor, patch] = match.slice(1).map(Number) as [number, number, number];
  return major === 1 && (minor > 32 || (minor === 32 && patch >= 2));
}

/**
 * Refuses, with a message that says what to do, a server tasklatch cannot attach to: an SDK
 * outside the supported range or of another shape, a server already connected, or one that
 * already serves tasks (a `taskStore` given to it).
 */
export function checkAttachable(mcpServer: McpServer, version = sdkVersion()): void {
  checkSdk(mcpServer, version);
  const server = internalsOf(mcpServer.server);
  if (mcpServer.isConnected()) throw refuse('the server is already connected; attach before server.connect(transport)');
  if (server._taskStore !== undefined || server._requestHandlers?.has('tasks/get') === true)
    throw refuse('the server already serves tasks with another store (a taskStore given to McpServer); tasklatch serves tasks/* itself: drop that taskStore');
}

/** Refuses an SDK outside the supported range, or a server of another shape than that range's. */
export function checkSdk(mcpServer: McpServer, version = sdkVersion()): void {
  if (!isSupportedSdkVersion(version)) throw refuse(`@modelcontextprotocol/sdk ${version} is not supported (supported: ${SUPPORTED_SDK_RANGE})`);
  const server = internalsOf(mcpServer.server);
  const tools = (mcpServer as unknown as { _registeredTools?: unknown })._registeredTools;
  if (typeof tools !== 'object' || tools === null || !(server._requestHandlers instanceof Map) || typeof server.removeRequestHandler !== 'function')
    throw refuse(`this McpServer does not have the shape of @modelcontextprotocol/sdk ${SUPPORTED_SDK_RANGE}`);
}

function refuse(why: string): TasklatchError {
  return new TasklatchError('INVALID_INPUT', `cannot attach tasklatch: ${why}`);
}

/** The tools registered on the server, by name. */
export function registeredTools(mcpServer: McpServer): Map<string, RegisteredSdkTool> {
  const tools = (mcpServer as unknown as { _registeredTools: Record<string, RegisteredSdkTool> })._registeredTools;
  return new Map(Object.entries(tools));
}

/** Removes the handler the SDK installed for `method` and returns it (undefined if none). */
export function takeRequestHandler(server: Server, method: string): Handler | undefined {
  const handler = internalsOf(server)._requestHandlers?.get(method);
  server.removeRequestHandler(method);
  return handler;
}
