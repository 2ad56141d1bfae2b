"""Servers reached by ``url``: the client's messages relayed over Streamable HTTP.

Each message is relayed to the server's ``url`` with the server's own ``headers`` (its
credentials; the client's ``Authorization`` is its hookgate key and never goes on), so
sessions (``Mcp-Session-Id``), server streams (``GET``) and their resumption
(``Last-Event-ID``) work as the server implements them, and the answer is streamed back
as it arrives. Only the response to a ``tools/call`` or a ``tools/list`` waits for the
policies; the events a server sends before it (progress, logging, its own requests such
as elicitation) are relayed as they arrive. A ``tools/call`` whose stream the server
closes after numbered events (the protocol's polling style) is resumed by the gateway
itself: a ``GET`` with ``Last-Event-ID`` after the server's ``retry:`` delay, its events
relayed on. A server that cannot be reached, times out or breaks its stream is an
:class:`~.errors.McpError`, never a hang; its headers other than :data:`RETURNED` never
reach the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from hookgate.server.appkeys import SESSION, STORE
from hookgate.server.mcp.approval import ELICITS_KEY, ELICITS_TTL_S
from hookgate.server.mcp.errors import McpBadAnswer, McpError, McpUnreachable, session_gone
from hookgate.server.mcp.gateway import Gateway, json_response
from hookgate.wire import jsonrpc, sse

log = logging.getLogger("hookgate")

FORWARDED = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version",
             "last-event-id", "traceparent", "tracestate")  # fmt: skip
"""Client headers an MCP server sees (never the client's ``Authorization``: that is its
hookgate key)."""
RETURNED = ("content-type", "mcp-session-id", "cache-control")
"""Server headers a client sees."""
RESUME_DELAY_S = 1.0
"""How long to wait before resuming a call's stream the server closed, unless its
events said (``retry:``, at most ten times this)."""
RESUMES_WITHOUT_EVENTS = 2
"""Resumptions in a row that bring no event before the call is given up."""
MAX_RESUMES = 1000
"""Resumptions of one call in all (a server polled that long is not answering)."""


@dataclass
class HttpGateway(Gateway):
    """One request to a server reached by ``url``."""

    response: web.StreamResponse | None = None
    """The answer, once started (a stream the server's events are relayed on)."""
    answer: aiohttp.ClientResponse | None = None
    """The server's answer to a ``tools/call``, whose headers the reply takes."""
    elicits: bool = False
    """An ``initialize`` whose client declares ``elicitation`` (kept with its session)."""

    async def forward(self, message: dict[str, Any], raw: bytes) -> web.StreamResponse:
        method = message.get("method")
        if method == "tools/call":
            return await self.tool_call(message)
        if method == "tools/list" and jsonrpc.is_request(message):
            return await self.relay(raw, message.get("id"))
        self.elicits = method == "initialize" and _elicits(message)
        return await self.relay(raw)

    async def _remember_elicitation(self, session: str | None) -> None:
        """Keep, for the session's later calls (on any replica), that its client
        declared ``elicitation`` (:mod:`.approval` tells it what waits)."""
        if session:
            key = ELICITS_KEY.format(server=self.name, session=session)
            await self.request.app[STORE].save_state(key, b"1", ELICITS_TTL_S)

    @property
    def streaming(self) -> bool:
        return self.response is not None

    async def notify(self, message: Mapping[str, Any]) -> bool:
        """Send ``message`` on the call's event stream, started here when the server has
        not started it (a client that accepts only JSON is sent nothing)."""
        if self.response is None:
            if "text/event-stream" not in self.request.headers.get("accept", ""):
                return True
            headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
            if session := self.request.headers.get("mcp-session-id"):
                headers["mcp-session-id"] = session
            self.response = web.StreamResponse(headers=headers)
            try:
                await self.response.prepare(self.request)
            except (ConnectionError, RuntimeError):
                return False
        try:
            await self.response.write(sse.encode(message, event="message"))
        except (ConnectionError, RuntimeError):
            return False
        return True

    @contextlib.asynccontextmanager
    async def upstream(
        self, body: bytes | None, *, resume_after: str | None = None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The server's answer to the client's request (``body`` for a POST); with
        ``resume_after``, to a ``GET`` resuming the stream after that event id instead."""
        headers = {k: v for k in FORWARDED if (v := self.request.headers.get(k)) is not None}
        method = self.request.method
        if resume_after is not None:
            method = "GET"
            headers.update({"last-event-id": resume_after, "accept": "text/event-stream"})
        headers.update(self.server.headers)
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.server.timeout.connect_s,
            sock_read=self.server.timeout.read_s,
        )
        session = self.request.app[SESSION]
        try:
            async with session.request(
                method, str(self.server.url), data=body, headers=headers,
                timeout=timeout, allow_redirects=False,
            ) as answer:  # fmt: skip
                yield answer
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise McpUnreachable(f"{self.label} could not be reached: {_why(exc)}") from None

    async def relay(self, body: bytes | None, listing: Any = None) -> web.StreamResponse:
        """Relay the request and its answer; with ``listing`` (a ``tools/list`` id), the
        answer to it has the tools the policies hide left out."""
        async with self.upstream(body) as answer:
            if listing is None or answer.status >= 300:
                return await self._stream(answer)
            try:
                return await self._answer(answer, listing, self.offered)
            except McpError as exc:
                if self.response is None:  # nothing sent yet: an error response
                    raise
                return await self.respond(jsonrpc.error(listing, jsonrpc.SERVER_ERROR, exc.message))

    async def _stream(self, answer: aiohttp.ClientResponse) -> web.StreamResponse:
        out = await self._start(answer)
        try:
            async for chunk in answer.content.iter_any():
                await out.write(chunk)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("%s: stream ended: %s", self.label, _why(exc))
        await out.write_eof()
        return out

    async def _start(self, answer: aiohttp.ClientResponse) -> web.StreamResponse:
        if self.response is None:
            headers = {k: v for k in RETURNED if (v := answer.headers.get(k)) is not None}
            if self.elicits and answer.status < 300:
                await self._remember_elicitation(headers.get("mcp-session-id"))
            self.response = web.StreamResponse(status=answer.status, headers=headers)
            await self.response.prepare(self.request)
        return self.response

    async def _answer(
        self,
        answer: aiohttp.ClientResponse,
        id: Any,
        change: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> web.StreamResponse:
        """Relay ``answer`` (JSON or an event stream), with ``change`` applied to the
        response to ``id``."""
        final = await self.final(answer, id)
        return await self.finish(answer, change(final))

    async def final(self, answer: aiohttp.ClientResponse, id: Any) -> dict[str, Any]:
        """The server's response to ``id``; on a stream, the events before it are relayed
        to the client as they arrive."""
        kind = answer.headers.get("content-type", "").split(";")[0].strip()
        if kind == "application/json":
            try:
                message = orjson.loads(await answer.read())
            except (orjson.JSONDecodeError, aiohttp.ClientError, TimeoutError) as exc:
                raise McpBadAnswer(f"{self.label} sent an answer that is not JSON: {exc}") from None
            if not isinstance(message, dict):
                raise McpBadAnswer(f"{self.label} sent JSON that is not one message")
            return message
        if kind != "text/event-stream":
            raise McpBadAnswer(f"{self.label} answered with content-type {kind or 'none'!r}")
        async with contextlib.AsyncExitStack() as resumed:
            stream, last, delay_s, idle, resumes = answer, None, RESUME_DELAY_S, 0, 0
            while True:
                events = 0
                try:
                    async for block in _blocks(stream):
                        events += 1
                        event = sse.parse(block)
                        last = event.id or last
                        if event.retry is not None:
                            delay_s = min(event.retry / 1000, RESUME_DELAY_S * 10)
                        message = _message(block)
                        if (
                            message is not None
                            and message.get("id") == id
                            and "method" not in message
                        ):
                            return message
                        out = await self._start(answer)
                        await out.write(block)
                except (aiohttp.ClientError, TimeoutError) as exc:
                    if last is None:
                        raise McpUnreachable(
                            f"{self.label} broke off its answer: {_why(exc)}"
                        ) from None
                idle, resumes = (0 if events else idle + 1), resumes + 1
                if last is None or idle > RESUMES_WITHOUT_EVENTS or resumes > MAX_RESUMES:
                    raise McpUnreachable(f"{self.label} ended its stream without answering")
                await asyncio.sleep(delay_s)  # the server's retry: its answer may be pending
                stream = await resumed.enter_async_context(self.upstream(None, resume_after=last))
                if stream.status >= 300:
                    raise McpBadAnswer(
                        f"{self.label} refused to resume its stream (HTTP {stream.status})"
                    )

    async def finish(
        self, answer: aiohttp.ClientResponse, message: Mapping[str, Any]
    ) -> web.StreamResponse:
        """Send the final response: on the stream when one was started or the server
        streamed, else as JSON."""
        streamed = answer.headers.get("content-type", "").startswith("text/event-stream")
        if self.response is None and not streamed:
            return json_response(message, headers=_returned(answer))
        out = await self._start(answer)
        await out.write(sse.encode(message, event="message"))
        await out.write_eof()
        return out

    async def exchange(self, sent: Mapping[str, Any]) -> dict[str, Any]:
        """Send a request to the server; its response (events before it are relayed)."""
        async with self.upstream(orjson.dumps(sent)) as answer:
            if answer.status == 404 and "mcp-session-id" in self.request.headers:
                raise session_gone(self.name, self.request.headers["mcp-session-id"])
            if answer.status >= 300:
                text = (await answer.read()).decode("utf-8", "replace")[:500]
                raise McpBadAnswer(f"{self.label} answered HTTP {answer.status}: {text}")
            final = await self.final(answer, sent.get("id"))
            self.answer = answer
        return final

    async def respond(self, message: Mapping[str, Any]) -> web.StreamResponse:
        """The client's answer: on the stream already relaying the server's events, else
        as the server answered (an event stream or JSON)."""
        if self.answer is None and self.response is None:
            return json_response(message)
        if self.response is None:
            assert self.answer is not None
            return await self.finish(self.answer, message)
        await self.response.write(sse.encode(message, event="message"))
        await self.response.write_eof()
        return self.response


# -- helpers ---------------------------------------------------------------------------


def _returned(answer: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k in RETURNED if k != "content-type" and (v := answer.headers.get(k))}


async def _blocks(answer: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The event blocks of an event stream, as they arrive."""
    decoder = sse.SSEDecoder()
    async for chunk in answer.content.iter_any():
        for block in decoder.feed(chunk):
            yield block


def _elicits(message: Mapping[str, Any]) -> bool:
    """Whether an ``initialize`` declares the client's ``elicitation`` capability."""
    params = message.get("params")
    capabilities = params.get("capabilities") if isinstance(params, Mapping) else None
    return isinstance(capabilities, Mapping) and "elicitation" in capabilities


def _message(block: bytes) -> dict[str, Any] | None:
    try:
        return sse.object_of(block)
    except ValueError:
        return None


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
