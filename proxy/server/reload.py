"""Hot reload: watch the config file and swap in a new runtime when it changes.

A broken edit keeps the previous config serving and logs every problem; in-flight
requests finish on the runtime they started with (see :mod:`proxy.server.runtime`).
The file is polled (its mtime, size and inode), which works on every filesystem,
including bind mounts and ConfigMap symlink swaps where inotify misses changes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

import aiohttp

from proxy.config.loader import ConfigError, load_file
from proxy.server.runtime import RuntimeHolder, build_runtime

log = logging.getLogger("hookgate")

Stamp = tuple[int, int, int] | None


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ConfigWatcher:
    """Reloads ``path`` into ``holder`` whenever the file changes."""

    def __init__(
        self, path: str, holder: RuntimeHolder, session: Callable[[], aiohttp.ClientSession]
    ) -> None:
        self.path = path
        self.holder = holder
        self._session = session
        self._stamp = _stamp(path)
        self._lock = asyncio.Lock()

    async def run(self) -> None:
        """Poll forever at the current config's ``server.reload_interval_s``."""
        while True:
            await asyncio.sleep(self.holder.current.config.server.reload_interval_s)
            stamp = _stamp(self.path)
            if stamp != self._stamp and stamp is not None:
                self._stamp = stamp
                await self.reload()

    async def reload(self) -> bool:
        """Load the file now; swap it in if valid. Returns whether it was swapped in."""
        async with self._lock:
            try:
                loaded = await asyncio.to_thread(load_file, self.path)
                runtime = build_runtime(
                    loaded, self._session, generation=self.holder.current.generation + 1
                )
            except ConfigError as exc:
                log.error(
                    "config reload failed, keeping generation %d:\n%s",
                    self.holder.current.generation,
                    "\n".join(exc.lines),
                )
                return False
            self.holder.current = runtime
            log.info("config reloaded from %s (generation %d)", self.path, runtime.generation)
            return True
