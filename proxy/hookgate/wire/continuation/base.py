"""What every API's continuation shares: how a next attempt continues, and the
divergence of a replay. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from hookgate.wire import sse

Mode = Literal["prefill", "replay"]
"""How a next attempt continues: the model continues the delivered text (``prefill``),
or answers anew and must reproduce it (``replay``)."""


class Diverged(Exception):
    """A replayed answer did not reproduce what the client already has."""


def typed_events(events: bytes) -> Iterator[tuple[bytes, str | None, dict[str, Any]]]:
    """Each event block of ``events`` with its data's ``type`` and the data: ``None`` and
    ``{}`` for a block whose data is not a JSON object with a string ``type`` (Messages and
    Responses events carry their kind there)."""
    for block in sse.split(events):
        data = sse.json_of(block)
        if isinstance(data, dict) and isinstance(kind := data.get("type"), str):
            yield block, kind, data
        else:
            yield block, None, {}
