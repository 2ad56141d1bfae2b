"""Spend fixtures shared by the budget, durability and Redis suites."""

from __future__ import annotations

import sqlite3
from pathlib import Path

PRICE = "pricing: {fixed-model: {input: 1000.0, output: 1000.0}}\n"
"""$0.001 per token for ``fixed-model``."""
PER_REQUEST_USD = 15 * 0.001
"""The fake upstream reports 10 input + 5 output tokens per request."""


def settled(db: Path) -> tuple[float, int]:
    """``(USD, records)`` of settled spend in a SQLite store."""
    with sqlite3.connect(db) as connection:
        usd, count = connection.execute(
            "SELECT COALESCE(SUM(cost_usd), 0), COUNT(*) FROM usage"
        ).fetchone()
    return float(usd), int(count)


def audited(db: Path) -> tuple[float, int, int]:
    """``(USD, tokens, records)`` the audit log of a SQLite store says were spent."""
    with sqlite3.connect(db) as connection:
        usd, tokens, count = connection.execute(
            "SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens + output_tokens), 0),"
            " COUNT(*) FROM audit"
        ).fetchone()
    return float(usd), int(tokens), int(count)
