"""What a client without task support sees of `tasklatch serve`, through the MCP Python SDKs.

    python plain_client.py URL_WITH_TASK_TOOLS URL_WITHOUT

Prints one JSON object of what each call answered, per client: test/clients/python-sdk.test.ts
reads it. The clients are used as a Python user would use them: `mcp.Client` (2026-07-28 after
its server/discover probe, the default, or 2025-11-25 with mode="legacy") and `fastmcp.Client`.
One process for all of it: importing the SDKs is most of its time.

- taskTools (a server with --task-tools): call the task-required export_ledger plainly, follow
  the task it names with task_status until it ends (waiting the pollInterval the server gives,
  a bounded number of times), read task_result; cancel another one with task_cancel; call the
  task-optional summarize, which answers inline.
- plain (a server without --task-tools): the same calls, and what each client gets instead.
- advertised: an mcp.Client that advertises the tasks extension without handling it.
"""

import asyncio
import json
import sys
from typing import Any

import fastmcp
from mcp import Client, MCPError
from mcp.client.extension import advertise

TERMINAL = ("completed", "failed", "cancelled")
MAX_POLLS = 300  # at the 200 ms pollInterval the test gives: a minute


def answer(result: Any) -> dict[str, Any]:
    """A tool result as JSON: its error flag, its first text, its structured content."""
    text = result.content[0].text if result.content else None
    return {"isError": bool(result.is_error), "text": text, "structured": result.structured_content}


async def attempt(call: Any) -> dict[str, Any]:
    """A call's result, or the error the client raised instead (protocol errors with their code)."""
    try:
        return answer(await call)
    except MCPError as error:
        return {"error": {"type": "MCPError", "code": error.code, "message": error.message, "data": error.data}}
    except Exception as error:  # what a client that cannot read the answer raises
        return {"error": {"type": type(error).__name__, "message": str(error)}}


def sdk_call(client: Client):
    return lambda name, args: client.call_tool(name, args)


def fastmcp_call(client: fastmcp.Client):
    return lambda name, args: client.call_tool(name, args, raise_on_error=False)


async def follow(call: Any) -> dict[str, Any]:
    started = await attempt(call("export_ledger", {"month": "2026-06", "rows": 40}))
    out: dict[str, Any] = {"started": started}
    if "error" in started:
        return out
    task = started["structured"]
    statuses = []
    status = task["status"]
    for _ in range(MAX_POLLS):
        if status in TERMINAL:
            break
        await asyncio.sleep(task["pollInterval"] / 1000)
        got = await attempt(call("task_status", {"taskId": task["taskId"]}))
        status = got["structured"]["status"]
        statuses.append(status)
    out["statuses"] = statuses
    out["result"] = await attempt(call("task_result", {"taskId": task["taskId"]}))

    # A long one, cancelled: task_cancel, then task_result says it was cancelled.
    long = await attempt(call("export_ledger", {"month": "2026-07", "rows": 40, "delayMs": 600000}))
    long_id = long["structured"]["taskId"]
    out["cancel"] = await attempt(call("task_cancel", {"taskId": long_id}))
    out["cancelledResult"] = await attempt(call("task_result", {"taskId": long_id}))
    out["optional"] = await attempt(call("summarize", {"month": "2026-06"}))
    return out


async def refused(call: Any) -> dict[str, Any]:
    return {
        "required": await attempt(call("export_ledger", {"month": "2026-06", "rows": 40})),
        "optional": await attempt(call("summarize", {"month": "2026-06"})),
        "taskStatus": await attempt(call("task_status", {"taskId": "any"})),
    }


async def tools_of(client: Any) -> dict[str, Any]:
    listed = await client.list_tools()
    tools = listed if isinstance(listed, list) else listed.tools
    return {t.name: (t.execution.task_support if t.execution is not None else None) for t in tools}


async def with_sdk(url: str, run: Any, **options: Any) -> dict[str, Any]:
    async with Client(url, **options) as client:
        version = client.session.protocol_version
        return {"protocolVersion": version, "tools": await tools_of(client), **(await run(sdk_call(client)))}


async def with_fastmcp(url: str, run: Any) -> dict[str, Any]:
    async with fastmcp.Client(url) as client:
        version = client.session.protocol_version
        return {"protocolVersion": version, "tools": await tools_of(client), **(await run(fastmcp_call(client)))}


async def each_client(url: str, run: Any) -> dict[str, Any]:
    return {
        "mcp": await with_sdk(url, run),
        "mcpLegacy": await with_sdk(url, run, mode="legacy"),
        "fastmcp": await with_fastmcp(url, run),
    }


async def main(with_task_tools: str, without: str) -> dict[str, Any]:
    tasks = advertise("io.modelcontextprotocol/tasks")
    return {
        "taskTools": await each_client(with_task_tools, follow),
        "plain": await each_client(without, refused),
        "advertised": await with_sdk(without, refused, extensions=[tasks]),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
