"""Servers hookgate runs (``command``): the client's messages exchanged with the process
of its session (:mod:`.stdio`).

``initialize`` starts a session's process (stopped again unless it initializes);
requests are answered with JSON as the process answers them; notifications and the
client's answers to the server are passed on (202); ``GET`` streams what the process
sent unasked (resumed after ``Last-Event-ID``); ``DELETE`` ends the session. A process
that exits, times out or drops a request is an :class:`~.errors.McpError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from hookgate.errors import InvalidRequest
from hookgate.server.appkeys import MCP_SESSIONS
from hookgate.server.mcp.errors import McpError, McpUnreachable, session_gone
from hookgate.server.mcp.gateway import Gateway, json_response
from hookgate.server.mcp.stdio import RequestCancelled, SessionGone, StdioSession
from hookgate.wire import jsonrpc, sse

T = TypeVar("T")


@dataclass
class StdioGateway(Gateway):
    """One request to a server hookgate runs (:mod:`.stdio`): the session's process
    answers instead of a URL, and the client's answers are JSON (the server's own
    messages wait on the session's ``GET`` stream)."""

    session: StdioSession | None = None

    async def forward(self, message: dict[str, Any], raw: bytes) -> web.StreamResponse:
        if message.get("method") == "initialize":
            return await self._initialize(message)
        self.session = self._session()
        if message.get("method") == "tools/call":  # (one without an id is refused there)
            return await self.tool_call(message)
        if not jsonrpc.is_request(message):  # a notification, or an answer to the server
            await self._guarded(self.session.send(message))
            return web.Response(status=202, headers=self._headers())
        answer = await self.exchange(message)
        if message.get("method") == "tools/list":
            answer = self.offered(answer)
        return await self.respond(answer)

    async def _initialize(self, message: dict[str, Any]) -> web.StreamResponse:
        """A new session: its process started, and stopped again unless it initializes
        (the client, never told its id, could not end it)."""
        sessions = self.request.app[MCP_SESSIONS]
        async with sessions.starting(self.name):
            try:
                self.session = await sessions.start(self.name, self.server)
            except SessionGone as exc:
                raise McpUnreachable(str(exc)) from None
            try:
                answer = await self.exchange(message)
            except BaseException:
                await sessions.end(self.session)
                raise
        if "result" not in answer:
            await sessions.end(self.session)
            return json_response(answer)
        return await self.respond(answer)

    def _session(self) -> StdioSession:
        session_id = self.request.headers.get("mcp-session-id")
        if not session_id:
            raise InvalidRequest(
                f"MCP server {self.name!r}: send the Mcp-Session-Id header, or initialize",
                code="mcp_session_required",
            )
        session = self.request.app[MCP_SESSIONS].get(self.name, session_id)
        if session is None:
            raise session_gone(self.name, session_id)
        return session

    def _headers(self) -> dict[str, str]:
        return {"mcp-session-id": self.session.id} if self.session is not None else {}

    async def _guarded(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except SessionGone as exc:
            raise McpUnreachable(str(exc)) from None
        except RequestCancelled as exc:
            raise McpError(str(exc), code="mcp_cancelled") from None
        except TimeoutError:
            raise McpUnreachable(
                f"{self.label} did not answer within {self.server.timeout.read_s:g}s"
            ) from None

    async def exchange(self, sent: Mapping[str, Any]) -> dict[str, Any]:
        assert self.session is not None
        return await self._guarded(self.session.request(sent, self.server.timeout.read_s))

    async def respond(self, message: Mapping[str, Any]) -> web.StreamResponse:
        return json_response(message, headers=self._headers())

    async def relay(self, body: bytes | None, listing: Any = None) -> web.StreamResponse:
        """``DELETE`` ends the session; ``GET`` streams what its server sent unasked."""
        session = self._session()
        if self.request.method == "DELETE":
            await self.request.app[MCP_SESSIONS].end(session)
            return web.Response(status=200)
        after = sse.event_number(self.request.headers.get("last-event-id", ""))
        out = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await out.prepare(self.request)
        async for number, message in session.outbox.stream(after):
            await out.write(sse.encode(message, event="message", id=str(number)))
        await out.write_eof()
        return out
