"""Synchronous framework code calling the gate's async policies.

A framework's synchronous entry point (LangChain's ``agent.invoke``/``stream``, a sync
tool) calls hooks from a thread that runs no event loop, and the policies are async. The
gate therefore keeps one event loop of its own, on a daemon thread started on first use
(:class:`LoopThread`), and runs policy coroutines there.

A hook that wraps framework code (a tool, a model call) must run that code in the
framework's own thread — its context variables (LangGraph's config, callbacks, tracing)
live there. :meth:`LoopThread.wrap` runs an onion on the loop while its terminal handler,
the framework's function, runs in the calling thread: the loop hands the terminal's input
over, the caller runs it and hands the result back, until the onion is done.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
X = TypeVar("X")
Y = TypeVar("Y")

_DONE = object()


class LoopThread:
    """An event loop on a daemon thread, started on first use; see the module docstring."""

    def __init__(self, name: str = "hookgate-sdk") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (started now if it is not running yet)."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=_serve, args=(loop,), name=self._name, daemon=True
                )
                self._thread.start()
                self._loop = loop
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def wrap(
        self,
        onion: Callable[[Callable[[X], Awaitable[Y]]], Coroutine[Any, Any, T]],
        terminal: Callable[[X], Y],
    ) -> T:
        """Run ``onion(inner)`` on the loop, where each ``await inner(x)`` runs
        ``terminal(x)`` in the calling thread; returns the onion's result. An exception
        of ``terminal`` is raised inside the onion at its ``await``."""
        handoff: queue.SimpleQueue[Any] = queue.SimpleQueue()
        loop = self.loop

        async def inner(value: X) -> Y:
            answer: asyncio.Future[Y] = loop.create_future()
            handoff.put((value, answer))
            return await answer

        future = asyncio.run_coroutine_threadsafe(onion(inner), loop)
        future.add_done_callback(lambda _: handoff.put(_DONE))
        while (item := handoff.get()) is not _DONE:
            value, answer = item
            try:
                result = terminal(value)
            except BaseException as exc:  # handed back: the onion decides what it means
                loop.call_soon_threadsafe(_settle, answer, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, answer, result, None)
        return future.result()

    def close(self) -> None:
        """Stop and close the loop (a later use starts a new one). Not from the loop."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


def _settle(answer: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)
