"""Hot reload: watch the config file and swap in a new runtime when it changes.

A broken edit keeps the previous config serving and logs every problem; in-flight
requests finish on the runtime they started with (see :mod:`hookgate.server.runtime`).
The file is polled (its mtime, size and inode), which works on every filesystem,
including bind mounts and ConfigMap symlink swaps where inotify misses changes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from hookgate.config.loader import ConfigError, LoadedConfig, load_file
from hookgate.server.runtime import Runtime, RuntimeHolder

log = logging.getLogger("hookgate")

Stamp = tuple[int, int, int] | None


def stamp(path: str) -> Stamp:
    """What tells an edit of ``path`` (None: it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ConfigWatcher:
    """Reloads ``path`` into ``holder`` whenever the file changes.

    ``on_result`` is told the new runtime after a swap, or None after a failed reload.
    ``speaks`` false logs each reload at DEBUG only: with several workers, all reload
    the same file and worker 1 speaks for them.
    """

    def __init__(
        self,
        path: str,
        holder: RuntimeHolder,
        build: Callable[[LoadedConfig, int], Runtime],
        on_result: Callable[[Runtime | None], None] = lambda runtime: None,
        *,
        speaks: bool = True,
    ) -> None:
        self.path = path
        self._info = logging.INFO if speaks else logging.DEBUG
        self._error = logging.ERROR if speaks else logging.DEBUG
        self._on_result = on_result
        self.holder = holder
        self._build = build
        self._stamp = stamp(path)
        self._lock = asyncio.Lock()
        self._retiring: set[asyncio.Task[None]] = set()
        self.failure: str | None = None
        """Why the last reload failed (None: it succeeded, or none was tried): the
        admin UI's overview shows it."""

    async def run(self) -> None:
        """Poll forever at the current config's ``server.reload_interval_s``."""
        while True:
            await asyncio.sleep(self.holder.current.config.server.reload_interval_s)
            now = stamp(self.path)
            if now != self._stamp and now is not None:
                self._stamp = now
                await self.reload()

    async def _retire(self, runtime: Runtime) -> None:
        """Close an old generation's policies once its requests have had time to finish."""
        try:
            await asyncio.sleep(runtime.config.server.shutdown_timeout_s)
        finally:
            await runtime.aclose()
            task = asyncio.current_task()
            if task is not None:
                self._retiring.discard(task)

    async def close(self) -> None:
        """Retire pending old generations now (at shutdown)."""
        for task in list(self._retiring):
            task.cancel()
        await asyncio.gather(*self._retiring, return_exceptions=True)

    async def reload(self) -> bool:
        """Load the file now; swap it in if valid. Returns whether it was swapped in."""
        async with self._lock:
            try:
                loaded = await asyncio.to_thread(load_file, self.path)
                runtime = self._build(loaded, self.holder.current.generation + 1)
            except Exception as exc:  # whatever a new config breaks, the old one serves on
                lines = (
                    exc.lines if isinstance(exc, ConfigError) else [f"{type(exc).__name__}: {exc}"]
                )
                log.log(
                    self._error,
                    "config reload failed, keeping generation %d:\n%s",
                    self.holder.current.generation,
                    "\n".join(lines),
                )
                self.failure = (
                    f"config reload failed, keeping generation {self.holder.current.generation}: "
                    + "; ".join(lines)
                )
                self._on_result(None)
                return False
            retired, self.holder.current = self.holder.current, runtime
            self.failure = None
            self._on_result(runtime)
            self._retiring.add(asyncio.create_task(self._retire(retired)))
            log.log(
                self._info, "config reloaded from %s (generation %d)", self.path, runtime.generation
            )
            return True
