"""Approvals: tool calls that wait for a person's yes, as the store keeps them.

An :class:`Approval` is one tool call that a policy paused (``tool_guard``'s
``approval: pause``, a ``provenance`` sink's ``approval``): a ``tools/call`` the MCP
gateway holds open (kind ``mcp``), a call of a reply the SDK paused (kind ``sdk``), or a
tool call a model returned whose answer the proxy holds (kind ``proxy``; approved or
rejected, never edited: the model wrote it, and a rejection's message tells it what to
change). A person decides it with an
:class:`ApprovalDecision` (the admin API, the web UI); the store's
``decide_approval`` is a compare-and-set over :func:`decided`, so of two approvers
(on two replicas) exactly one wins and the other gets :class:`ApprovalClosed`.

What the record shows is never a raw secret: ``arguments`` are the call's arguments as
the caller's ``pii`` policy would let a model see them (placeholders); the real ones
stay in the memory of the process that waits (MCP, proxy) or in the framework's
checkpoint (SDK). A set without a ``pii`` policy shows them as sent.

An SDK pause of several calls (one model turn) is one Approval per call, sharing
``group`` (the paused reply's key, e.g. LangChain's reply id) and ordered by ``index``:
each call is decided on its own, and the framework resumes once all are decided.

Pure: no aiohttp, no I/O.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hookgate.errors import HookgateError, NotFound

Status = Literal["pending", "approved", "edited", "rejected", "expired"]
Kind = Literal["mcp", "sdk", "proxy"]

STATUS_OF: dict[str, Status] = {"approve": "approved", "edit": "edited", "reject": "rejected"}
"""The status a decision leaves an approval in."""


def new_id() -> str:
    """A random, URL-safe approval id."""
    return secrets.token_urlsafe(16)


class Approval(BaseModel):
    """One tool call waiting for (or decided by) a person. See the module docstring."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    kind: Kind
    status: Status = "pending"
    created_at: float
    """Seconds since the epoch."""
    expires_at: float
    """No decision is taken after this; a pending approval past it is ``expired``."""
    tool: str
    server: str | None = None
    """The MCP server's name (kind ``mcp``)."""
    reason: str = ""
    """Why it waits: the pausing policy's reason."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments AS SHOWN: redacted by the caller's ``pii`` policy, if it has one."""
    key_id: str | None = None
    team: str | None = None
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    reply: str | None = None
    policy_set: str | None = None
    group: str | None = None
    """SDK: the paused reply's key, shared by the calls of one paused turn."""
    index: int = 0
    """SDK: the call's place in its turn (the order of the framework's decisions)."""
    call_id: str | None = None
    """The tool call's id (the model's, or the JSON-RPC request's)."""
    decided_by: str | None = None
    decided_at: float | None = None
    decided_arguments: dict[str, Any] | None = None
    """An edit's arguments, as the approver wrote them (placeholders, not values)."""
    message: str | None = None
    """The approver's message (a rejection's is what the caller reads)."""

    def status_at(self, now: float) -> Status:
        """The effective status: a pending approval past :attr:`expires_at` is expired."""
        if self.status == "pending" and now > self.expires_at:
            return "expired"
        return self.status

    def at(self, now: float) -> Approval:
        """This record with its effective status at ``now``."""
        status = self.status_at(now)
        return self if status == self.status else self.model_copy(update={"status": status})


class ApprovalDecision(BaseModel):
    """A person's answer: approve as asked, edit (run with ``arguments``) or reject
    (``message`` is what the caller reads)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Literal["approve", "edit", "reject"]
    arguments: dict[str, Any] | None = None
    message: str | None = Field(None, max_length=4000)

    @model_validator(mode="after")
    def _edit_has_arguments(self) -> ApprovalDecision:
        if self.decision == "edit" and self.arguments is None:
            raise ValueError("an edit needs the new arguments")
        if self.decision != "edit" and self.arguments is not None:
            raise ValueError("only an edit takes arguments")
        return self


class ApprovalNotFound(NotFound):
    """No approval has that id."""

    code = "approval_not_found"

    def __init__(self, approval_id: str) -> None:
        super().__init__(f"no approval with id {approval_id!r}")


class ApprovalClosed(HookgateError):
    """The approval is no longer pending: decided already (by whom, how), or expired."""

    status = 409
    type = "invalid_request_error"
    code = "approval_closed"

    def __init__(self, approval: Approval, now: float) -> None:
        if approval.status_at(now) == "expired":
            text = f"approval {approval.id} expired (no decision before its deadline)"
        else:
            text = f"approval {approval.id} was already {approval.status} by {approval.decided_by}"
        super().__init__(text)
        self.approval = approval


def decided(approval: Approval, decision: ApprovalDecision, actor: str, at: float) -> Approval:
    """``approval`` after ``decision`` by ``actor`` at ``at``; raises
    :class:`ApprovalClosed` unless it is pending and unexpired at ``at``. The store runs
    this between its read and its write, atomically."""
    if approval.status_at(at) != "pending":
        raise ApprovalClosed(approval, at)
    return approval.model_copy(
        update={
            "status": STATUS_OF[decision.decision],
            "decided_by": actor,
            "decided_at": at,
            "decided_arguments": decision.arguments,
            "message": decision.message,
        }
    )
