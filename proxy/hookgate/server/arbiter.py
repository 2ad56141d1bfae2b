"""The parent of several worker processes (``server.workers`` above 1): a pre-forking
arbiter, as gunicorn's.

The parent binds the listening sockets (the main listener and ``server.ops``), then
forks the workers, which inherit them and each accept on them with an event loop, a
runtime, a store connection and a span-export worker of their own. The parent serves
nothing: it starts workers, replaces one that dies (logging which, and its exit status
or signal), forwards ``SIGHUP`` to every worker and is the one watcher of the config
file, and on ``SIGTERM``/``SIGINT`` tells every worker to drain (``server.shutdown_timeout_s``)
and exits 0 when they have.

Why one socket shared by forked workers rather than ``SO_REUSEPORT`` (a socket per
worker, the kernel spreading connections): a connection waiting in a worker's own
accept queue when it dies is reset, a shared queue loses nothing; ``port: 0`` needs the
port chosen once; it works alike on every Unix; and it is what gunicorn and uvicorn do.

A worker that dies within :data:`QUICK_DEATH_S` of its start counts as a quick death:
its next start waits 1 s, then 2, 4, ... up to :data:`MAX_RESTART_DELAY_S`, so a worker
that cannot start does not spin. A worker that dies before the server first served (the
initial start) stops the server with status 1: the config or the environment is wrong,
and no retry will fix it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import select
import shutil
import signal
import socket
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hookgate.config.loader import ConfigError, LoadedConfig, load_text
from hookgate.server import exposure
from hookgate.server.reload import Stamp, stamp
from hookgate.server.workers import Worker
from hookgate.telemetry.metrics import worker_died

log = logging.getLogger("hookgate")

QUICK_DEATH_S = 10.0
"""A worker that dies sooner after its start counts toward the restart back-off."""
MAX_RESTART_DELAY_S = 30.0
STOP_GRACE_S = 5.0
"""How long past ``shutdown_timeout_s`` a worker may take to exit before it is killed."""
HANDLED = {signal.SIGHUP, signal.SIGTERM, signal.SIGINT}
"""The signals a worker handles on its event loop. They are blocked in a new worker
until its handlers are in place (:func:`release_signals`), so none is lost or kills it
while it starts."""
_READY = struct.Struct("!HI")
"""What a worker writes to the parent when it serves: its number and pid."""

Work = Callable[[Worker, str, str, list[socket.socket], list[socket.socket], int], None]
"""A worker's whole life, run in the forked child: given its :class:`Worker`, the config's
text and file name (the worker loads it: its policies are its own), the main and the ops
listeners' sockets, and the fd it writes to once serving (:func:`tell_ready`)."""


def read_config(source: str, host: str) -> tuple[str, LoadedConfig]:
    """The config file's text and what it says, checked as ``hookgate serve`` checks it
    (raises :class:`ConfigError`), its policies closed at once: the parent only reads the
    settings, and a policy may hold a thread (the tracing exporter's), which must not be
    running when the parent forks."""
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [f"{source}: cannot read: {exc}"]) from None
    loaded = load_text(text, source)
    release(loaded)
    problem = exposure.refusal(loaded.config, host)
    if problem is not None:
        raise ConfigError(source, [loaded.problem(("server", "host"), problem)])
    return text, loaded


def release(loaded: LoadedConfig) -> None:
    """Close the policies made when ``loaded`` was read (outside any event loop)."""

    async def close() -> None:
        for policy in loaded.all_policies:
            await policy.aclose()

    asyncio.run(close())


def release_signals() -> None:
    """Unblock :data:`HANDLED` in a worker, once its event loop handles them."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


def tell_ready(fd: int, worker: Worker) -> None:
    """Tell the parent this worker serves (one write, atomic on a pipe)."""
    os.write(fd, _READY.pack(worker.number, os.getpid()))


def listen(host: str, port: int) -> list[socket.socket]:
    """Bind and listen on ``host``:``port`` as aiohttp's ``TCPSite`` would (every address
    ``host`` resolves to; port 0 picks one free port for all of them)."""
    sockets: list[socket.socket] = []
    seen = set()
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            if (family, address[0]) in seen:
                continue
            seen.add((family, address[0]))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


BACKLOG = 1024
"""The listening sockets' accept queue, shared by every worker."""


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@dataclass(slots=True)
class _Slot:
    number: int
    pid: int | None = None
    started: float = 0.0
    serving: bool = False
    quick_deaths: int = 0
    start_at: float = 0.0


class Arbiter:
    """Runs ``count`` workers of ``work`` on the listeners of ``loaded`` (see the module
    docstring); :meth:`run` returns the exit status."""

    def __init__(
        self,
        text: str,
        loaded: LoadedConfig,
        host: str,
        count: int,
        work: Work,
        main: list[socket.socket],
        ops: list[socket.socket],
        on_serving: Callable[[], None],
    ) -> None:
        """``text`` is the config file's, ``loaded`` what it says with its policies
        released (:func:`read_config`); ``on_serving`` is called once, when every worker
        first serves."""
        self._text = text
        """The last valid config read: what a new worker starts with."""
        self.loaded = loaded
        self._host = host
        self._work = work
        self._main, self._ops = main, ops
        self._on_serving = on_serving
        self._slots = [_Slot(n) for n in range(1, count + 1)]
        self._run_dir = tempfile.mkdtemp(prefix="hookgate-")
        os.mkdir(os.path.join(self._run_dir, "metrics"))
        self._signals: list[int] = []
        self._served = False
        self._stamp: Stamp = stamp(loaded.source)
        self._next_poll = time.monotonic()

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        ready_r, self._ready_w = os.pipe()
        self._parent_fds = (wake_r, wake_w, ready_r)
        for fd in self._parent_fds:
            os.set_blocking(fd, False)
        old_wakeup = signal.set_wakeup_fd(wake_w)
        for signum in (*HANDLED, signal.SIGCHLD):
            signal.signal(signum, self._note)
        try:
            status = self._supervise(wake_r, ready_r)
        except BaseException:
            self._signal_all(signal.SIGKILL)  # no worker outlives a broken parent
            raise
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for fd in (wake_r, wake_w, ready_r, self._ready_w):
                os.close(fd)
            shutil.rmtree(self._run_dir, ignore_errors=True)
        return status

    def _note(self, signum: int, frame: object) -> None:
        self._signals.append(signum)

    def _supervise(self, wake_r: int, ready_r: int) -> int:
        for slot in self._slots:
            self._start(slot)
        while True:
            timeout = max(0.0, min([self._next_poll, *self._due()]) - time.monotonic())
            readable = _select([wake_r, ready_r], timeout)
            if wake_r in readable:
                _drain(wake_r)
            if ready_r in readable:
                self._read_ready(ready_r)
            signals, self._signals = self._signals, []
            if signal.SIGTERM in signals or signal.SIGINT in signals:
                return self._stop(0, wake_r)
            failed = self._reap()
            if failed is not None:
                log.error("%s before the server served: stopping", failed)
                return self._stop(1, wake_r)
            if signal.SIGHUP in signals:
                self._reload()
            elif time.monotonic() >= self._next_poll:
                self._poll()
            now = time.monotonic()
            for slot in self._slots:
                if slot.pid is None and slot.start_at <= now:
                    self._start(slot)

    def _due(self) -> list[float]:
        return [s.start_at for s in self._slots if s.pid is None]

    def _start(self, slot: _Slot) -> None:
        worker = Worker(slot.number, len(self._slots), self._run_dir, os.getpid())
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                self._become_worker()
                self._work(worker, self._text, self.loaded.source, self._main, self._ops,
                           self._ready_w)  # fmt: skip
                status = 0
            except BaseException:
                log.exception("worker %d failed", worker.number)
            finally:
                logging.shutdown()
                os._exit(status)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        slot.pid, slot.started, slot.serving = pid, time.monotonic(), False
        log.debug("worker %d started (pid %d)", slot.number, pid)

    def _become_worker(self) -> None:
        """In a new worker: the parent's signal handling undone (its handled signals stay
        blocked until its loop takes them: :func:`release_signals`)."""
        signal.set_wakeup_fd(-1)
        for signum in (*HANDLED, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        for fd in self._parent_fds:
            os.close(fd)

    def _read_ready(self, fd: int) -> None:
        data = _drain(fd)
        for offset in range(0, len(data) - len(data) % _READY.size, _READY.size):
            number, pid = _READY.unpack_from(data, offset)
            slot = self._slots[number - 1]
            if slot.pid != pid:
                continue
            slot.serving = True
            if self._served:
                log.info("worker %d (pid %d) serves again", number, pid)
        if not self._served and all(s.serving for s in self._slots):
            self._served = True
            self._on_serving()

    def _reap(self) -> str | None:
        """Collect exited workers and schedule their replacements. Returns why the
        server must stop (a worker died before the server first served), else None."""
        for pid, status in _exited():
            slot = next((s for s in self._slots if s.pid == pid), None)
            if slot is None:
                continue
            worker_died(os.path.join(self._run_dir, "metrics"), pid)
            how = _how(status)
            if not self._served:
                slot.pid = None
                return f"worker {slot.number} (pid {pid}) {how}"
            lived = time.monotonic() - slot.started
            slot.quick_deaths = slot.quick_deaths + 1 if lived < QUICK_DEATH_S else 0
            delay = (
                0.0
                if slot.quick_deaths <= 1
                else min(MAX_RESTART_DELAY_S, 2.0 ** (slot.quick_deaths - 2))
            )
            slot.pid, slot.serving, slot.start_at = None, False, time.monotonic() + delay
            if delay:
                log.error(
                    "worker %d (pid %d) %s, its %d%s death within %gs of starting: "
                    "starting a new one in %gs",
                    slot.number, pid, how, slot.quick_deaths, _nth(slot.quick_deaths),
                    QUICK_DEATH_S, delay,
                )  # fmt: skip
            else:
                log.error("worker %d (pid %d) %s: starting a new one", slot.number, pid, how)
        return None

    def _poll(self) -> None:
        """Check the config file (``server.reload``); an edit is a reload."""
        server = self.loaded.config.server
        self._next_poll = time.monotonic() + server.reload_interval_s
        if not server.reload or self.loaded.source == "<string>":
            return
        now = stamp(self.loaded.source)
        if now != self._stamp and now is not None:
            self._stamp = now
            self._reload()

    def _reload(self) -> None:
        """Read the file (a valid one is what later workers start with) and tell every
        worker to reload it (each reports its own result; worker 1 logs it)."""
        with contextlib.suppress(ConfigError):  # the workers log why
            self._text, self.loaded = read_config(self.loaded.source, self._host)
        self._stamp = stamp(self.loaded.source)
        self._next_poll = time.monotonic() + self.loaded.config.server.reload_interval_s
        self._signal_all(signal.SIGHUP)

    def _signal_all(self, signum: int) -> None:
        for slot in self._slots:
            if slot.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signum)

    def _stop(self, status: int, wake_r: int) -> int:
        """Tell every worker to drain and stop; kill those still running after
        ``shutdown_timeout_s`` and :data:`STOP_GRACE_S`."""
        for sock in (*self._main, *self._ops):
            sock.close()  # the workers hold their own copies
        self._signal_all(signal.SIGTERM)
        grace = self.loaded.config.server.shutdown_timeout_s + STOP_GRACE_S
        deadline = time.monotonic() + grace
        killed = False
        while any(s.pid is not None for s in self._slots):
            if not killed and time.monotonic() >= deadline:
                for slot in self._slots:
                    if slot.pid is not None:
                        log.error("worker %d (pid %d) did not stop: killed", slot.number, slot.pid)
                self._signal_all(signal.SIGKILL)
                killed = True
            _select([wake_r], 0.2)
            _drain(wake_r)
            for pid, _ in _exited():
                for slot in self._slots:
                    if slot.pid == pid:
                        slot.pid = None
        return status


def _exited() -> list[tuple[int, int]]:
    """The children that exited since last asked: (pid, wait status) each."""
    found = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        found.append((pid, status))
    return found


def _select(fds: list[int], timeout: float) -> list[int]:
    try:
        readable, _, _ = select.select(fds, [], [], timeout)
    except OSError as exc:  # pragma: no cover - EINTR is retried by Python itself
        if exc.errno != errno.EINTR:
            raise
        return []
    return readable


def _drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _nth(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
