"""One client request to one configured MCP server: what every transport shares.

:class:`Gateway` reads the POSTed message and answers bad JSON-RPC itself, chooses the
caller's policy set (route ``mcp``), filters ``tools/list`` answers and runs a
``tools/call`` through the tool policies (:mod:`.tools`) with the reply's state
(:mod:`.state`), then records it (:mod:`.audit`). How a message reaches the server and
how the answer reaches the client is a subclass's: :class:`~.streamable.HttpGateway`
for servers reached by ``url``, :class:`~.stdio_gateway.StdioGateway` for servers
hookgate runs.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from hookgate.config.schema import McpServerConfig
from hookgate.errors import HookgateError
from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.observe import Observation
from hookgate.server.appkeys import HOLDER, JSONRPC_ID, LIVE, REQUEST_ID, STORE
from hookgate.server.auth import Caller
from hookgate.server.calls import label_header, select_set
from hookgate.server.live import LiveCall
from hookgate.server.mcp.approval import Waiter, elicitation_answered
from hookgate.server.mcp.audit import record_tool_call
from hookgate.server.mcp.errors import McpError
from hookgate.server.mcp.state import reply_context
from hookgate.server.mcp.tools import call_tool, listed, stateful
from hookgate.server.routes import read_body
from hookgate.store.audit_query import MCP_API
from hookgate.wire import jsonrpc
from hookgate.wire.jsonrpc import JsonRpcError


@dataclass
class Gateway(abc.ABC):
    """One request to one MCP server."""

    request: web.Request
    name: str
    server: McpServerConfig
    caller: Caller
    policy_set: str = "default"

    @property
    def label(self) -> str:
        return f"MCP server {self.name!r}"

    async def post(self) -> web.StreamResponse:
        """One POSTed message: bad JSON-RPC answered here, the rest by :meth:`forward`."""
        limit = self.request.app[HOLDER].current.config.server.max_body_bytes
        raw = await read_body(self.request, limit)
        try:
            message = jsonrpc.parse(raw)
        except JsonRpcError as exc:
            return json_response(exc.to_message(), status=400)
        self.request[JSONRPC_ID] = message.get("id")  # for an error response
        if await elicitation_answered(self.request.app, message):  # ours, not the server's
            return web.Response(status=202)
        return await self.forward(message, raw)

    @abc.abstractmethod
    async def forward(self, message: dict[str, Any], raw: bytes) -> web.StreamResponse:
        """A message to the server: ``tools/call`` through :meth:`tool_call`, the answer
        to ``tools/list`` through :meth:`offered`, anything else relayed."""

    @abc.abstractmethod
    async def relay(self, body: bytes | None, listing: Any = None) -> web.StreamResponse:
        """A ``GET`` or ``DELETE`` (``body`` None) answered as the server answers it."""

    @abc.abstractmethod
    async def exchange(self, sent: Mapping[str, Any]) -> dict[str, Any]:
        """Send a request to the server; its response."""

    @abc.abstractmethod
    async def respond(self, message: Mapping[str, Any]) -> web.StreamResponse:
        """Answer the client with ``message``."""

    @property
    def streaming(self) -> bool:
        """Whether the answer's event stream has begun (an error then goes on it)."""
        return False

    async def notify(self, message: Mapping[str, Any]) -> bool:
        """Send ``message`` (a notification or request of the gateway's own) to the
        client ahead of a ``tools/call``'s answer; False when the client is gone. A
        transport that answers with JSON only sends nothing (True)."""
        return True

    def offered(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/list`` answer without the tools a policy of the caller's set hides."""
        return listed(answer, self.policies())

    def policies(self) -> tuple[Policy, ...]:
        """The policies of the caller's set on route ``mcp``."""
        runtime = self.request.app[HOLDER].current
        agent = label_header(self.request.headers, "x-hookgate-agent")
        chosen = select_set(runtime, self.caller, route="mcp", agent=agent)
        self.policy_set = chosen.name
        return runtime.pipelines[chosen.name].policies

    async def tool_call(self, message: dict[str, Any]) -> web.StreamResponse:
        """A ``tools/call``: through the policies, with the reply's state read before and
        written back after, answered and recorded; a server's failure is a JSON-RPC
        error, a policy's error is raised."""
        id = message.get("id")
        try:
            if not jsonrpc.is_request(message):  # else it would reach the server unguarded
                raise JsonRpcError(
                    jsonrpc.INVALID_REQUEST, "Invalid Request: tools/call needs an id"
                )
            name, arguments = jsonrpc.tool_call(message)
        except JsonRpcError as exc:
            return json_response(exc.to_message(), status=400)
        policies = self.policies()
        started = time.perf_counter()
        store = self.request.app[STORE]
        reply, kept = await reply_context(
            self.request, message, store, self.caller, stateful(policies)
        )
        reply.tool_calls += 1  # counted when it starts, refused or not (as the SDK counts)
        observation = Observation()
        reply.observation = observation  # a policy's findings and measures
        live = self.request.app[LIVE].begin(self.request[REQUEST_ID], MCP_API)
        identity = self.caller.identity
        live.model, live.policy_set, live.key_id, live.team = (
            name,
            self.policy_set,
            identity.key_id,
            identity.team,
        )
        live.agent, live.session = reply.agent, reply.session_id
        try:
            waiter = Waiter(
                self.request, self.name, self.caller, self.policy_set, policies, self.notify,
                message,
            )  # fmt: skip
            answered = await call_tool(
                message, name, arguments, policies, reply, self.exchange, self.label,
                observation, waiter,
            )  # fmt: skip
        except McpError as exc:
            self._record(name, reply, started, exc.status, exc.code, observation, live)
            return await self.respond(jsonrpc.error(id, jsonrpc.SERVER_ERROR, exc.message))
        except HookgateError as exc:
            error = exc.code or type(exc).__name__
            self._record(name, reply, started, exc.status, error, observation, live)
            if not self.streaming:
                raise
            # the answer's stream has begun (the client was told the call waits): the
            # error goes on it, as the error layer would have written it
            return await self.respond(jsonrpc.error(id, jsonrpc.SERVER_ERROR, exc.message))
        finally:
            self.request.app[LIVE].drop(live)  # ended above, or gone with its client
            await kept.save(reply)
        self._record(name, reply, started, 200, answered.error, observation, live)
        return await self.respond(answered.message)

    def _record(
        self, tool: str, reply: ReplyContext, started: float, status: int, error: str | None,
        observation: Observation, live: LiveCall,
    ) -> None:  # fmt: skip
        record_tool_call(
            self.request, self.name, tool, self.caller, reply, started, status, error,
            self.policy_set, observation, live,
        )  # fmt: skip


def json_response(
    message: Mapping[str, Any], status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON-RPC message as an ``application/json`` response."""
    return web.Response(
        status=status, body=orjson.dumps(message), headers=headers,
        content_type="application/json",
    )  # fmt: skip
