"""An upstream MCP server over Streamable HTTP, for the MCP gateway's tests (run as a script).

    python tests/mcp_upstream_server.py --port N --log FILE [--token T] [--resumable]

serves ``http://127.0.0.1:N/mcp`` (stateful sessions) with the tools below: only
``structured_contact`` has an ``outputSchema`` and answers ``structuredContent`` (FastMCP would
give the ``str`` tools ``{"result": ...}`` ones by default). Every tool call
appends one JSON line ``{"tool", "arguments", "headers"}`` to FILE, where ``headers`` are the
HTTP request headers of the call (lowercased names). With ``--token T`` every HTTP request
without ``Authorization: Bearer T`` gets 401. ``tests/mcp_servers.py`` starts it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.session import ServerSession
from mcp.server.streamable_http import (
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp.types import JSONRPCMessage
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

# The context FastMCP injects into a tool with a parameter of this type (over HTTP its
# request_context.request is the Starlette request of the POST that carried the call).
Ctx = Context[ServerSession, Any, Request]


class MemoryEvents(EventStore):
    """Every event of every stream, kept in memory, so a client can resume a stream."""

    def __init__(self) -> None:
        self.events: list[tuple[StreamId, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        self.events.append((stream_id, message))
        return str(len(self.events))

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        after = int(last_event_id)
        stream_id = self.events[after - 1][0]
        for number, (stream, message) in enumerate(self.events[after:], start=after + 1):
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, str(number)))
        return stream_id


# --resumable: events are stored (and numbered), so a tool may close its call's stream
# and the client resumes it with Last-Event-ID (the protocol's polling style).
RESUMABLE = "--resumable" in sys.argv
server = FastMCP(
    "upstream", host="127.0.0.1", log_level="WARNING",
    event_store=MemoryEvents() if RESUMABLE else None, retry_interval=50 if RESUMABLE else None,
)  # fmt: skip
log_path = ""


def record(tool: str, arguments: dict[str, Any], ctx: Ctx) -> None:
    """Append the call and its HTTP request headers to the log file, flushed."""
    request = ctx.request_context.request
    headers = dict(request.headers) if request is not None else {}
    line = json.dumps({"tool": tool, "arguments": arguments, "headers": headers})
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(line + "\n")
        log.flush()


@server.tool()  # FastMCP's default: the text, and {"result": text} as structuredContent
def lookup_contact(name: str, ctx: Ctx) -> str:
    """A contact's email address and phone number."""
    record("lookup_contact", {"name": name}, ctx)
    return f"{name}: ann.lee@example.com, +1 415 555 0100"


@server.tool(structured_output=False)
def send_email(to: str, body: str, ctx: Ctx) -> str:
    """Send an email."""
    record("send_email", {"to": to, "body": body}, ctx)
    return f"sent to {to}"


@server.tool(structured_output=False)
def delete_files(path: str, ctx: Ctx) -> str:
    """Delete the files under a path."""
    record("delete_files", {"path": path}, ctx)
    return f"deleted {path}"


@server.tool(structured_output=False)
def get_weather(city: str, ctx: Ctx) -> str:
    """The weather in a city."""
    record("get_weather", {"city": city}, ctx)
    return f"sunny in {city}"


@server.tool(structured_output=True)
def structured_contact(name: str, ctx: Ctx) -> dict[str, str]:
    """A contact as structured content."""
    record("structured_contact", {"name": name}, ctx)
    return {"name": name, "email": "ann.lee@example.com"}


@server.tool(structured_output=False)
def crash(ctx: Ctx) -> str:
    """Kill the server mid-call (an upstream that dies)."""
    record("crash", {}, ctx)
    os._exit(1)


@server.tool(structured_output=False)
async def slow(seconds: float, ctx: Ctx) -> str:
    """Answer after ``seconds``."""
    record("slow", {"seconds": seconds}, ctx)
    await asyncio.sleep(seconds)
    return "done"


@server.tool(structured_output=False)
async def slow_contact(name: str, seconds: float, ctx: Ctx) -> str:
    """``name``'s email address (``name@example.com``), after ``seconds``."""
    record("slow_contact", {"name": name, "seconds": seconds}, ctx)
    await asyncio.sleep(seconds)
    return f"{name}: {name}@example.com"


@server.tool(structured_output=False)
async def paused_answer(ctx: Ctx) -> str:
    """Close this call's stream (with --resumable), then answer: the client must resume."""
    record("paused_answer", {}, ctx)
    await ctx.report_progress(1, 2)
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    return "answered after a pause"


class RequireToken:
    """ASGI middleware: 401 for any HTTP request without ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            dict(scope["headers"]).get(b"authorization") != self.expected
        ):
            body = b'{"error": "unauthorized"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def main() -> None:
    global log_path
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--token")
    parser.add_argument("--resumable", action="store_true")
    args = parser.parse_args()
    log_path = args.log
    server.settings.port = args.port
    app: ASGIApp = server.streamable_http_app()
    if args.token:
        app = RequireToken(app, args.token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
