"""The data files of the origins set, read once (``load("values")`` is ``values.json``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FILES = ("names_dev", "names_heldout", "templates_dev", "templates_heldout", "values")
"""The JSON files of this package: what the chats say lives there, not in the code."""


@cache
def load(name: str) -> Any:
    """One data file of this package, parsed."""
    if name not in FILES:
        raise KeyError(name)
    return json.loads((Path(__file__).parent / f"{name}.json").read_text(encoding="utf-8"))
