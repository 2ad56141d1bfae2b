"""Approvals in the admin API: the tool calls that wait for a person, and their decisions.

``GET /admin/approvals?status=pending&limit=200`` lists them, newest first (``status``:
``pending``, ``approved``, ``edited``, ``rejected`` or ``expired``; none: all);
``GET /admin/approvals/{id}`` shows one; ``POST /admin/approvals/{id}`` with an
:class:`~hookgate.store.approvals.ApprovalDecision` body (``{"decision": "approve"}``,
``{"decision": "edit", "arguments": {...}}``, ``{"decision": "reject", "message":
"..."}``) decides it, as the ``x-hookgate-actor`` header's actor (else ``admin``).
Errors: 404 unknown id, 409 decided already or expired, 400 a bad body.

:func:`decide` and :func:`pending` are the same operations for code in the server (the
web UI calls them): one decision is one compare-and-set in the store (of two approvers,
on two replicas, one wins), one audit record (api ``approval``, model = the tool, target
``mcp/{server}``, ``sdk`` or ``proxy``, ``actor`` = the approver, decisions ``{"approval":
<status>}``), and a wake-up of the call waiting in this process or another worker of
this server (one on another replica sees the decision at its next poll of the store).

What an approval shows is never a raw secret: see :mod:`hookgate.store.approvals`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from hookgate.errors import InvalidRequest
from hookgate.server import peers
from hookgate.server.admin import request_actor
from hookgate.server.appkeys import HOLDER, STORE, WAKEUPS
from hookgate.server.auth import check_admin
from hookgate.store.approvals import (
    Approval,
    ApprovalClosed,
    ApprovalDecision,
    ApprovalNotFound,
)
from hookgate.store.base import decision_record

STATUSES = frozenset({"pending", "approved", "edited", "rejected", "expired"})
MAX_LIMIT = 1000
POLL_S = 0.25
"""How often a waiting call reads its approval from the store."""

Tick = Callable[[float], Awaitable[str | None]]
"""Called at each poll of a waiting call with the seconds it has waited: a reason to
withdraw it (the client went away), or None to wait on."""


def add_routes(app: web.Application) -> None:
    """Register ``/admin/approvals``."""
    app.router.add_get("/admin/approvals", list_approvals)
    app.router.add_get("/admin/approvals/{id}", get_approval)
    app.router.add_post("/admin/approvals/{id}", decide_approval)


async def pending(app: web.Application) -> list[Approval]:
    """The approvals still waiting for a decision, newest first."""
    return await app[STORE].approvals("pending")


async def decide(
    app: web.Application, approval_id: str, decision: ApprovalDecision, actor: str
) -> Approval:
    """Decide an approval as ``actor``: stored (compare-and-set), audited, and the call
    waiting for it in this process woken. Raises
    :class:`~hookgate.store.approvals.ApprovalNotFound` (404) or
    :class:`~hookgate.store.approvals.ApprovalClosed` (409)."""
    if decision.decision == "edit":
        found = await app[STORE].approval(approval_id)
        if found is not None and found.kind == "proxy":
            raise InvalidRequest(
                "a tool call a model returned through the proxy can be approved or rejected, "
                "not edited: reject it with a message saying what to change, and the model "
                "reads it",
                param="decision",
            )
    made = await app[STORE].decide_approval(approval_id, decision, actor, time.time())
    app[WAKEUPS].wake(approval_id)
    await peers.tell_all(app, "/wake", {"id": approval_id})
    if app[HOLDER].current.config.audit.enabled:
        await app[STORE].write_audit(decision_record(made))
    return made


async def wait_for_decision(
    app: web.Application, approval: Approval, wake: asyncio.Event, tick: Tick
) -> Approval:
    """``approval`` (stored, its wake-up registered) once decided, or ``expired``: read
    from the store every :data:`POLL_S`, at once when this process decides it; ``tick``
    runs at each poll, and a reason it gives withdraws the call (rejected by
    ``client``), as does the caller's cancellation (the client went away)."""
    store = app[STORE]
    started = time.monotonic()
    try:
        while True:
            current = await store.approval(approval.id)
            if current is None:
                return approval.model_copy(update={"status": "expired"})
            if current.status != "pending":
                return current
            why = await tick(time.monotonic() - started)
            if why is not None:
                return await withdraw(app, approval, why)
            left = current.expires_at - time.time()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), max(0.0, min(POLL_S, left + 0.01)))
            wake.clear()
    except asyncio.CancelledError:
        await asyncio.shield(withdraw(app, approval, "the client went away"))
        raise


async def withdraw(app: web.Application, approval: Approval, why: str) -> Approval:
    """Reject ``approval`` as ``client`` (an approver who decided first wins)."""
    decision = ApprovalDecision(decision="reject", message=why)
    try:
        return await decide(app, approval.id, decision, "client")
    except ApprovalClosed as closed:
        return closed.approval.at(time.time())


async def list_approvals(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    status = request.query.get("status") or None
    if status is not None and status not in STATUSES:
        raise InvalidRequest(f"status must be one of {', '.join(sorted(STATUSES))}", param="status")
    try:
        limit = int(request.query.get("limit", "200"))
    except ValueError:
        limit = 0
    if not 0 < limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}", param="limit")
    found = await request.app[STORE].approvals(status, limit)
    return _json({"object": "list", "data": [a.model_dump() for a in found]})


async def get_approval(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    approval_id = request.match_info["id"]
    found = await request.app[STORE].approval(approval_id)
    if found is None:
        raise ApprovalNotFound(approval_id)
    return _json(found.model_dump())


async def decide_approval(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    try:
        decision = ApprovalDecision.model_validate_json(await request.read() or b"{}")
    except ValidationError as exc:
        raise InvalidRequest(f"invalid decision: {exc.errors()[0]['msg']}") from None
    made = await decide(request.app, request.match_info["id"], decision, request_actor(request))
    return _json(made.model_dump())


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")
