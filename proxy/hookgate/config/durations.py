"""Human durations (``30d``, ``12h``, ``90m``, ``45s`` or plain seconds) → seconds."""

from __future__ import annotations

import math

UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in ``text``; raises ValueError for anything else, a negative value, or one
    that is not finite (``nan``, ``inf``, ``1e400d``)."""
    text = text.strip().lower()
    unit = UNITS.get(text[-1:]) if text else None
    value = float(text[:-1]) * unit if unit is not None else float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a finite, non-negative duration: {text!r}")
    return value
