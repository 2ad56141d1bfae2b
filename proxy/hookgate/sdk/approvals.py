"""The approvals of a paused reply: listed where a person decides them, read back by the
framework's resume.

When a reply pauses for a person (:meth:`Driver.pause <hookgate.sdk.driver.Driver.pause>`
with the calls that wait) and the gate has a store, each call becomes an
:class:`~hookgate.store.approvals.Approval` (kind ``sdk``), in the list the admin API and
the web UI show (``/admin/approvals``), its arguments as the gate's ``pii`` policy shows
them. The approvals of one pause share ``group`` (the paused reply's key) and are
ordered by ``index``, the order of the framework's decisions; their ids are kept under
the reply's key and under its session (LangGraph's ``thread_id``), so an application
finds them by either.

Resuming stays the framework's call: :meth:`PausedApprovals.decisions` reads what was
decided, in LangChain's resume shape (``Command(resume=...)``), None while any call
waits. A framework resumed with decisions given directly (not through the list) marks
the approvals still pending as decided by ``sdk`` (:meth:`PausedApprovals.resumed`),
so the list keeps no stale entries; each such decision is audited like a person's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from hookgate.pipeline.agent import Decision, ReplyContext, ToolCall
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.tool_calls import shown_arguments
from hookgate.store.approvals import (
    Approval,
    ApprovalClosed,
    ApprovalDecision,
    ApprovalNotFound,
)
from hookgate.store.base import Store, decision_record

SDK_ACTOR = "sdk"
"""Who decided an approval the framework was resumed with directly."""


class PausedApprovals:
    """The approvals of a gate's paused replies, in its store."""

    def __init__(self, store: Store, policies: Sequence[Policy], ttl_s: float) -> None:
        self.store = store
        self.policies = tuple(policies)
        self.ttl_s = ttl_s

    async def save(
        self, ctx: ReplyContext, key: str, calls: Sequence[tuple[ToolCall, str]]
    ) -> list[Approval]:
        """Store one approval per waiting ``(call, reason)``, in order, for the reply
        paused under ``key``; they expire with the paused reply (``sdk.paused_ttl_s``)."""
        if not calls:
            return []
        now = time.time()
        made = []
        for index, (call, reason) in enumerate(calls):
            shown = await shown_arguments(self.policies, call.arguments, ctx)
            made.append(Approval(
                kind="sdk", created_at=now, expires_at=now + self.ttl_s, tool=call.name,
                reason=reason, arguments=shown, key_id=ctx.key_id, team=ctx.team,
                agent=ctx.agent, session=ctx.session_id, reply=ctx.reply_id, group=key,
                index=index, call_id=call.call_id,
            ))  # fmt: skip
        for approval in made:
            await self.store.add_approval(approval)
        ids = orjson.dumps([a.id for a in made])
        await self.store.save_state(_reply_key(key), ids, self.ttl_s)
        if ctx.session_id:
            await self.store.save_state(_session_key(ctx.session_id), ids, self.ttl_s)
        return made

    async def decisions(self, key: str) -> dict[str, Any] | None:
        """The decisions recorded for the reply paused under ``key`` (or for the latest
        pause of the session ``key``), in LangChain's resume shape: ``{"decisions":
        [{"type": "approve"} | {"type": "edit", "edited_action": {"name", "args"}} |
        {"type": "reject", "message"}]}``, one per call in order; None while any waits.
        An expired call is a rejection that says so. Raises ``LookupError`` when no
        approvals are kept under ``key``."""
        found = await self._approvals(key)
        if any(a.status == "pending" for a in found):
            return None
        return {"decisions": [_langchain(a) for a in found]}

    async def resumed(
        self,
        ctx: ReplyContext,
        key: str,
        decisions: Sequence[Decision] | Mapping[str, Decision],
    ) -> None:
        """The framework resumed the reply paused under ``key`` with ``decisions``: one
        per call in order, or by tool call id. Each approval still pending is decided so,
        by :data:`SDK_ACTOR`, and audited; an edit's arguments are stored as shown, and an
        edit that shows as the call's own arguments is recorded as an approval."""
        try:
            found = await self._approvals(key)
        except LookupError:
            return
        if isinstance(decisions, Mapping):
            paired = [(a, d) for a in found if (d := decisions.get(a.call_id or "")) is not None]
        else:
            paired = list(zip(found, decisions, strict=False))
        for approval, decision in paired:
            if approval.status != "pending":
                continue
            kind, arguments = decision.type, None
            if kind == "edit" and decision.arguments is not None:
                arguments = await shown_arguments(self.policies, decision.arguments, ctx)
                if arguments == approval.arguments:
                    kind, arguments = "approve", None
            answer = ApprovalDecision(decision=kind, arguments=arguments, message=decision.message)
            try:
                made = await self.store.decide_approval(approval.id, answer, SDK_ACTOR, time.time())
            except (ApprovalClosed, ApprovalNotFound):
                continue  # a person decided it meanwhile
            await self.store.write_audit(decision_record(made))

    async def _approvals(self, key: str) -> list[Approval]:
        raw = await self.store.load_state(_reply_key(key))
        if raw is None:
            raw = await self.store.load_state(_session_key(key))
        if raw is None:
            raise LookupError(f"hookgate: no approvals are kept for {key!r}")
        found = [await self.store.approval(str(i)) for i in orjson.loads(raw)]
        return [a for a in found if a is not None]


def _reply_key(key: str) -> str:
    return f"approvals:reply:{key}"


def _session_key(session: str) -> str:
    return f"approvals:session:{session}"


def _langchain(approval: Approval) -> dict[str, Any]:
    """One decision as LangChain's ``HumanInTheLoopMiddleware`` resumes with it."""
    if approval.status == "approved":
        return {"type": "approve"}
    if approval.status == "edited":
        args = approval.decided_arguments or {}
        return {"type": "edit", "edited_action": {"name": approval.tool, "args": args}}
    if approval.status == "expired":
        return {"type": "reject", "message": f"no one approved the call of {approval.tool!r}"}
    message = approval.message or f"{approval.decided_by} rejected the call of {approval.tool!r}"
    return {"type": "reject", "message": message}
