"""Process-unique ids without a system call each. Pure."""

from __future__ import annotations

import itertools
import os
import secrets
import weakref


class UniqueIds:
    """Ids unique across processes and replicas: a random per-instance prefix (64 bits) and
    a counter; 32 hex digits, like a UUID's hex form. ``uuid4`` reads the OS's random
    source on every call, which shows in a per-request profile. A forked child (a worker of
    ``hookgate serve --workers N``) draws new prefixes, so workers never repeat an id."""

    def __init__(self) -> None:
        self._reseed()
        _LIVING.add(self)

    def _reseed(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"


_LIVING: weakref.WeakSet[UniqueIds] = weakref.WeakSet()
"""Every instance, so a forked child can give each a new prefix."""


def _after_fork() -> None:
    for ids in list(_LIVING):
        ids._reseed()


os.register_at_fork(after_in_child=_after_fork)
