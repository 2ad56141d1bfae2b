"""Which worker process this is, when the server runs several (``server.workers``).

The parent (:mod:`hookgate.server.arbiter`) makes one :class:`Worker` per process it
starts; the app keeps it (``WORKER``), and its absence means one process.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Literal


def worker_count(setting: int | Literal["auto"]) -> int:
    """How many workers ``server.workers`` (or ``--workers``) asks for: ``auto`` is the
    number of cores this process may run on."""
    if setting != "auto":
        return setting
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclasses.dataclass(frozen=True, slots=True)
class Worker:
    """One worker process of several, as the parent started it."""

    number: int
    """1 to :attr:`count`; a replacement keeps the number of the worker it replaces."""
    count: int
    run_dir: str
    """The parent's directory for this server: metric files and the workers' sockets."""
    parent: int
    """The parent's process id (a worker whose parent is gone stops)."""

    @property
    def leader(self) -> bool:
        """Whether this worker speaks for all where one voice is enough (reload log lines
        and the reload counter, audit retention): worker 1."""
        return self.number == 1

    @property
    def metrics_dir(self) -> str:
        """Where every worker's metric values are kept (prometheus-client's files)."""
        return os.path.join(self.run_dir, "metrics")

    def socket_path(self, number: int) -> str:
        """The Unix socket of worker ``number``'s :func:`~hookgate.server.peers.peer_app`."""
        return os.path.join(self.run_dir, f"worker-{number}.sock")

    def others(self) -> list[int]:
        return [n for n in range(1, self.count + 1) if n != self.number]
