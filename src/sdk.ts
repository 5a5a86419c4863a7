/**
 * `tasklatch/sdk`: tasklatch under a server built with the official SDK's `McpServer`
 * (`@modelcontextprotocol/sdk` 1.x). `attachTasklatch` makes the tools you mark durable tasks
 * run by tasklatch's workers; `SdkTaskStore` is a drop-in for the SDK's experimental
 * `TaskStore` on tasklatch's stores. A subpath of its own: it loads the MCP SDK.
 */
export { SdkTaskStore, type SdkTaskStoreOptions } from './sdk/sdk-task-store.js';
export { RequestAuth, principalFromAuthInfo, type ResolvePrincipal } from './sdk/request-auth.js';
export { attachTasklatch, tasklatchWorker, SdkTasklatch, type AttachOptions } from './sdk/attach-tasklatch.js';
export { SUPPORTED_SDK_RANGE } from './sdk/sdk-internals.js';
