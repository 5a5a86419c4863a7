/**
 * `tasklatch/mcp`: tasklatch on the MCP 2025-11-25 wire (the official SDK's low-level Server),
 * for any transport (`createSession`), plus the demo tools. Its HTTP endpoint, with the
 * 2026-07-28 wire beside it, is `tasklatch/http`.
 */
export { createTaskServer, TaskServer, ANONYMOUS, type TaskServerOptions, type WireOptions, type Authenticate } from './wire-2025/server.js';
export { wireTask, wireResult, TASK_NOT_FOUND_MESSAGE, TOO_MANY_TASKS, WireError } from './wire-2025/encode.js';
export { demoTools, type DemoToolOptions } from './demo/demo-tools.js';
