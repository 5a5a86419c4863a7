/**
 * `tasklatch/mcp`: tasklatch on the MCP wire (the official SDK's low-level Server), its HTTP
 * transport and the demo tools.
 */
export { createTaskServer, TaskServer, ANONYMOUS, type TaskServerOptions, type Authenticate } from './mcp/task-server.js';
export { startHttpServer, type HttpOptions, type RunningHttp } from './mcp/http-server.js';
export { defineTool, authKeyOf, type TaskTool, type ToolContext, type ToolResult, type Principal } from './mcp/tool.js';
export { ToolRegistry } from './mcp/tool-registry.js';
export { wireTask, wireResult, TASK_NOT_FOUND_MESSAGE, TOO_MANY_TASKS, WireError } from './mcp/wire.js';
export { createLogger, type Logger } from './mcp/log.js';
export { demoTools, type DemoToolOptions } from './demo/demo-tools.js';
export { TaskExecutor, type ExecutionHooks } from './worker/task-executor.js';
