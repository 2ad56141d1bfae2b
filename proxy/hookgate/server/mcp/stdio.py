"""MCP servers hookgate starts and supervises: one process per client session, over stdio.

A stdio MCP server serves one client: its stdin and stdout carry one session's messages,
one JSON object per line. So each client session (an ``initialize`` without
``Mcp-Session-Id``) gets its own process, started from the server's ``command`` with only
the configured ``env`` beside ``PATH``, and a new session id the client sends from then
on. The process is the session: when it exits (a crash, a kill), the session is gone,
and the client's next request gets 404, which tells an MCP client to start a new one.

Per session, requests wait for the response with their id; everything else the server
writes (notifications, its own requests) goes to the session's :class:`Outbox`, which the
session's ``GET`` streams read: each message is sent on one stream, as an event numbered
within the session, and a client that reconnects with ``Last-Event-ID`` is first replayed
what was sent after that event (the last :data:`REPLAY_EVENTS` are kept), as the
transport's resumability asks. Servers reached by ``url`` resume as they implement it,
since hookgate relays ``Last-Event-ID`` to them.
Its stderr is logged at debug level, never sent to a client. Sessions idle for
``idle_timeout_s`` are closed (checked every half minute, and when a session starts), and
at most ``max_sessions`` run per server (the least recently used one is closed to make
room); all are stopped when hookgate stops, and a server removed from the config has its
sessions closed. A request the process does not answer within the
server's ``timeout.read_s`` fails, and so does every request waiting when it exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from hookgate.config.schema import McpServerConfig

log = logging.getLogger("hookgate")

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest message a server may write (one line)."""
STOP_GRACE_S = 5.0
REPLAY_EVENTS = 1024
"""Messages an :class:`Outbox` keeps for replay; past that many undelivered ones, the
oldest are dropped (with a warning)."""


class Outbox:
    """A session's messages for its ``GET`` streams, numbered from 1.

    Any number of streams may read at once: each message is taken by exactly one
    (:meth:`stream` without ``after``). A stream that resumes after event ``n`` is first
    replayed the kept messages above ``n`` that the stream which took ``n`` took (a
    message another stream delivered is never sent twice), then takes new ones like the
    others. Single-threaded: asyncio only.
    """

    def __init__(self, keep: int = REPLAY_EVENTS) -> None:
        self._kept: deque[list[Any]] = deque(maxlen=keep)
        """``[number, message, taker]``: the stream that took it (0: none yet)."""
        self._last = 0  # the number of the newest message
        self._taken = 0  # every message up to this number has been taken by a stream
        self._streams = 0
        self._closed = False
        self._wake = asyncio.Event()

    def put(self, message: dict[str, Any]) -> None:
        self._last += 1
        self._kept.append([self._last, message, 0])
        self._notify()

    def close(self) -> None:
        """No more messages: the streams end once they have sent what they took."""
        self._closed = True
        self._notify()

    def _notify(self) -> None:
        self._wake.set()
        self._wake = asyncio.Event()

    async def stream(self, after: int | None = None) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """``(number, message)`` pairs until the outbox closes: the replay after event
        ``after`` if given, then each new message this stream is first to take."""
        self._streams += 1
        me = self._streams
        if after is not None:
            dropped = next((e[2] for e in self._kept if e[0] == after), None)
            for entry in [e for e in self._kept if e[0] > after and e[2] == dropped]:
                entry[2] = me
                yield entry[0], entry[1]
        while True:
            wake = self._wake
            if self._taken < self._last:
                first = self._last - len(self._kept) + 1
                if self._taken + 1 < first:
                    log.warning("MCP stream: %d undelivered messages were dropped",
                                first - self._taken - 1)  # fmt: skip
                    self._taken = first - 1
                self._taken += 1
                entry = self._kept[self._taken - first]
                entry[2] = me
                yield entry[0], entry[1]
            elif self._closed:
                return
            else:
                await wake.wait()


class SessionGone(Exception):
    """The session's process exited (or never started): the client must start anew."""


class RequestCancelled(Exception):
    """The client cancelled the request (``notifications/cancelled``): no answer will come."""


class StdioSession:
    """One client session: one server process."""

    def __init__(self, name: str, process: asyncio.subprocess.Process) -> None:
        self.id = secrets.token_hex(16)
        self.name = name
        self.process = process
        self.used = time.monotonic()
        self.outbox = Outbox()
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._tasks = (
            asyncio.create_task(self._read(), name=f"mcp-{name}-stdout"),
            asyncio.create_task(self._drain_stderr(), name=f"mcp-{name}-stderr"),
        )

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one message (a notification, or a response to the server's request). A
        ``notifications/cancelled`` also ends the wait for the request it names, which the
        server will not answer."""
        if message.get("method") == "notifications/cancelled":
            params = message.get("params")
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            waiting = self._waiting.get(cancelled) if _is_id(cancelled) else None
            if waiting is not None and not waiting.done():
                waiting.set_exception(RequestCancelled(f"request {cancelled!r} was cancelled"))
        exited = SessionGone(f"MCP server {self.name!r} (session {self.id}) has exited")
        if not self.alive or self.process.stdin is None:
            raise exited
        self.used = time.monotonic()
        try:
            self.process.stdin.write(orjson.dumps(message) + b"\n")
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise exited from None

    async def request(self, message: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a request and wait for its response; :class:`SessionGone` when the process
        exits first, :class:`TimeoutError` when it does not answer in time."""
        id = message.get("id")
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[id] = waiting
        try:
            await self.send(message)
            async with asyncio.timeout(timeout_s):
                return await waiting
        finally:
            self._waiting.pop(id, None)
            self.used = time.monotonic()

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                try:
                    self._route(line)
                except Exception:  # one bad line must not stop the session's reader
                    log.exception("MCP server %r: a line it wrote was dropped", self.name)
        except (ValueError, OSError) as exc:  # a line over the limit, a broken pipe
            log.warning(
                "MCP server %r: reading its output failed (%s); stopping it", self.name, exc
            )
            self.process.kill()  # the session cannot go on without its output
        finally:
            try:
                await self.process.wait()
            finally:  # also when close() cancels this task while it waits
                self._end()

    def _route(self, line: bytes) -> None:
        """A response to the request waiting for it; the server's own requests and
        notifications to the outbox; anything else (a late answer, a line that is not a
        message) is dropped, since the ``GET`` stream must not carry responses."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            log.warning("MCP server %r wrote a line that is not JSON", self.name)
            return
        if not isinstance(message, dict):
            return
        if "method" in message:
            self.outbox.put(message)
            return
        id = message.get("id")
        waiting = self._waiting.get(id) if _is_id(id) else None
        if waiting is not None and not waiting.done():
            waiting.set_result(message)
        else:
            log.debug("MCP server %r: an answer nobody waits for was dropped", self.name)

    def _end(self) -> None:
        """The process is gone: every waiting request fails, the GET streams end."""
        status = self.process.returncode
        gone = SessionGone(
            f"MCP server {self.name!r} exited"
            + (f" (status {status})" if status is not None else "")
        )
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(gone)
        self.outbox.close()

    async def _drain_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while line := await stderr.readline():
            log.debug("MCP server %r: %s", self.name, line.decode("utf-8", "replace").rstrip())

    async def close(self) -> None:
        """Stop the process: stdin closed, then SIGTERM, then SIGKILL."""
        if self.alive:
            if self.process.stdin is not None:
                self.process.stdin.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_GRACE_S / 2):
                    await self.process.wait()
        if self.alive:
            self.process.terminate()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_GRACE_S):
                    await self.process.wait()
        if self.alive:
            self.process.kill()
            await self.process.wait()
        self._end()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class StdioSessions:
    """Every stdio session of the app, by id."""

    def __init__(self) -> None:
        self._sessions: dict[str, StdioSession] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    def starting(self, name: str) -> asyncio.Lock:
        """The lock new sessions of server ``name`` take turns on, held from
        :meth:`start` until the session has initialized: concurrent starts can then
        neither all see room (and exceed ``max_sessions``) nor close a session whose
        client is still waiting for its ``initialize`` answer."""
        return self._starting.setdefault(name, asyncio.Lock())

    async def start(self, name: str, server: McpServerConfig) -> StdioSession:
        """A new session of server ``name``: its process started (call it holding
        :meth:`starting`)."""
        evicted = self._make_room(name, server)
        await asyncio.gather(*(s.close() for s in evicted))
        return await self._spawn(name, server)

    async def _spawn(self, name: str, server: McpServerConfig) -> StdioSession:
        assert server.command is not None
        env = {"PATH": os.environ.get("PATH", ""), **server.env}
        try:
            process = await asyncio.create_subprocess_exec(
                *server.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, cwd=server.cwd, limit=MAX_LINE_BYTES,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise SessionGone(f"MCP server {name!r} could not be started: {exc}") from None
        session = StdioSession(name, process)
        self._sessions[session.id] = session
        log.info("MCP server %r: session %s started (pid %d)", name, session.id, process.pid)
        return session

    def get(self, name: str, session_id: str) -> StdioSession | None:
        """The live session ``session_id`` of server ``name``, if any."""
        session = self._sessions.get(session_id)
        if session is None or session.name != name:
            return None
        if not session.alive:
            del self._sessions[session_id]
            return None
        session.used = time.monotonic()
        return session

    async def end(self, session: StdioSession) -> None:
        """Close a session (the client's DELETE)."""
        self._sessions.pop(session.id, None)
        await session.close()

    async def reap(self, servers: Mapping[str, McpServerConfig]) -> None:
        """Close the sessions idle past their server's ``idle_timeout_s``, exited, or of a
        server no longer configured."""
        now = time.monotonic()
        stale = [
            s for s in self._sessions.values()
            if not s.alive or s.name not in servers
            or now - s.used > servers[s.name].idle_timeout_s
        ]  # fmt: skip
        await asyncio.gather(*(self.end(s) for s in stale))

    def _make_room(self, name: str, server: McpServerConfig) -> list[StdioSession]:
        """Take out the sessions of ``name`` to close for a new one (idle, exited, and the
        least recently used past ``max_sessions``); the caller closes them."""
        now = time.monotonic()
        mine = [s for s in self._sessions.values() if s.name == name]
        stale = [s for s in mine if not s.alive or now - s.used > server.idle_timeout_s]
        if len(mine) - len(stale) >= server.max_sessions:
            stale.append(min((s for s in mine if s not in stale), key=lambda s: s.used))
        for session in stale:
            self._sessions.pop(session.id, None)
        return stale

    async def close(self) -> None:
        """Stop every process (the app is shutting down)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(s.close() for s in sessions))


def _is_id(value: Any) -> bool:
    """A JSON-RPC id one can look up: a string or a number (not a bool, list or object)."""
    return isinstance(value, str | int) and not isinstance(value, bool)
