"""The store interface: keys, settled spend, the audit log, deployment secrets.

A store implements the budgets' :class:`~hookgate.budgets.ledger.SpendLog` (settled spend
is durable state); the ledgers and rate limiters that fit a store are built beside it by
:mod:`hookgate.store.open`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from hookgate.budgets.ledger import UsageRow
from hookgate.store.approvals import Approval, ApprovalDecision
from hookgate.store.audit_query import AuditPage, AuditQuery
from hookgate.store.grants import AdminChange, Grants, GrantsEdit, Kind
from hookgate.store.keys import KeyRecord


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One request, as the audit log keeps it: who, what, how much, how it ended.

    Never the prompt or the completion, and never a key: only the key's public id.
    """

    ts: float
    request_id: str
    api: str
    model: str
    status: int
    latency_ms: float
    target: str | None = None
    error: str | None = None
    key_id: str | None = None
    team: str | None = None
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    reply: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None
    attempts: int = 0
    decisions: str = "{}"
    """Policy decisions as a JSON object (policy → allow, modify or block)."""
    findings: str = "{}"
    """Guardrail findings as a JSON object (``"EMAIL_ADDRESS:pseudonymize"`` → count):
    entity types and counts only, never a value."""
    policy_set: str | None = None
    """The policy set whose pipeline served the request."""
    actor: str | None = None
    """Who made the decision a record is of (api ``approval``: the approver)."""


@dataclass(frozen=True, slots=True)
class SpendLine:
    """One group of a spend report.

    Money comes from the budget ledger wherever a budget settled a request (the ``usage``
    rows, committed before the answer completed, so a crash never loses them); a request
    no budget settled is counted from its audit record (``unbudgeted`` says how many).
    """

    group: str
    usd: float
    tokens: int
    requests: int
    """Requests served: settled by a budget, or audited with a status below 400."""
    unbudgeted: int
    """Requests (served or not) counted from the audit log because no budget settled them."""

    def as_dict(self, by: str) -> dict[str, Any]:
        """The JSON form of ``hookgate spend --json`` and ``/admin/spend``."""
        return {by: self.group, "usd": round(self.usd, 9), "tokens": self.tokens,
                "requests": self.requests, "unbudgeted": self.unbudgeted}  # fmt: skip


class Store(Protocol):
    """Durable state. Every method may raise :class:`~hookgate.errors.StoreUnavailable`."""

    url: str

    async def open(self) -> None:
        """Connect and create what is missing (idempotent)."""
        ...

    async def close(self) -> None: ...

    async def add_key(self, record: KeyRecord) -> None: ...

    async def key_by_digest(self, digest: str) -> KeyRecord | None: ...

    async def keys(self) -> list[KeyRecord]: ...

    async def revoke_key(self, key_id: str, at: float) -> bool:
        """Revoke a key by id; False when there is no such key."""
        ...

    async def record_usage(self, row: UsageRow) -> None:
        """Append a settled spend record; committed (durable) when this returns."""
        ...

    async def usage_total(self, scope: str, value: str, since: float) -> tuple[float, int]:
        """``(usd, tokens)`` recorded for a scope value (``team``, ``payments``) since then."""
        ...

    async def write_audit(self, record: AuditRecord) -> None:
        """Append one audit record; committed when this returns."""
        ...

    def submit_audit(self, record: AuditRecord) -> None:
        """Queue one audit record, committed in the background with the next group commit
        (milliseconds); :meth:`close` waits for queued records. A failure is logged."""
        ...

    async def audit_records(self, since: float) -> list[dict[str, Any]]:
        """Audit records since a time, oldest first (for JSONL export)."""
        ...

    async def audit_page(self, query: AuditQuery) -> AuditPage:
        """One page of the audit records ``query`` selects, newest first (see
        :mod:`hookgate.store.audit_query`); each record a dict with :class:`AuditRecord`'s
        fields."""
        ...

    async def audit_counts(self, since: float) -> tuple[int, int]:
        """``(requests, errors)`` the audit log recorded since a time (errors: status
        400 and above)."""
        ...

    async def prune_audit(self, before: float) -> int:
        """Delete audit records older than ``before``; returns how many."""
        ...

    async def spend(self, by: str, since: float) -> list[SpendLine]:
        """Spend since a time, grouped by a scope (``key``, ``team``, ``user``, ``agent``,
        ``model``) or ``day``, dearest first: the ledger's settled spend, plus the audit
        records of requests no budget settled (see :class:`SpendLine`)."""
        ...

    async def healthy(self) -> bool: ...

    async def grants(self, kind: Kind, name: str) -> Grants | None:
        """What the admin API granted a key (by id) or team (by name), if anything."""
        ...

    async def all_grants(self, kind: Kind) -> dict[str, Grants]:
        """Every key's or team's grants, by id or name."""
        ...

    async def change_grants(
        self, kind: Kind, subject: str, edit: GrantsEdit, actor: str
    ) -> AdminChange:
        """Change ``subject``'s grants by ``edit`` and append the change, made by
        ``actor``, to the admin log: both or neither, and atomically, so two changes made
        at once (from two admins, or two replicas) both stand. ``edit`` may run more than
        once; what it raises is raised, with nothing written."""
        ...

    async def admin_changes(self, since: float) -> list[AdminChange]:
        """The admin log since a time, oldest first."""
        ...

    async def save_state(self, key: str, value: bytes, ttl_s: float) -> None:
        """Keep ``value`` under ``key`` for ``ttl_s`` seconds (replacing what was there):
        the SDK's paused replies and their sessions, so any process can resume them."""
        ...

    async def load_state(self, key: str) -> bytes | None:
        """What :meth:`save_state` kept under ``key``, or None (never saved, or expired)."""
        ...

    async def update_state(
        self, key: str, change: Callable[[bytes | None], bytes], ttl_s: float
    ) -> bytes:
        """Replace what is kept under ``key`` (None: nothing, or expired) by ``change`` of
        it, for ``ttl_s`` seconds, and return what was written: atomically, so no other
        write of ``key`` (from this process or another sharing the store) falls between
        the read and the write. ``change`` may run more than once (an optimistic store
        runs it again on the newer value); what it raises is raised, with nothing
        written. :mod:`hookgate.store.state` merges reply and session state with it."""
        ...

    async def secret(self, name: str) -> bytes:
        """A 32-byte random secret of this deployment, created on first use and then kept.

        Every process sharing the store reads the same value (the ``pii`` policy keys its
        placeholders with it when its config names no secret).
        """
        ...

    # approvals (:mod:`hookgate.store.approvals`) -------------------------------------

    async def add_approval(self, approval: Approval) -> None:
        """Keep a new approval (durable when this returns)."""
        ...

    async def approval(self, approval_id: str) -> Approval | None:
        """The approval with that id, its status effective now (pending past its
        deadline: ``expired``), or None."""
        ...

    async def approvals(self, status: str | None = None, limit: int = 200) -> list[Approval]:
        """Approvals, newest first, with their effective status; only those of
        ``status`` when given."""
        ...

    async def decide_approval(
        self, approval_id: str, decision: ApprovalDecision, actor: str, at: float
    ) -> Approval:
        """Record ``actor``'s decision, atomically: only a pending, unexpired approval is
        decided (:func:`~hookgate.store.approvals.decided`), so of two approvers on two
        replicas one wins. Raises :class:`~hookgate.store.approvals.ApprovalNotFound`
        or :class:`~hookgate.store.approvals.ApprovalClosed`."""
        ...


def display_url(url: str) -> str:
    """``url`` without credentials, for messages, logs and ``/readyz``: no user info
    (``redis://:secret@host/0`` → ``redis://host/0``) and no query, where a client
    library may take a password too (``?password=...``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path.partition('?')[0]}"


def decision_record(approval: Approval) -> AuditRecord:
    """The audit record of a decision: api ``approval``, the tool as model, target
    ``mcp/{server}``, ``sdk`` or ``proxy``, ``actor`` the approver, decisions ``{"approval":
    <status>}``; never the arguments."""
    target = f"mcp/{approval.server}" if approval.kind == "mcp" else approval.kind
    return AuditRecord(
        ts=approval.decided_at or time.time(), request_id=approval.id, api="approval",
        model=approval.tool, status=200, latency_ms=0.0, target=target,
        key_id=approval.key_id, team=approval.team, user=approval.user, agent=approval.agent,
        session=approval.session, reply=approval.reply, policy_set=approval.policy_set,
        decisions=orjson.dumps({"approval": approval.status}).decode(),
        actor=approval.decided_by,
    )  # fmt: skip
