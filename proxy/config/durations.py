"""Human durations (``30d``, ``12h``, ``90m``, ``45s`` or plain seconds) → seconds."""

from __future__ import annotations

UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in ``text``; raises ValueError for anything else or a negative value."""
    text = text.strip().lower()
    unit = UNITS.get(text[-1:]) if text else None
    value = float(text[:-1]) * unit if unit is not None else float(text)
    if value < 0:
        raise ValueError(f"negative duration: {text!r}")
    return value
