"""Live traffic: the requests this process is serving now, and the last few hundred it
served, for the admin UI's Live page.

A model call is :meth:`LiveTraffic.begin` at its start (route, request id) and filled in
as it learns who called and which set serves it; :meth:`LiveTraffic.end` moves it to the
recent list with its audit record (the same redacted record the audit log keeps: never
content, never a key); a call that ends without one (its client went away) is dropped.
An MCP ``tools/call`` is shown the same way, waiting for an approval included. In memory
only and per process (with ``server.workers``, the Live page asks every worker for its
own: :func:`hookgate.server.peers.live_calls`): the audit log is the durable history.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from hookgate.store.base import AuditRecord

RECENT = 300
"""How many finished requests the Live page keeps (the newest)."""


@dataclass(slots=True)
class LiveCall:
    """One request as the Live page shows it: filled in while it runs, then ended."""

    request_id: str
    route: str
    """The API the client spoke (``chat.completions``, ``messages``, ``mcp.tools/call``...)."""
    started: float = field(default_factory=time.time)
    model: str = ""
    """The model asked for (an MCP call: the tool)."""
    policy_set: str | None = None
    key_id: str | None = None
    team: str | None = None
    agent: str | None = None
    session: str | None = None
    record: AuditRecord | None = None
    """How it ended (None while in flight)."""

    @property
    def decisions(self) -> dict[str, str]:
        """Each policy's decision (``allow``, ``modify``, ``block``), once ended."""
        if self.record is None:
            return {}
        value = orjson.loads(self.record.decisions)
        return value if isinstance(value, dict) else {}


class LiveTraffic:
    """The in-flight requests of this process and its :data:`RECENT` last finished ones."""

    def __init__(self, keep: int = RECENT) -> None:
        self._flying: dict[int, LiveCall] = {}
        self._recent: deque[LiveCall] = deque(maxlen=keep)

    def begin(self, request_id: str, route: str) -> LiveCall:
        """A request starts; fill in the returned call as it is learned."""
        call = LiveCall(request_id, route)
        self._flying[id(call)] = call
        return call

    def end(self, call: LiveCall, record: AuditRecord) -> None:
        """``call`` ended as ``record`` says (a call never begun is just added)."""
        self._flying.pop(id(call), None)
        call.record = record
        call.model = record.model
        call.policy_set = record.policy_set
        call.key_id, call.team = record.key_id, record.team
        call.agent, call.session = record.agent, record.session
        self._recent.append(call)

    def drop(self, call: LiveCall) -> None:
        """``call`` is no longer in flight, however it ended (a no-op once ended)."""
        self._flying.pop(id(call), None)

    def in_flight(self) -> list[LiveCall]:
        """The requests being served, oldest first."""
        return sorted(self._flying.values(), key=lambda c: c.started)

    def recent(self) -> Iterator[LiveCall]:
        """The finished requests kept, newest first."""
        return reversed(self._recent)
