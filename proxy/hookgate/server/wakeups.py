"""In-process wake-ups of the tool calls waiting for a person's decision.

A waiter (the MCP gateway's ``tools/call``) polls the store, so a decision made on
another replica reaches it within a poll; a decision made in this process also wakes it
at once through here (:func:`hookgate.server.approvals.decide`).
"""

from __future__ import annotations

import asyncio


class Wakeups:
    """An event per approval id that something in this process waits on."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def register(self, approval_id: str) -> asyncio.Event:
        """The event set when ``approval_id`` is decided here (until :meth:`forget`)."""
        return self._events.setdefault(approval_id, asyncio.Event())

    def forget(self, approval_id: str) -> None:
        self._events.pop(approval_id, None)

    def wake(self, approval_id: str) -> None:
        """Wake whoever waits on ``approval_id`` in this process (no-op if nobody)."""
        event = self._events.get(approval_id)
        if event is not None:
            event.set()
