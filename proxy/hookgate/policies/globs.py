"""Which names a policy's YAML globs pick (tools, models)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable


def listed(name: str, globs: Iterable[str]) -> bool:
    """Shell-style globs, case-insensitive: ``delete_*`` also picks ``Delete_User``."""
    folded = name.casefold()
    return any(fnmatch.fnmatchcase(folded, glob.casefold()) for glob in globs)
