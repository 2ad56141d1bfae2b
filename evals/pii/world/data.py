"""The data files of the world set, each read once (``load("names")`` is ``names.json``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FILES = ("names", "templates", "values")
"""The JSON files of this package: the names, the templates, the structured values."""


@cache
def load(name: str) -> Any:
    """One data file of this package, parsed."""
    if name not in FILES:
        raise KeyError(name)
    return json.loads((Path(__file__).parent / f"{name}.json").read_text(encoding="utf-8"))
