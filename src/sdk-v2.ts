/**
 * `tasklatch/sdk-v2`: tasklatch under a server built with `@modelcontextprotocol/server` 2.x
 * (`McpServer`, served by `createMcpHandler`). `attachTasklatchV2` makes the tools you mark
 * durable tasks on protocol revision 2026-07-28 with the tasks extension, run by tasklatch's
 * workers; `tasks/get|update|cancel` are answered from tasklatch's store. 2025-11-25 tasks are
 * served on the 1.x SDK (`tasklatch/sdk`). A subpath of its own: it works on the caller's
 * `McpServer` and reads the installed `@modelcontextprotocol/server` version (an optional peer).
 */
export { attachTasklatchV2, tasklatchWorkerV2, SdkV2Tasklatch, type AttachV2Options, type ResolveV2Principal } from './wire-2026/sdk/attach-tasklatch.js';
export { SUPPORTED_SDK_V2_RANGE } from './wire-2026/sdk/sdk-internals.js';
