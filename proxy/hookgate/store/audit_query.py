"""A search of the audit log: filters, and keyset paging newest first.

:class:`AuditQuery` is what the admin UI's Audit page (and anything else reading the log a
page at a time) asks a store's ``audit_page`` for. Paging is by cursor, not offset: a
page ends at a record's ``(ts, id)`` and the next starts strictly before it, so reading
page 500 of 100,000 records costs what page 1 does and a record written meanwhile never
shifts a page. Pure: a store turns a query into its own search (SQL in SQLite, a scan of
the stream in Redis, which uses :meth:`AuditQuery.matches`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

MCP_API = "mcp.tools/call"
"""The ``api`` of an MCP gateway tool call's audit record (its tool is the ``model``, its
server the ``target`` ``mcp/{server}``)."""

Text = Annotated[str, Field(min_length=1, max_length=256)]

_DECISION = re.compile(r"^[\w.:-]{1,64}(=(allow|modify|block))?$")
_STATUS = re.compile(r"^(ok|error|[1-5]\d\d)$")


class AuditQuery(BaseModel):
    """Which audit records to read: every filter given must hold (all are exact
    matches), newest first, :attr:`limit` at a time, before :attr:`cursor`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: Text | None = None
    key_id: Text | None = None
    team: Text | None = None
    user: Text | None = None
    model: Text | None = None
    """The model asked for (an MCP tool call's record names its tool here)."""
    agent: Text | None = None
    session: Text | None = None
    api: Text | None = None
    status: str | None = None
    """``ok`` (below 400), ``error`` (400 and above) or one status code (``429``)."""
    decision: str | None = None
    """A policy that decided (``pii``), or its decision too (``pii=modify``,
    ``tool_guard=block``)."""
    mcp_server: Text | None = None
    """Tool calls through this MCP gateway server."""
    tool: Text | None = None
    """Tool calls of this tool (through the MCP gateway)."""
    since: float | None = None
    until: float | None = None
    cursor: str | None = None
    """Where the previous page ended (:attr:`AuditPage.next`)."""
    limit: Annotated[int, Field(ge=1, le=500)] = 50

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        if value is not None and not _STATUS.match(value):
            raise ValueError("status is ok, error or a status code such as 429")
        return value

    @field_validator("decision")
    @classmethod
    def _decision(cls, value: str | None) -> str | None:
        if value is not None and not _DECISION.match(value):
            raise ValueError("decision is a policy name, or policy=allow|modify|block")
        return value

    @field_validator("cursor")
    @classmethod
    def _cursor(cls, value: str | None) -> str | None:
        if value is not None:
            parse_cursor(value)
        return value

    def equals(self) -> dict[str, str]:
        """The filters that compare a record's field to a value, by field name."""
        fields = {
            "request_id": self.request_id, "key_id": self.key_id, "team": self.team,
            "user": self.user, "agent": self.agent, "session": self.session,
            "api": MCP_API if self.mcp_server or self.tool else self.api,
            "model": self.tool or self.model,
            "target": None if self.mcp_server is None else f"mcp/{self.mcp_server}",
        }  # fmt: skip
        return {name: value for name, value in fields.items() if value is not None}

    def decided(self) -> tuple[str, str | None] | None:
        """The :attr:`decision` filter as ``(policy, decision or None)``."""
        if self.decision is None:
            return None
        policy, _, decision = self.decision.partition("=")
        return policy, decision or None

    def matches(self, record: dict[str, Any]) -> bool:
        """Whether an audit record (as a dict) passes every filter but the cursor."""
        if any(record.get(name) != value for name, value in self.equals().items()):
            return False
        ts = float(record.get("ts", 0))
        if (self.since is not None and ts < self.since) or (
            self.until is not None and ts >= self.until
        ):
            return False
        if not status_matches(self.status, int(record.get("status", 0))):
            return False
        decided = self.decided()
        if decided is not None:
            decisions = _object(record.get("decisions"))
            policy, decision = decided
            if policy not in decisions or (decision is not None and decisions[policy] != decision):
                return False
        return True


def status_matches(wanted: str | None, status: int) -> bool:
    """Whether ``status`` is what :attr:`AuditQuery.status` asks for."""
    if wanted is None:
        return True
    if wanted == "ok":
        return status < 400
    if wanted == "error":
        return status >= 400
    return status == int(wanted)


@dataclass(frozen=True, slots=True)
class AuditPage:
    """One page of records, newest first, and the cursor of the next (None: the last)."""

    records: list[dict[str, Any]]
    next: str | None


def make_cursor(ts: float, position: int | str) -> str:
    """The cursor of a page that ended at the record of time ``ts`` and store position
    ``position`` (a row id, a stream id)."""
    return f"{ts!r}~{position}"


_POSITION = re.compile(r"^\d{1,18}(-\d{1,18})?$")
"""A row id (SQLite) or a stream id (Redis)."""


def parse_cursor(cursor: str) -> tuple[float, str]:
    """``(ts, position)`` of a cursor; ``ValueError`` when it is not one."""
    ts, sep, position = cursor.partition("~")
    try:
        moment = float(ts) if len(cursor) <= 64 and ts.isascii() else math.nan
    except ValueError:
        moment = math.nan
    if not sep or not math.isfinite(moment) or not _POSITION.match(position):
        raise ValueError("not a cursor of this audit log")
    return moment, position


def _object(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
