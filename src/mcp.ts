/**
 * `tasklatch/mcp`: tasklatch on the MCP 2025-11-25 wire (the official SDK's low-level Server)
 * and its Streamable HTTP transport, plus the demo tools.
 */
export { createTaskServer, TaskServer, ANONYMOUS, type TaskServerOptions, type WireOptions, type Authenticate } from './mcp/task-server.js';
export { startHttpServer, type HttpOptions, type RunningHttp } from './http/http-server.js';
export { tokensAuthenticate, type HttpAuthenticate, type AuthRequest } from './http/auth-front.js';
export { loadTokenFile, watchTokenFile, type WatchedTokenFile } from './http/token-file.js';
export { createOAuthResource, type OAuthResource, type OAuthResourceOptions, type ProtectedResourceMetadata } from './http/oauth/oauth-resource.js';
export type { IntrospectionOptions } from './http/oauth/introspection.js';
export { CLOCK_SKEW_SECONDS, type RefusalReason } from './http/oauth/access-token.js';
export { DEFAULT_SESSION_LIMITS, type SessionLimits } from './mcp/session-limits.js';
export { wireTask, wireResult, TASK_NOT_FOUND_MESSAGE, TOO_MANY_TASKS, WireError } from './mcp/wire.js';
export { demoTools, type DemoToolOptions } from './demo/demo-tools.js';
