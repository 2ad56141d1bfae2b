"""A ``tools/call`` that waits for a person: ``tool_guard``'s ``approval: pause`` in the
gateway.

The call's :class:`~hookgate.store.approvals.Approval` (kind ``mcp``) is stored with its
arguments as the caller's ``pii`` policy shows them (placeholders; a set without ``pii``
shows them as sent), and the call waits, its real arguments in this process's memory
only, until it is decided (the admin API or the web UI, on any replica sharing the
store: :mod:`hookgate.server.approvals`) or its ``approval_timeout_s`` passes:

* approve: the call runs as asked; edit: with the approver's arguments, their
  placeholders restored (``from_approver``); both then through the rest of the policies
  as any call. Reject: not run; the client reads the approver's message as a refused
  tool result. No decision in time: a JSON-RPC error saying so (the approval reads
  ``expired``).
* The waiter reads the store every :data:`~hookgate.server.approvals.POLL_S` and is woken
  at once by a decision made in this process (:mod:`hookgate.server.wakeups`).
* While it waits the client is told, on the call's event stream (Streamable HTTP): a
  ``notifications/message`` (logging, level ``info``) naming what waits, a
  ``notifications/progress`` every :data:`PROGRESS_EVERY_S` when the call's
  ``params._meta`` carries a ``progressToken``, and an ``elicitation/create`` request
  when the client declared the ``elicitation`` capability at ``initialize``. Its answer
  never approves: ``decline`` withdraws the call (rejected by ``client``); ``accept`` and
  ``cancel`` (dismissed) leave it waiting for the approver. A server hookgate runs
  (stdio) answers ``tools/call`` with JSON, so its callers wait without being told.
* A client that disconnects while its call waits withdraws it: rejected by ``client``
  (unless an approver decided first), and the tool does not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from hookgate.pipeline.agent import ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Policy, implements
from hookgate.pipeline.tool_calls import restored_arguments, shown_arguments
from hookgate.server import approvals
from hookgate.server.appkeys import STORE, WAKEUPS
from hookgate.server.auth import Caller
from hookgate.server.mcp.errors import McpError
from hookgate.store.approvals import (
    Approval,
    ApprovalClosed,
    ApprovalDecision,
    ApprovalNotFound,
)

log = logging.getLogger("hookgate")

PROGRESS_EVERY_S = 5.0
"""How often a waiting call with a ``progressToken`` is sent ``notifications/progress``."""
DEFAULT_TIMEOUT_S = 300.0
"""How long a call waits when no pausing policy sets ``approval_timeout_s``."""
ELICITATION_ID = "hookgate-approval:"
"""The prefix of the id of the ``elicitation/create`` request that tells a client what
waits (its answer comes back to the gateway, never to the server)."""
ELICITS_KEY = "mcp-elicits:{server}:{session}"
"""The store key recording that a client session declared ``elicitation``."""
ELICITS_TTL_S = 7 * 86400.0

Notify = Callable[[Mapping[str, Any]], Awaitable[bool]]
"""Send a message to the client on the call's stream; False when it cannot (gone)."""


class ApprovalTimedOut(McpError):
    """No one decided a paused ``tools/call`` in time."""

    status = 408

    def __init__(self, message: str) -> None:
        super().__init__(message, code="approval_timeout")


class Withdrawn(McpError):
    """The client went away (or declined) while its call waited: it is not run."""

    status = 499

    def __init__(self, message: str) -> None:
        super().__init__(message, code="approval_withdrawn")


def timeout_s(policies: tuple[Policy[Any], ...]) -> float:
    """The wait a call gets: the ``approval_timeout_s`` of the first policy that can
    pause calls and sets one (``tool_guard``), else :data:`DEFAULT_TIMEOUT_S`."""
    for policy in policies:
        if implements(policy, "needs_approval"):
            value = getattr(policy.config, "approval_timeout_s", None)
            if isinstance(value, int | float):
                return float(value)
    return DEFAULT_TIMEOUT_S


class Waiter:
    """One paused call of one request: stored, told to the client, and waited for."""

    def __init__(
        self, request: web.Request, server: str, caller: Caller, policy_set: str,
        policies: tuple[Policy[Any], ...], notify: Notify, message: Mapping[str, Any],
    ) -> None:  # fmt: skip
        self.request = request
        self.server = server
        self.caller = caller
        self.policy_set = policy_set
        self.policies = policies
        self.notify = notify
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        self.progress_token = meta.get("progressToken") if isinstance(meta, Mapping) else None

    async def __call__(
        self, call: ToolCall, reason: str, ctx: ReplyContext
    ) -> ToolCall | ToolResult:
        """Wait for a person's decision on ``call``: the call to run (approved, or with the
        edited arguments restored), or the refusal the client reads (rejected). Raises
        :class:`ApprovalTimedOut` or :class:`Withdrawn`."""
        app = self.request.app
        wait_s = timeout_s(self.policies)
        shown = await shown_arguments(self.policies, call.arguments, ctx)
        now = time.time()
        identity = self.caller.identity
        approval = Approval(
            kind="mcp", created_at=now, expires_at=now + wait_s, tool=call.name,
            server=self.server, reason=reason, arguments=shown, key_id=identity.key_id,
            team=identity.team, user=identity.user, agent=ctx.agent, session=ctx.session_id,
            reply=ctx.reply_id, policy_set=self.policy_set, call_id=call.call_id,
        )  # fmt: skip
        wake = app[WAKEUPS].register(approval.id)
        try:
            await app[STORE].add_approval(approval)
            log.info(
                "approval %s: %s of %s waits for a person", approval.id, call.name, self.server
            )
            await self._tell(approval, wait_s)
            final = await self._decision(approval, wake, wait_s)
        finally:
            app[WAKEUPS].forget(approval.id)
        if final.status == "rejected":
            text = final.message or f"a person rejected the call of {call.name!r}"
            if final.decided_by == "client":
                raise Withdrawn(f"the call of {call.name!r} was withdrawn: {text}")
            return ToolResult.refused(f"{text} (rejected by {final.decided_by})")
        if final.status == "edited" and final.decided_arguments is not None:
            edited = await restored_arguments(self.policies, final.decided_arguments, ctx)
            return call.with_arguments(edited)
        return call

    async def _tell(self, approval: Approval, wait_s: float) -> None:
        """What the client is told when its call starts to wait (see the module docstring)."""
        text = (
            f"The call of {approval.tool!r} waits for a person to approve it "
            f"({approval.reason}); approval {approval.id}, up to {wait_s:g} s."
        )
        await self.notify({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "logger": "hookgate", "data": text},
        })  # fmt: skip
        await self._progress(0.0, wait_s, text)
        if await self._elicits():
            await self.notify({
                "jsonrpc": "2.0", "id": f"{ELICITATION_ID}{approval.id}",
                "method": "elicitation/create",
                "params": {
                    "message": text + " Decline to withdraw the call; your answer does not "
                    "approve it.",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
            })  # fmt: skip

    async def _elicits(self) -> bool:
        session = self.request.headers.get("mcp-session-id")
        if not session:
            return False
        key = ELICITS_KEY.format(server=self.server, session=session)
        return await self.request.app[STORE].load_state(key) is not None

    async def _progress(self, elapsed: float, total: float, text: str) -> bool:
        if self.progress_token is None:
            return True
        return await self.notify({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": self.progress_token, "progress": round(elapsed, 3),
                       "total": total, "message": text},
        })  # fmt: skip

    async def _decision(self, approval: Approval, wake: asyncio.Event, wait_s: float) -> Approval:
        """The approval once decided (or withdrawn here); raises :class:`ApprovalTimedOut`."""
        told = [0.0]

        async def tick(elapsed: float) -> str | None:
            if elapsed - told[0] >= PROGRESS_EVERY_S:
                told[0] = elapsed
                waiting = f"waiting for a person to approve {approval.tool!r}"
                if not await self._progress(elapsed, wait_s, waiting):
                    return "the client went away"
            transport = self.request.transport
            return "the client went away" if transport is None or transport.is_closing() else None

        final = await approvals.wait_for_decision(self.request.app, approval, wake, tick)
        if final.status == "expired":
            raise ApprovalTimedOut(
                f"no one approved the call of {approval.tool!r} within {wait_s:g} s "
                f"(approval {approval.id})"
            )
        return final


async def elicitation_answered(app: web.Application, message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is a client's answer to the gateway's own
    ``elicitation/create`` (then handled here: ``decline`` withdraws the call)."""
    id = message.get("id")
    if "method" in message or not isinstance(id, str) or not id.startswith(ELICITATION_ID):
        return False
    result = message.get("result")
    if isinstance(result, Mapping) and result.get("action") == "decline":
        decision = ApprovalDecision(decision="reject", message="the client declined the call")
        with contextlib.suppress(ApprovalClosed, ApprovalNotFound):
            await approvals.decide(app, id.removeprefix(ELICITATION_ID), decision, "client")
    return True
