"""A tool call a model returned that waits for a person: a ``provenance`` sink's
``approval`` in the proxy.

The policy's :meth:`~hookgate.Policy.returned_tool_call` asks the request's
:class:`~hookgate.pipeline.types.Approver` (:class:`ProxyApprover`, set by the server on
every proxied model call): the call's :class:`~hookgate.store.approvals.Approval` (kind
``proxy``) is stored with its arguments as the policy set's ``pii`` policy would show
them to a model (placeholders; as sent without one), and the answer waits — a
non-streamed body whole; a streamed one only that call's events, its text having flowed
— until a person decides (the admin API or the web UI, on any replica sharing the store:
:mod:`hookgate.server.approvals`) or the policy's ``approval_timeout_s`` passes:

* approve: the call reaches the client as the model wrote it;
* reject: the call is removed, and the client (the model, on its next turn) reads the
  approver's message in its place;
* no decision in time: removed, and the note says no one approved it in time.

A call the model wrote is approved or rejected, never edited (the admin API refuses an
edit of a ``proxy`` approval): a rejection's message tells the model what to change.
The client's own timeout must outlast the wait (the ``openai`` and ``anthropic`` clients
wait 600 s by default); a client that goes away leaves its approval to expire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.tool_calls import shown_arguments
from hookgate.pipeline.types import Context
from hookgate.server import approvals
from hookgate.server.appkeys import STORE, WAKEUPS
from hookgate.store.approvals import Approval

log = logging.getLogger("hookgate")


class ProxyApprover:
    """Asks a person about the tool calls one proxied model call returns (see the module
    docstring); an :class:`~hookgate.pipeline.types.Approver`."""

    def __init__(self, app: web.Application, policies: Sequence[Policy[Any]]) -> None:
        self.app = app
        self.policies = policies

    async def __call__(
        self, ctx: Context, tool: str, arguments: Mapping[str, Any], call_id: str | None,
        reason: str, timeout_s: float,
    ) -> str | None:  # fmt: skip
        shown_to = ReplyContext(
            agent=ctx.agent or "proxy", reply_id=ctx.reply_id or ctx.request_id,
            session_id=ctx.session_id, key_id=ctx.identity.key_id, team=ctx.identity.team,
        )  # fmt: skip
        shown = await shown_arguments(self.policies, arguments, shown_to)
        now = time.time()
        identity = ctx.identity
        approval = Approval(
            kind="proxy", created_at=now, expires_at=now + timeout_s, tool=tool, reason=reason,
            arguments=shown, key_id=identity.key_id, team=identity.team, user=identity.user,
            agent=ctx.agent, session=ctx.session_id, reply=ctx.reply_id,
            policy_set=ctx.policy_set, call_id=call_id,
        )  # fmt: skip
        wakeups = self.app[WAKEUPS]
        wake = wakeups.register(approval.id)
        try:
            await self.app[STORE].add_approval(approval)
            log.info("approval %s: a returned call of %s waits for a person", approval.id, tool)
            final = await approvals.wait_for_decision(self.app, approval, wake, _wait_on)
        finally:
            wakeups.forget(approval.id)
        if final.status == "approved":
            return None
        if final.status == "rejected":
            text = final.message or "a person rejected it"
            return f"{text} (rejected by {final.decided_by})"
        return f"{reason}; no one approved it within {timeout_s:g} s (approval {approval.id})"


async def _wait_on(elapsed: float) -> str | None:
    """A proxied call waits until decided or expired (the client is not told meanwhile)."""
    return None
