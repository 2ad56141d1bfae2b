"""What every API's continuation shares: how a next attempt continues, and the
divergence of a replay. Pure."""

from __future__ import annotations

from typing import Literal

Mode = Literal["prefill", "replay"]
"""How a next attempt continues: the model continues the delivered text (``prefill``),
or answers anew and must reproduce it (``replay``)."""


class Diverged(Exception):
    """A replayed answer did not reproduce what the client already has."""
