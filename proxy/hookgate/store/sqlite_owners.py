"""Which processes keep the budgets of a SQLite store: file locks the OS drops at death.

Budgets on one SQLite file are kept either by one process in its memory (*exclusive*, the
default: :class:`~hookgate.budgets.ledger.MemoryLedger`) or by every process that shares
the file in the file itself (*shared*: :mod:`hookgate.store.sqlite_budgets`). Mixing the
two would overspend, so the first use of a budget or rate limit takes a lock on
``<db>-owners/budgets.lock``: exclusive mode an exclusive ``flock``, shared mode a shared
one; a process whose mode conflicts is refused with :class:`~hookgate.errors.StoreInUse`
(503) naming the holder, on every budgeted request (whatever a budget's ``on_error``
says: it would spend the budget twice), until the other process stops.

In shared mode each process also holds an exclusive lock on a file of its own,
``<db>-owners/<owner>.owner``, for its life. Its reservations carry that owner id; another
process that cannot take an owner's lock knows it is alive, and one that can knows it is
gone — killed with ``kill -9`` included: the kernel releases the locks of a dead process at
once, and a process id that the system reuses does not inherit them. So a crashed process's
reservations are released the first time they stand in someone's way, never by a timeout
that could also free those of a live process stuck in a slow call.

The locks are ``flock`` locks: a file on a local disk (SQLite needs one anyway), POSIX only.
A process that forks after its first budgeted request shares its locks with the child: take
them after the fork (the serve command's workers each claim their own on first use).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from pathlib import Path
from typing import Literal

from hookgate.errors import StoreInUse, StoreUnavailable

Mode = Literal["exclusive", "shared"]


class Owners:
    """This process's claim on the budgets of the SQLite file at ``db`` (see the module
    docstring)."""

    def __init__(self, db: Path, display: str) -> None:
        self.directory = db.with_name(db.name + "-owners")
        self._display = display
        self.mode: Mode | None = None
        self.me = ""
        """This process's owner id in shared mode (``<pid>-<random>``)."""
        self._fds: list[int] = []

    def take(self, mode: Mode) -> bool:
        """Claim the budgets in ``mode``; True when this call claimed them (False: already
        claimed). Raises :class:`StoreInUse` when a process holds them in the other mode, or
        this one does; :class:`StoreUnavailable` when the lock file cannot be made."""
        if self.mode == mode:
            return False
        if self.mode is not None:
            raise StoreInUse(f"store {self._display}: budgets already kept {self.mode}")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.directory / "budgets.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreUnavailable(f"store {self._display}: {exc}") from exc
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if mode == "shared" else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StoreInUse(self._refusal(mode, holder)) from None
        if mode == "exclusive":
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        else:
            self.me = f"{os.getpid()}-{secrets.token_hex(6)}"
            own = os.open(self._owner_file(self.me), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(own, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: always free
            self._fds.append(own)
        self._fds.append(fd)
        self.mode = mode
        return True

    def _refusal(self, mode: Mode, holder: str) -> str:
        sharers = sorted(p.stem.partition("-")[0] for p in self.directory.glob("*.owner"))
        if mode == "shared":
            who = f"process {holder}" if holder else "another process"
            return (
                f"store {self._display}: its budgets are kept in the memory of {who} (a "
                "`hookgate serve` without ?shared=true); stop it, or start every process "
                "that shares the file with the store URL ending in ?shared=true"
            )
        who = (
            f"processes {', '.join(sharers)}"
            if sharers
            else f"process {holder}"
            if holder
            else "another process"
        )
        return (
            f"store {self._display}: its budgets are in use by {who}. One SQLite file serves "
            "one `hookgate serve` (with any number of --workers); to share it between "
            "separate processes end every one's store URL with ?shared=true, or use Redis"
        )

    def alive(self, owner: str) -> bool:
        """Whether the process of shared-mode ``owner`` still runs (a dead one's file goes)."""
        if owner == self.me:
            return True
        path = self._owner_file(owner)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        else:
            path.unlink(missing_ok=True)
            return False
        finally:
            os.close(fd)

    def forget_dead(self) -> None:
        """Remove the owner files of shared-mode processes that no longer run."""
        for path in self.directory.glob("*.owner"):
            self.alive(path.stem)

    def forget_all(self) -> None:
        """Remove the owner files left by dead shared-mode processes (exclusive mode only:
        none can be alive)."""
        for path in self.directory.glob("*.owner"):
            path.unlink(missing_ok=True)

    def release(self) -> None:
        """Drop the claim (the store is closing)."""
        if self.me:
            self._owner_file(self.me).unlink(missing_ok=True)
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        self.mode = None
        self.me = ""

    def _owner_file(self, owner: str) -> Path:
        return self.directory / f"{owner}.owner"
