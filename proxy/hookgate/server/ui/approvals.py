"""The admin UI's approvals: the tool calls waiting for a person (an MCP ``tools/call``
the gateway holds open, a call of a reply the SDK paused), and the forms that approve,
edit or reject one. A decision goes through :func:`hookgate.server.approvals.decide`, as
the admin API's does: one compare-and-set in the store, audited with the UI user as its
actor, the waiting call woken."""

from __future__ import annotations

import time

import orjson
from aiohttp import web
from pydantic import ValidationError

from hookgate.errors import HookgateError
from hookgate.server import approvals
from hookgate.server.appkeys import STORE
from hookgate.server.ui.auth import action, page
from hookgate.server.ui.manage import actor
from hookgate.server.ui.render import render, see_other
from hookgate.server.ui.sessions import UiSession
from hookgate.store.approvals import ApprovalDecision, ApprovalNotFound

RECENT = 50
"""How many decided (or expired) approvals the list shows under the waiting ones."""


@page
async def approvals_page(request: web.Request, session: UiSession) -> web.Response:
    """What waits for a decision (refreshed every few seconds), and the last decided."""
    now = time.time()
    waiting = [a for a in await approvals.pending(request.app) if a.status_at(now) == "pending"]
    recent = [a.at(now) for a in await request.app[STORE].approvals(None, RECENT * 2)]
    context = {
        "session": session, "waiting": waiting, "now": now,
        "recent": [a for a in recent if a.status != "pending"][:RECENT],
        "decided": request.query.get("decided"),
    }  # fmt: skip
    template = "approvals_rows.html" if request.headers.get("hx-request") else "approvals.html"
    return render(request, template, context)


@page
async def approval_page(request: web.Request, session: UiSession) -> web.Response:
    """One approval: what waits, for whom, and the forms that decide it."""
    return await _approval(request, session)


async def _approval(
    request: web.Request, session: UiSession, *, error: str | None = None,
    arguments: str | None = None, status: int = 200,
) -> web.Response:  # fmt: skip
    approval_id = request.match_info["id"]
    found = await request.app[STORE].approval(approval_id)
    if found is None:
        raise ApprovalNotFound(approval_id)
    now = time.time()
    shown = found.at(now)
    context = {
        "session": session, "approval": shown, "now": now, "error": error,
        "arguments": arguments if arguments is not None else _pretty(shown.arguments),
        "decided_arguments": _pretty(shown.decided_arguments) if shown.decided_arguments else "",
    }  # fmt: skip
    return render(request, "approval.html", context, status=status)


@action
async def decide(request: web.Request, session: UiSession) -> web.StreamResponse:
    """Approve, edit (run with the form's arguments) or reject the approval."""
    form = await request.post()
    choice = form.get("decision")
    text = form.get("arguments")
    arguments_text = text if isinstance(text, str) else ""
    message = form.get("message")
    try:
        arguments = _arguments(arguments_text) if choice == "edit" else None
        decision = ApprovalDecision.model_validate({
            "decision": choice, "arguments": arguments,
            "message": message.strip() or None if isinstance(message, str) else None,
        })  # fmt: skip
    except (ValueError, ValidationError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        return await _approval(request, session, error=why, arguments=arguments_text, status=400)
    try:
        made = await approvals.decide(
            request.app, request.match_info["id"], decision, actor(session)
        )
    except ApprovalNotFound:
        raise
    except HookgateError as exc:  # decided by someone else meanwhile, or expired
        return await _approval(request, session, error=exc.message, status=exc.status)
    return see_other(f"/ui/approvals?decided={made.id}")


def _arguments(text: str) -> dict[str, object]:
    """An edit's arguments: a JSON object."""
    try:
        value = orjson.loads(text or "{}")
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"the arguments are not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object ({...})")
    return value


def _pretty(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
