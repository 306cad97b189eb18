"""An MCP server on the Python `mcp` SDK (low-level API) for tt-adapter-tools-mcp's tests.

stdio only. Tools:
  echo {text}        -> the text back
  fail {message}     -> a result with isError and the message
  slow {seconds}     -> appends "running <seconds>" to the file named by TT_PY_CANCEL_LOG,
                        sleeps, then "done"; when cancelled (notifications/cancelled) it
                        appends "cancelled <seconds>" to that file
  big {bytes}        -> that many bytes of text
  die                -> the process exits in the middle of the call
  pid                -> this process's id
  media              -> a text, an image, an audio clip and an embedded resource
Env: TT_PY_START_LOG (a file "started <pid>" is appended to on each start),
     TT_PY_CALL_LOG (a file "<tool> <arguments as JSON>" is appended to on each call, before
     it runs),
     TT_PY_EXTRA_TOOLS (n more tools x0..x{n-1}),
     TT_PY_WIDE_TOOLS and TT_PY_WIDE_BYTES (that many tools wide0.. whose schemas hold a
     description of that many bytes), TT_PY_PAGE_SIZE (tools per tools/list page),
     TT_PY_EMPTY_LAST_CURSOR (when set, the last page names "" as its next cursor),
     TT_PY_PAGE_LOOP (when set, every page names a next cursor: the list never ends),
     TT_PY_IGNORE_TERM (when set, SIGTERM is ignored and the server stays after its
     input closes: only a kill stops it).
"""

import base64
import json
import os
import signal

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OBJECT = {"type": "object"}


def schema(**props):
    return {"type": "object", "properties": props, "required": list(props)}


TOOLS = [
    types.Tool(name="echo", description="Says the text back.", input_schema=schema(text={"type": "string"}),
               annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)),
    types.Tool(name="fail", description="Always fails.", input_schema=schema(message={"type": "string"}),
               annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True)),
    types.Tool(name="slow", description="Waits.", input_schema=schema(seconds={"type": "number"})),
    types.Tool(name="big", description="A long text.", input_schema=schema(bytes={"type": "integer"})),
    types.Tool(name="die", description="Exits mid-call.", input_schema=OBJECT),
    types.Tool(name="pid", description="The process id.", input_schema=OBJECT),
    types.Tool(name="media", description="Mixed content.", input_schema=OBJECT),
]
TOOLS += [
    types.Tool(name=f"x{i}", description="Extra.", input_schema=OBJECT)
    for i in range(int(os.environ.get("TT_PY_EXTRA_TOOLS", "0")))
]
TOOLS += [
    types.Tool(name=f"wide{i}", description="A wide schema.",
               input_schema={"type": "object", "description": "w" * int(os.environ["TT_PY_WIDE_BYTES"])})
    for i in range(int(os.environ.get("TT_PY_WIDE_TOOLS", "0")))
]


def text(value):
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx, params):
    size = int(os.environ.get("TT_PY_PAGE_SIZE", "0")) or len(TOOLS)
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + size
    page = TOOLS[start:end] if not os.environ.get("TT_PY_PAGE_LOOP") else TOOLS[:1]
    more = end < len(TOOLS) or bool(os.environ.get("TT_PY_PAGE_LOOP"))
    last = "" if os.environ.get("TT_PY_EMPTY_LAST_CURSOR") else None
    return types.ListToolsResult(tools=page, next_cursor=str(end) if more else last)


async def call_tool(ctx, params):
    args = params.arguments or {}
    name = params.name
    call_log = os.environ.get("TT_PY_CALL_LOG")
    if call_log:
        with open(call_log, "a", encoding="utf-8") as f:
            f.write(f"{name} {json.dumps(args, sort_keys=True)}\n")
    if name == "echo":
        return text(args.get("text", ""))
    if name == "fail":
        return types.CallToolResult(content=[types.TextContent(type="text", text=args.get("message", ""))],
                                    is_error=True)
    if name == "slow":
        seconds = float(args.get("seconds", 60))
        log = os.environ.get("TT_PY_CANCEL_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"running {args.get('seconds')}\n")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            if log:
                with open(log, "a", encoding="utf-8") as f:
                    f.write(f"cancelled {args.get('seconds')}\n")
            raise
        return text("done")
    if name == "big":
        return text("x" * int(args.get("bytes", 0)))
    if name == "die":
        os._exit(3)
    if name == "pid":
        return text(str(os.getpid()))
    if name == "media":
        png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
        wav = base64.b64encode(b"RIFF" + b"\0" * 46).decode()
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="first"),
            types.ImageContent(type="image", data=png, mime_type="image/png"),
            types.AudioContent(type="audio", data=wav, mime_type="audio/wav"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="hello")),
            types.TextContent(type="text", text="last"),
        ], structured_content={"count": 5})
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"no tool {name}")], is_error=True)


server = Server("tt-test-py", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    if os.environ.get("TT_PY_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log = os.environ.get("TT_PY_START_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"started {os.getpid()}\n")
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
    if os.environ.get("TT_PY_IGNORE_TERM"):
        await anyio.sleep(3600)  # a server stuck after its input closed


if __name__ == "__main__":
    anyio.run(main)
