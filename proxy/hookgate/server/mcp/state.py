"""The reply a ``tools/call`` belongs to, and the policy state it reads and writes back.

A call's :class:`~hookgate.pipeline.agent.ReplyContext` is built from the request: the
reply (``x-hookgate-reply-id``, else ``params._meta["hookgate/reply_id"]``, else a new
id), the session (``x-hookgate-session-id``, else the agent's own session header as on
the model routes, else the MCP session), the agent
(``x-hookgate-agent``, else ``mcp``), the caller's key and team, and the W3C trace
context the call continues (``params._meta``, MCP's place for it, else the headers).

Policy state is the store's (:mod:`hookgate.store.state`): the session's is
``session:{id}``, the very record the SDK keeps for a conversation, so an agent's SDK
and the gateway share it, and this process's calls of one session share its live copy;
the reply's is ``mcp-reply:{id}`` (each policy's reply state and the reply's count of
tool calls). What a call changes is written back merged with what other calls and the
SDK wrote meanwhile, so parallel calls keep each other's placeholders and counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from hookgate.ids import UniqueIds
from hookgate.pipeline.agent import ReplyContext
from hookgate.server.auth import Caller
from hookgate.server.calls import label_header, session_header
from hookgate.store.base import Store
from hookgate.store.state import StateRecord, json_safe, shared

REPLY_META = "hookgate/reply_id"
"""The ``params._meta`` entry that names a call's reply (when no header does)."""

_reply_ids = UniqueIds()


@dataclass
class Kept:
    """Where a call's policy state is kept: None where no policy may use it, or the
    call names no session (or reply)."""

    session: StateRecord | None
    reply: StateRecord | None

    async def save(self, ctx: ReplyContext) -> None:
        """Write back what the policies counted and mapped, for the next call."""
        if self.reply is not None:
            self.reply.value.update(state=json_safe(ctx.state), tool_calls=ctx.tool_calls)
        await asyncio.gather(
            *(kept.save() for kept in (self.session, self.reply) if kept is not None)
        )


async def reply_context(
    request: web.Request, message: Mapping[str, Any], store: Store, caller: Caller,
    stateful: bool,
) -> tuple[ReplyContext, Kept]:  # fmt: skip
    """The reply ``message`` (a ``tools/call``) belongs to, with its and its session's
    policy state (read only when a policy may use it: ``stateful``)."""
    meta = _meta(message)
    headers = request.headers
    reply_id = label_header(headers, "x-hookgate-reply-id") or (
        str(meta[REPLY_META]) if REPLY_META in meta else None
    )
    session_id = session_header(headers) or label_header(headers, "mcp-session-id")
    ctx = ReplyContext(
        agent=label_header(headers, "x-hookgate-agent") or "mcp",
        reply_id=reply_id or f"mcp-{_reply_ids.next()}",
        session_id=session_id,
        key_id=caller.identity.key_id,
        team=caller.identity.team,
        parent_trace=_trace_context(request, meta),
    )
    kept = Kept(
        session=shared(store, f"session:{session_id}") if stateful and session_id else None,
        reply=StateRecord(store, f"mcp-reply:{reply_id}") if stateful and reply_id else None,
    )
    if kept.session is not None:
        ctx.session = await kept.session.load()
    if kept.reply is not None:
        state = await kept.reply.load()
        ctx.state.update(state.get("state", {}))
        ctx.tool_calls = int(state.get("tool_calls", 0))
    return ctx, kept


def _meta(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A request's ``params._meta`` (MCP's place for what is not an argument), or {}."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _trace_context(request: web.Request, meta: Mapping[str, Any]) -> dict[str, str]:
    """W3C trace context: the request's ``params._meta`` (MCP's place for it), else its
    headers."""
    if isinstance(meta.get("traceparent"), str):
        return {k: str(meta[k]) for k in ("traceparent", "tracestate") if k in meta}
    return {k: v for k in ("traceparent", "tracestate") if (v := request.headers.get(k))}
