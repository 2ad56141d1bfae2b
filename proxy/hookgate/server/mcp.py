"""The MCP gateway: hookgate in front of MCP servers, with the tool policies in the path.

A proxy cannot see an agent's own tools, but it can stand between an agent and the MCP
servers it reaches over HTTP. Each server of ``mcp_servers`` is served at
``/mcp/{name}`` over Streamable HTTP, relayed message by message to the server's ``url``
with the server's own ``headers`` (its credentials), so sessions (``Mcp-Session-Id``),
server streams (``GET``) and their resumption (``Last-Event-ID``) work as the server
implements them. A ``tools/call``, whose answer the gateway holds for its policies, is
resumed by the gateway itself when the server closes its stream after numbered events
(the protocol's polling style): a ``GET`` with ``Last-Event-ID`` after the server's
``retry:`` delay, its events relayed on. The caller authenticates as on the model
routes (virtual keys, JWT, static keys), and its policy set is chosen as there, with
route ``mcp``.

Two methods run through the policies of that set:

* ``tools/list``: a tool any policy's :meth:`~hookgate.pipeline.hooks.Policy.tool_offered`
  refuses (``tool_guard``'s ``allow``/``deny``) is left out of the answer.
* ``tools/call``: one :meth:`~hookgate.pipeline.hooks.Policy.on_tool_call` onion, the same
  hooks the SDK runs around an agent's tools, whose innermost step is the call to the
  server. ``tool_guard`` refuses a denied tool (even called by name), bad arguments or a
  call over a reply's or session's limit; ``pii`` restores placeholders in the arguments
  and redacts the result before the agent (and its model) reads it, with the placeholders
  the model routes make; ``tracing`` makes an ``execute_tool {name}`` span, a child of the
  W3C context in the request's ``params._meta`` (``traceparent``) or headers;
  ``rate_limit``'s ``tool_limits`` refuse calls over a rate. A call that needs a human's
  approval (``tool_guard``'s ``approval: pause``) is refused: there is nobody to ask here
  (an approval function, ``approval: mypkg.hitl:ask``, is asked as in the SDK). A refused
  call is answered with a tool result whose ``isError`` is true and whose text says why,
  so the model can adapt.

State a policy keeps per session (``pii``'s placeholders, ``tool_guard``'s counts) is read
from and written to the store under the session (``x-hookgate-session-id``, else the MCP
session), the same record the SDK keeps, so an agent's SDK and the gateway share it; per
reply (``x-hookgate-reply-id`` or ``params._meta["hookgate/reply_id"]``) likewise. Two
calls of one session running at once may each miss the other's count.

Every ``tools/call`` is audited (api ``mcp.tools/call``, model = the tool, target =
``mcp/{server}``) and measured (``hookgate_mcp_tool_calls_total``,
``hookgate_mcp_tool_call_duration_seconds``). Bad input gets JSON-RPC errors (a body that
is not JSON: ``-32700``; not one message: ``-32600``; a ``tools/call`` without a tool
name: ``-32602``); a server that cannot be reached, times out or breaks its stream is a
``-32000`` error naming the server, never a hang; its headers never reach the client.

Messages other than those two (``initialize``, notifications, ``resources/*``,
``prompts/*``, answers to the server's own requests) and ``GET``/``DELETE`` are relayed
unchanged, streamed as they arrive. Events a server sends on a ``tools/call`` stream
before its result (progress, logging, its own requests such as elicitation) are relayed
as they arrive too; only the result waits for the policies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import orjson
from aiohttp import web
from opentelemetry import context as otel_context
from opentelemetry import propagate

from hookgate.config.schema import McpServerConfig
from hookgate.errors import HookgateError, InvalidRequest, NotFound
from hookgate.ids import UniqueIds
from hookgate.pipeline.agent import (
    STATE_TTL_S,
    ReplyContext,
    ToolCall,
    ToolResult,
    json_safe,
    merge_state,
)
from hookgate.pipeline.compose import compose_onion
from hookgate.pipeline.hooks import Policy, implements
from hookgate.server.appkeys import (
    GRANTS,
    HOLDER,
    JSONRPC_ID,
    MCP_SESSIONS,
    METRICS,
    REQUEST_ID,
    SESSION,
    STORE,
)
from hookgate.server.auth import Caller, authenticate
from hookgate.server.mcp_stdio import RequestCancelled, SessionGone, StdioSession
from hookgate.server.routes import label_header, read_body, select_set
from hookgate.store.base import AuditRecord, Store
from hookgate.wire import jsonrpc, sse
from hookgate.wire.jsonrpc import JsonRpcError

log = logging.getLogger("hookgate")
T = TypeVar("T")

FORWARDED = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version",
             "last-event-id", "traceparent", "tracestate")  # fmt: skip
"""Client headers an MCP server sees (never the client's ``Authorization``: that is its
hookgate key)."""
RETURNED = ("content-type", "mcp-session-id", "cache-control")
"""Server headers a client sees."""
REPLY_META = "hookgate/reply_id"
RESUME_DELAY_S = 1.0
"""How long to wait before resuming a call's stream the server closed, unless its
events said (``retry:``, at most ten times this)."""
RESUMES_WITHOUT_EVENTS = 2
"""Resumptions in a row that bring no event before the call is given up."""
MAX_RESUMES = 1000
"""Resumptions of one call in all (a server polled that long is not answering)."""

_reply_ids = UniqueIds()


def add_routes(app: web.Application) -> None:
    """Register ``/mcp/{name}``."""
    app.router.add_route("*", "/mcp/{name}", handle)


async def handle(request: web.Request) -> web.StreamResponse:
    """Serve one MCP request for the server the path names."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])  # before naming servers
    name = request.match_info["name"]
    server = runtime.config.mcp_servers.get(name)
    if server is None:
        raise NotFound(f"no MCP server named {name!r} is configured", code="mcp_server_not_found")
    kind = Gateway if server.command is None else StdioGateway
    gateway = kind(request, name, server, caller)
    if request.method == "POST":
        return await gateway.post()
    if request.method in ("GET", "DELETE"):
        return await gateway.relay(None)
    raise web.HTTPMethodNotAllowed(request.method, ["GET", "POST", "DELETE"])


@dataclass
class Gateway:
    """One request to one MCP server."""

    request: web.Request
    name: str
    server: McpServerConfig
    caller: Caller
    response: web.StreamResponse | None = None
    """The answer, once started (a stream the server's events are relayed on)."""
    policy_set: str = "default"
    answer: aiohttp.ClientResponse | None = None
    """The server's answer to a ``tools/call``, whose headers the reply takes."""

    @property
    def label(self) -> str:
        return f"MCP server {self.name!r}"

    async def post(self) -> web.StreamResponse:
        """One POSTed message: bad JSON-RPC answered here, the rest by :meth:`forward`."""
        limit = self.request.app[HOLDER].current.config.server.max_body_bytes
        raw = await read_body(self.request, limit)
        try:
            message = _parsed(self.request, raw)
        except JsonRpcError as exc:
            return _json(exc.to_message(), status=400)
        return await self.forward(message, raw)

    async def forward(self, message: dict[str, Any], raw: bytes) -> web.StreamResponse:
        """A message to the server: ``tools/call`` through the policies, the answer to
        ``tools/list`` filtered by them, anything else relayed."""
        method = message.get("method")
        if method == "tools/call":
            return await self.tool_call(message)
        if method == "tools/list" and jsonrpc.is_request(message):
            return await self.relay(raw, message.get("id"))
        return await self.relay(raw)

    def offered(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/list`` answer without the tools a policy of the caller's set hides."""
        return _listed(answer, [p for p in self.policies() if implements(p, "tool_offered")])

    def policies(self) -> tuple[Policy, ...]:
        """The policies of the caller's set on route ``mcp``."""
        runtime = self.request.app[HOLDER].current
        agent = label_header(self.request.headers, "x-hookgate-agent")
        chosen = select_set(runtime, self.caller, route="mcp", agent=agent)
        self.policy_set = chosen.name
        return runtime.pipelines[chosen.name].policies

    # -- relaying ---------------------------------------------------------------------

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
            return _json(message, headers=_returned(answer))
        out = await self._start(answer)
        await out.write(sse.encode(message, event="message"))
        await out.write_eof()
        return out

    # -- tools/call -------------------------------------------------------------------

    async def tool_call(self, message: dict[str, Any]) -> web.StreamResponse:
        id = message.get("id")
        try:
            if not jsonrpc.is_request(message):  # else it would reach the server unguarded
                raise JsonRpcError(
                    jsonrpc.INVALID_REQUEST, "Invalid Request: tools/call needs an id"
                )
            name, arguments = jsonrpc.tool_call(message)
        except JsonRpcError as exc:
            return _json(exc.to_message(), status=400)
        policies = self.policies()
        started = time.perf_counter()
        store = self.request.app[STORE]
        layers = [p.on_tool_call for p in policies if implements(p, "on_tool_call")]
        stateful = bool(layers) or any(implements(p, "needs_approval") for p in policies)
        reply, kept = await _reply_context(self.request, message, store, self.caller, stateful)
        reply.tool_calls += 1  # counted when it starts, refused or not (as the SDK counts)
        answered: dict[str, Any] = {}

        async def terminal(call: ToolCall, ctx: ReplyContext) -> ToolResult:
            final = await self.exchange(jsonrpc.with_arguments(message, call.arguments))
            answered["final"] = final
            found = _tool_result(final)
            answered["seen"] = found.content
            return found

        call = ToolCall(name, arguments, call_id=None if id is None else str(id))
        waiting = await _approval_needed(policies, call, reply)
        if waiting is not None:  # nobody to ask here: refused, never run unapproved
            await kept.save(store, reply)
            self._record(name, reply, started, 200, "needs_approval", policies)
            refusal = f"Tool call refused: {waiting}, which the MCP gateway cannot ask for"
            return await self.respond(jsonrpc.result(id, jsonrpc.refused_tool_result(refusal)))
        token = otel_context.attach(propagate.extract(_carrier(self.request, message)))
        status, error = 200, None
        try:
            result = await compose_onion(layers, terminal)(call, reply)
        except HookgateError as exc:
            status, error = exc.status, exc.code or type(exc).__name__
            result = ToolResult(exc.message, error=True)
            answered.pop("final", None)
            if isinstance(exc, McpError):
                self._record(name, reply, started, 502, exc.code, policies)
                return await self.respond(jsonrpc.error(id, jsonrpc.SERVER_ERROR, exc.message))
            self._record(name, reply, started, exc.status, error, policies)
            raise
        finally:
            otel_context.detach(token)
            await kept.save(store, reply)
        final = answered.get("final")
        if result.blocked or final is None:
            out = jsonrpc.result(id, jsonrpc.refused_tool_result(result.content))
            error = error or "refused"
        elif isinstance(final.get("result"), dict):
            value = final["result"]
            if result.content != answered["seen"]:
                value = _rewritten(value, result.content)
            out = {**final, "result": value}
            error = "tool_error" if value.get("isError") else None
        elif "result" in final:
            problem = f"{self.label} answered tools/call with a result that is not an object"
            out, error = jsonrpc.error(id, jsonrpc.SERVER_ERROR, problem), "mcp_bad_answer"
        else:
            out, error = final, "jsonrpc_error"
        self._record(name, reply, started, status, error, policies)
        return await self.respond(out)

    async def exchange(self, sent: Mapping[str, Any]) -> dict[str, Any]:
        """Send a request to the server; its response (events before it are relayed)."""
        async with self.upstream(orjson.dumps(sent)) as answer:
            if answer.status == 404 and "mcp-session-id" in self.request.headers:
                raise _session_gone(self.name, self.request.headers["mcp-session-id"])
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
            return _json(message)
        if self.response is None:
            assert self.answer is not None
            return await self.finish(self.answer, message)
        await self.response.write(sse.encode(message, event="message"))
        await self.response.write_eof()
        return self.response

    def _record(
        self, tool: str, reply: ReplyContext, started: float, status: int, error: str | None,
        policies: tuple[Policy, ...],
    ) -> None:  # fmt: skip
        """Metrics and the audit record of one tool call (never its arguments or result)."""
        seconds = time.perf_counter() - started
        self.request.app[METRICS].observe_tool(self.name, tool, error, seconds)
        runtime = self.request.app[HOLDER].current
        if not runtime.config.audit.enabled:
            return
        identity = self.caller.identity
        record = AuditRecord(
            ts=time.time(), request_id=self.request[REQUEST_ID], api="mcp.tools/call",
            model=tool, status=status, latency_ms=round(seconds * 1000, 3),
            target=f"mcp/{self.name}", error=error, key_id=identity.key_id, team=identity.team,
            user=identity.user, agent=reply.agent, session=reply.session_id,
            reply=reply.reply_id, attempts=1, policy_set=self.policy_set,
            decisions=orjson.dumps({p.name: "applied" for p in policies}).decode(),
        )  # fmt: skip
        self.request.app[STORE].submit_audit(record)


class StdioGateway(Gateway):
    """One request to a server hookgate runs (:mod:`hookgate.server.mcp_stdio`): the
    session's process answers instead of a URL, and the client's answers are JSON (the
    server's own messages wait on the session's ``GET`` stream)."""

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
            return _json(answer)
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
            raise _session_gone(self.name, session_id)
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
        return _json(message, headers=self._headers())

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


class McpError(HookgateError):
    """An MCP server failed a request: answered as a JSON-RPC error naming it."""

    status = 502
    type = "upstream_error"


class McpUnreachable(McpError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="mcp_unreachable")


class McpBadAnswer(McpError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="mcp_bad_answer")


# -- helpers ---------------------------------------------------------------------------


def _parsed(request: web.Request, raw: bytes) -> dict[str, Any]:
    """The POSTed message; its id is kept on the request for an error response."""
    message = jsonrpc.parse(raw)
    request[JSONRPC_ID] = message.get("id")
    return message


def _session_gone(name: str, session_id: str) -> NotFound:
    """404: the session is unknown or over (an MCP client then initializes anew)."""
    return NotFound(
        f"no live session {session_id!r} of MCP server {name!r}: initialize one",
        code="mcp_session_not_found",
    )


def _json(
    message: Mapping[str, Any], status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status, body=orjson.dumps(message), headers=headers,
        content_type="application/json",
    )  # fmt: skip


def _returned(answer: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k in RETURNED if k != "content-type" and (v := answer.headers.get(k))}


async def _blocks(answer: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The event blocks of an event stream, as they arrive."""
    decoder = sse.SSEDecoder()
    async for chunk in answer.content.iter_any():
        for block in decoder.feed(chunk):
            yield block


def _message(block: bytes) -> dict[str, Any] | None:
    try:
        return sse.object_of(block)
    except ValueError:
        return None


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _listed(message: dict[str, Any], policies: list[Policy]) -> dict[str, Any]:
    """A ``tools/list`` response without the tools a policy hides."""
    result = message.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(tools, list):
        return message
    shown = [
        tool for tool in tools
        if not isinstance(tool, Mapping)
        or all(p.tool_offered(str(tool.get("name", ""))) for p in policies)
    ]  # fmt: skip
    return {**message, "result": {**result, "tools": shown}}


STRUCTURED = "\n\u241e hookgate: structuredContent \u241e\n"
"""Between a result's text and the JSON of its ``structuredContent`` in what the policies
see: a model may read either, so ``pii`` redacts both in one pass."""


def _tool_result(final: Mapping[str, Any]) -> ToolResult:
    """What the policies see of the server's response to a ``tools/call``: its text,
    then (after :data:`STRUCTURED`) its ``structuredContent`` as JSON."""
    if "result" not in final:
        error = final.get("error")
        text = str(error.get("message", "")) if isinstance(error, Mapping) else "error"
        return ToolResult(text, error=True, error_message=text, raw=final)
    value = final["result"] if isinstance(final["result"], Mapping) else {}
    return ToolResult(_seen(value), error=bool(value.get("isError")), raw=final)


def _seen(value: Mapping[str, Any]) -> str:
    text = jsonrpc.tool_text(value)
    if "structuredContent" not in value:
        return text
    return text + STRUCTURED + orjson.dumps(value["structuredContent"]).decode()


def _rewritten(value: Mapping[str, Any], content: str) -> dict[str, Any]:
    """A tool result whose content a policy changed (``pii``): its text and its
    ``structuredContent`` replaced by the changed ones. A structured part that is no
    longer JSON (an entity found across its syntax) is withheld with the whole result:
    leaving it out would break clients that check it against the tool's output schema,
    and keeping the original would leak."""
    text, separated, structured = content.partition(STRUCTURED)
    out = jsonrpc.with_tool_text(value, text)
    if "structuredContent" in value:
        try:
            out["structuredContent"] = orjson.loads(structured) if separated else None
        except orjson.JSONDecodeError:
            out["structuredContent"] = None
        if out["structuredContent"] is None:
            return jsonrpc.refused_tool_result(
                "the tool's structured result could not be redacted, so it was withheld"
            )
    return out


async def _approval_needed(
    policies: tuple[Policy, ...], call: ToolCall, ctx: ReplyContext
) -> str | None:
    """Why a human must approve ``call`` first (``tool_guard``'s ``approval: pause``)."""
    for policy in policies:
        if implements(policy, "needs_approval"):
            reason = await policy.needs_approval(call, ctx)
            if reason:
                return reason
    return None


def _meta(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A request's ``params._meta`` (MCP's place for what is not an argument), or {}."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _carrier(request: web.Request, message: Mapping[str, Any]) -> dict[str, str]:
    """W3C trace context: the request's ``params._meta`` (MCP's place for it), else its
    headers."""
    meta = _meta(message)
    if isinstance(meta.get("traceparent"), str):
        return {k: str(meta[k]) for k in ("traceparent", "tracestate") if k in meta}
    return {k: v for k in ("traceparent", "tracestate") if (v := request.headers.get(k))}


async def _reply_context(
    request: web.Request,
    message: Mapping[str, Any],
    store: Store,
    caller: Caller,
    stateful: bool,
) -> tuple[ReplyContext, Kept]:
    """The reply a tool call belongs to, with its and its session's policy state (read
    only when a policy may use it: ``stateful``)."""
    meta = _meta(message)
    headers = request.headers
    reply_id = label_header(headers, "x-hookgate-reply-id") or (
        str(meta[REPLY_META]) if REPLY_META in meta else None
    )
    session_id = label_header(headers, "x-hookgate-session-id") or label_header(
        headers, "mcp-session-id"
    )
    ctx = ReplyContext(
        agent=label_header(headers, "x-hookgate-agent") or "mcp",
        reply_id=reply_id or f"mcp-{_reply_ids.next()}",
        session_id=session_id,
        key_id=caller.identity.key_id,
        team=caller.identity.team,
    )
    kept = Kept(session_key=f"session:{session_id}" if stateful and session_id else None,
                reply_key=f"mcp-reply:{reply_id}" if stateful and reply_id else None)  # fmt: skip
    if kept.session_key is not None:
        kept.session = await store.load_state(kept.session_key) or b"{}"
        ctx.session.update(_object(kept.session))
    if kept.reply_key is not None:
        kept.reply = await store.load_state(kept.reply_key) or b"{}"
        state = _object(kept.reply)
        ctx.state.update(state.get("state", {}))
        ctx.tool_calls = int(state.get("tool_calls", 0))
    return ctx, kept


@dataclass
class Kept:
    """Where a tool call's policy state is kept, and what it was when read: only what a
    call changed is written back, merged with what calls of the same session or reply
    wrote while it ran (:func:`merge_state`), so parallel tool calls keep each other's
    placeholders and counts."""

    session_key: str | None
    reply_key: str | None
    session: bytes = b"{}"
    reply: bytes = b"{}"

    async def save(self, store: Store, ctx: ReplyContext) -> None:
        """Keep what the policies counted and mapped, for the next call."""
        reply = {"state": json_safe(ctx.state), "tool_calls": ctx.tool_calls}
        await asyncio.gather(
            _save_merged(store, self.session_key, self.session, json_safe(ctx.session)),
            _save_merged(store, self.reply_key, self.reply, reply),
        )


_saving: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


async def _save_merged(store: Store, key: str | None, read: bytes, state: dict[str, Any]) -> None:
    """Write ``state`` under ``key`` if it differs from what was ``read``; when another
    call wrote the key since, write the merge. One write per key at a time in this
    process (replicas may still interleave between the re-read and the write)."""
    if key is None or orjson.dumps(state) == read:
        return
    lock = _saving.setdefault(key, asyncio.Lock())
    async with lock:
        now = await store.load_state(key) or b"{}"
        if now != read:
            state = merge_state(_object(read), state, _object(now))
        await store.save_state(key, orjson.dumps(state), STATE_TTL_S)


def _object(raw: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
