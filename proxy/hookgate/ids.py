"""Process-unique ids without a system call each, and state a forked child must renew. Pure."""

from __future__ import annotations

import itertools
import os
import secrets
import weakref
from typing import Any, Protocol


class ForkAware(Protocol):
    def after_fork(self) -> None:
        """Renew what a forked child must not share with its parent (its ids, its threads)."""


_FORK_AWARE: weakref.WeakSet[Any] = weakref.WeakSet()
"""Every object :func:`renew_after_fork` was given that is still alive."""


def renew_after_fork(obj: ForkAware) -> None:
    """Call ``obj.after_fork()`` in each child this process forks (a worker of
    ``hookgate serve --workers N``), for as long as ``obj`` lives."""
    _FORK_AWARE.add(obj)


def _after_fork() -> None:
    for obj in list(_FORK_AWARE):
        obj.after_fork()


os.register_at_fork(after_in_child=_after_fork)


class UniqueIds:
    """Ids unique across processes and replicas: a random per-instance prefix (64 bits) and
    a counter; 32 hex digits, like a UUID's hex form. ``uuid4`` reads the OS's random
    source on every call, which shows in a per-request profile. A forked child (a worker of
    ``hookgate serve --workers N``) draws new prefixes, so workers never repeat an id."""

    def __init__(self) -> None:
        self.after_fork()
        renew_after_fork(self)

    def after_fork(self) -> None:
        """A new prefix and counter (also how an instance starts)."""
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"
