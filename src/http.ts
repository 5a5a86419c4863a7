/**
 * `tasklatch/http`: the one MCP endpoint over a runtime (`startHttpServer`), serving the
 * 2025-11-25 sessions and the stateless 2026-07-28 wire, or either alone; its authentication
 * (a tokens map or file, your own check, an OAuth resource server) and its session limits.
 */
export { startHttpServer, PROTOCOL_GENERATIONS, type HttpOptions, type RunningHttp, type ProtocolGeneration } from './http/http-server.js';
export { tokensAuthenticate, type HttpAuthenticate, type AuthRequest } from './http/auth-front.js';
export { loadTokenFile, watchTokenFile, type WatchedTokenFile } from './http/token-file.js';
export { createOAuthResource, type OAuthResource, type OAuthResourceOptions, type ProtectedResourceMetadata } from './http/oauth/oauth-resource.js';
export type { IntrospectionOptions } from './http/oauth/introspection.js';
export { CLOCK_SKEW_SECONDS, type RefusalReason } from './http/oauth/access-token.js';
export { DEFAULT_SESSION_LIMITS, type SessionLimits } from './wire-2025/session-limits.js';
export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from './http/connection-bound.js';
