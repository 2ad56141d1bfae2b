"""The data files of the independent set, read once (``load("names")`` is ``names.json``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FILES = ("names", "values", "technical", "texts", "blocks", "tools")
"""The JSON files of this package: what the chats say lives there, not in the code."""


@cache
def load(name: str) -> Any:
    """One data file of this package, parsed."""
    if name not in FILES:
        raise KeyError(name)
    return json.loads((Path(__file__).parent / f"{name}.json").read_text(encoding="utf-8"))
