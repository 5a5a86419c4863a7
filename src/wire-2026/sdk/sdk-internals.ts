import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/server';
import { TasklatchError } from '../../core/errors.js';

/**
 * Everything tasklatch reads or writes of `@modelcontextprotocol/server` 2.x that is not its
 * public API, in one place:
 * - `McpServer._registeredTools` (title, description, `inputSchema`, `executor`, `enabled`);
 * - `Server._requestHandlers`, the map of installed handlers: the SDK's `tools/call` is taken
 *   from it, and tasklatch's `tools/call` put into it as is. Through `setRequestHandler` the
 *   server would wrap it: the wrap adds `content: []` to a `CreateTaskResult` and runs the
 *   server's own `requestState` hook on the state tasklatch signs for its rounds;
 * - `Server._servedModernEra()`: whether the instance serves 2026-07-28 (tasks are served there only);
 * - the handler context's `mcpReq.envelope`, `mcpReq.inputResponses` and `mcpReq.requestState()`,
 *   which the SDK lifts out of `params` before a handler sees them.
 * Checked at attach time against the range below.
 */
export const SUPPORTED_SDK_V2_RANGE = '>=2.3.0 <3' as const;

/** A tool as `McpServer.registerTool` (2.x) keeps it. */
export interface RegisteredV2Tool {
  title?: string;
  description?: string;
  /** A Standard Schema (zod 4, valibot, …), or undefined for a tool without arguments. */
  inputSchema?: unknown;
  /** Calls the registered callback: `(args, ctx)`, or `(ctx)` for a tool without arguments. */
  executor: (args: unknown, ctx: unknown) => Promise<unknown>;
  enabled: boolean;
}

/** An installed request handler: the message (its params without the lifted members) and the context. */
export type V2Handler = (request: { method: string; params?: Record<string, unknown> }, ctx: V2Context) => Promise<unknown>;

/** The parts of a 2.x handler context tasklatch reads. */
export interface V2Context {
  mcpReq: {
    id: string | number;
    signal: AbortSignal;
    envelope?: Record<string, unknown>;
    inputResponses?: Record<string, unknown>;
    requestState: () => unknown;
  };
  http?: { authInfo?: unknown; req?: { headers: Headers } };
}

interface ServerInternals {
  _requestHandlers?: Map<string, V2Handler>;
  _servedModernEra?: () => boolean;
  setRequestHandler?: unknown;
  registerCapabilities?: unknown;
}

function internalsOf(mcpServer: McpServer): ServerInternals {
  return mcpServer.server as unknown as ServerInternals;
}

const NOT_INSTALLED = 'not installed';

/** The version of `@modelcontextprotocol/server` this process loads, from its package.json. */
export function sdkV2Version(): string {
  // The package exports no `./package.json`: it is found by walking up from the entry point.
  const require = createRequire(import.meta.url);
  let entry: string;
  try {
    entry = require.resolve('@modelcontextprotocol/server');
  } catch {
    return NOT_INSTALLED;
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (manifest.name === '@modelcontextprotocol/server') return manifest.version ?? 'unknown';
  }
  return 'unknown';
}

/** Whether `version` is in `SUPPORTED_SDK_V2_RANGE` (2.x from 2.3.0; pre-releases excluded). */
export function isSupportedSdkV2Version(version: string): boolean {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (match === null) return false;
  const [major, minor] = match.slice(1).map(Number) as [number, number, number];
  return major === 2 && minor >= 3;
}

/** Refuses an SDK outside the supported range, or a server of another shape than that range's. */
export function checkSdkV2(mcpServer: McpServer, version = sdkV2Version()): void {
  if (version === NOT_INSTALLED) throw refuse(`@modelcontextprotocol/server is not installed (supported: ${SUPPORTED_SDK_V2_RANGE})`);
  if (!isSupportedSdkV2Version(version)) throw refuse(`@modelcontextprotocol/server ${version} is not supported (supported: ${SUPPORTED_SDK_V2_RANGE})`);
  const server = internalsOf(mcpServer);
  const tools = (mcpServer as unknown as { _registeredTools?: unknown })._registeredTools;
  if (
    typeof tools !== 'object' ||
    tools === null ||
    !(server._requestHandlers instanceof Map) ||
    typeof server._servedModernEra !== 'function' ||
    typeof server.setRequestHandler !== 'function' ||
    typeof server.registerCapabilities !== 'function'
  )
    throw refuse(`this McpServer does not have the shape of @modelcontextprotocol/server ${SUPPORTED_SDK_V2_RANGE}`);
}

/** Refuses a server tasklatch cannot attach to: see `checkSdkV2`, a connected one, one that serves tasks already. */
export function checkAttachableV2(mcpServer: McpServer, version = sdkV2Version()): void {
  checkSdkV2(mcpServer, version);
  if (mcpServer.isConnected()) throw refuse('the server is already connected; attach in the factory, before the server is returned');
  if (internalsOf(mcpServer)._requestHandlers?.has('tasks/get') === true) throw refuse('the server already serves tasks/get; tasklatch serves tasks/* itself');
}

export function refuse(why: string): TasklatchError {
  return new TasklatchError('INVALID_INPUT', `cannot attach tasklatch: ${why}`);
}

/** The tools registered on the server, by name. */
export function registeredV2Tools(mcpServer: McpServer): Map<string, RegisteredV2Tool> {
  return new Map(Object.entries((mcpServer as unknown as { _registeredTools: Record<string, RegisteredV2Tool> })._registeredTools));
}

/** Removes the handler installed for `method` and returns it (undefined if none). */
export function takeRequestHandler(mcpServer: McpServer, method: string): V2Handler | undefined {
  const handlers = internalsOf(mcpServer)._requestHandlers!;
  const handler = handlers.get(method);
  handlers.delete(method);
  return handler;
}

/** Installs `handler` for `method` as it is, without the server's wrap (see above). */
export function putRequestHandler(mcpServer: McpServer, method: string, handler: V2Handler): void {
  internalsOf(mcpServer)._requestHandlers!.set(method, handler);
}

/** Whether the instance serves 2026-07-28 (createMcpHandler marks it before the request is handled). */
export function servesModernEra(mcpServer: McpServer): boolean {
  return internalsOf(mcpServer)._servedModernEra!();
}

/** One request as the SDK delivered it, put back together: the params as sent, the headers, the auth context. */
export function requestOf(
  request: { params?: Record<string, unknown> },
  ctx: V2Context,
): { id: string | number; params: Record<string, unknown>; headers: IncomingHttpHeaders; authInfo: unknown; signal: AbortSignal } {
  const { id, envelope, inputResponses, signal } = ctx.mcpReq;
  const given = request.params ?? {};
  const meta = { ...(given._meta as Record<string, unknown> | undefined), ...envelope };
  const requestState = ctx.mcpReq.requestState();
  const params: Record<string, unknown> = Object.assign({}, given, {
    _meta: meta,
    ...(inputResponses === undefined ? {} : { inputResponses }),
    ...(requestState === undefined ? {} : { requestState }),
  });
  const headers: IncomingHttpHeaders = {};
  ctx.http?.req?.headers.forEach((value, key) => (headers[key] = value));
  return { id, params, headers, authInfo: ctx.http?.authInfo, signal };
}
