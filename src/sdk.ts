/**
 * `tasklatch/sdk`: tasklatch under a server built with the official SDK's `McpServer`
 * (`@modelcontextprotocol/sdk` 1.x). `attachTasklatch` makes the tools you mark durable tasks
 * run by tasklatch's workers; `SdkTaskStore` is a drop-in for the SDK's experimental
 * `TaskStore` on tasklatch's stores. A subpath of its own: it loads the MCP SDK.
 */
export { SdkTaskStore, type SdkTaskStoreOptions } from './wire-2025/sdk/sdk-task-store.js';
export { RequestAuth, principalFromAuthInfo, type ResolvePrincipal } from './wire-2025/sdk/request-auth.js';
export { attachTasklatch, tasklatchWorker, SdkTasklatch, type AttachOptions } from './wire-2025/sdk/attach-tasklatch.js';
export { SUPPORTED_SDK_RANGE } from './wire-2025/sdk/sdk-internals.js';
