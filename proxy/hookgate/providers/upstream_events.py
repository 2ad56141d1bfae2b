"""An upstream's event stream, read as whole SSE blocks, complete or an error.

:class:`UpstreamEvents` is the ``stream`` of every HTTP provider's streamed answer: the
blocks that completed in each network read, the provider's credentials masked in them,
ending at the protocol's terminal event, or at the one hookgate sends for a stream that
stopped after its finish reason (:mod:`hookgate.wire.stream_end`); malformed events in
its middle dropped and reported.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from hookgate.errors import UpstreamBadResponse, UpstreamError, UpstreamReset, UpstreamStatusError
from hookgate.pipeline.observe import Metric, Observation
from hookgate.providers.base import is_error_only
from hookgate.providers.scrub import Scrubber
from hookgate.providers.upstream_errors import as_upstream_errors
from hookgate.wire import sse
from hookgate.wire.stream_end import StreamEnd

log = logging.getLogger("hookgate")

MALFORMED_IN_A_ROW = 3
"""Malformed events in a row that fail a stream; fewer are dropped (see
:class:`UpstreamEvents`)."""

MALFORMED_EVENTS = Metric(
    "hookgate_upstream_malformed_events",
    "Malformed events dropped from the middle of upstream streams (not SSE, or data that "
    "is not a JSON object), by target",
    ("target",),
)
"""Counted for each event dropped; one that fails its stream is an attempt's error."""

AFTER_FINISH_S = 3.0
"""How long a stream past its finish reason may stay silent before hookgate ends it: what
may follow (the usage chunk, the terminal event) comes at once on every server we know,
so an upstream silent here will send no more of the answer."""

_BOM = b"\xef\xbb\xbf"


class UpstreamEvents:
    """The event blocks of one upstream stream; :meth:`aclose` always frees the connection.

    Ends at the protocol's terminal event (what follows it is not read). A stream that
    stops without it (a clean close, a reset, a read timeout, :data:`AFTER_FINISH_S` of
    silence) after its finish reason is complete: the terminal event hookgate sends takes
    its place (see :mod:`hookgate.wire.stream_end`). One that stops before its finish reason raises
    :class:`UpstreamReset`, so a cut stream never looks complete.

    When such a stream is a Chat Completions or Completions one whose call asked for the
    usage chunk and none came, ``count`` (given the answer's text) states the usage in one,
    sent before ``[DONE]``.

    Before its first event with data nothing has reached the client, so there an error
    event, or a malformed event (not SSE, or data that is not a JSON object), is a failed
    attempt (a fallback moves on). After it a malformed event is dropped and reported to
    ``observation`` (the :data:`MALFORMED_EVENTS` counter, an event for the call's span)
    and in a log line, never its content, and the stream goes on;
    :data:`MALFORMED_IN_A_ROW` of them in a row (comments between them neither count nor
    break the run) fail the stream with :class:`UpstreamBadResponse`. Closing early (the
    client went away) closes the upstream connection, which cancels the upstream's work.
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        label: str,
        api: str,
        scrub: Scrubber,
        observation: Observation,
        count: Callable[[str], Awaitable[Mapping[str, int]]] | None,
    ) -> None:
        self._response = response
        screen = _Screen(label, StreamEnd(api, usage=count is not None), scrub, observation)
        self._events = _events(response, label, screen, scrub, count)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._events

    async def aclose(self) -> None:
        await self._events.aclose()
        self._response.close()


class _Malformed(Exception):
    """A block no client can parse; its message says how (``whose data is not JSON``)."""


def _data(block: bytes) -> object:
    """The block's data as :func:`~hookgate.wire.sse.data_of` reads it, a JSON object or
    None; :class:`_Malformed` for a block that is not SSE or whose data is not JSON, or
    JSON that is not an object (every API's events are objects)."""
    if not sse.is_event(block):
        raise _Malformed("that is not SSE")
    try:
        data = sse.data_of(block)
    except ValueError:
        raise _Malformed("whose data is not JSON") from None
    if data is not None and not isinstance(data, dict):
        raise _Malformed("whose data is not a JSON object")
    return data


def _error_body(data: Mapping[str, Any]) -> bytes | None:
    """The OpenAI error body of an error event's data (``{"error": ...}``, or a Responses
    ``error`` event), else None."""
    if is_error_only(data):
        return orjson.dumps(data)
    if data.get("type") == "error":  # Responses: {"type": "error", "code", "message", ...}
        fields = ("message", "type", "param", "code")
        return orjson.dumps({"error": {k: data.get(k) for k in fields} | {"type": "error"}})
    return None


class _Screen:
    """Decides, block by block, what of a stream reaches the client (see
    :class:`UpstreamEvents`)."""

    __slots__ = ("end", "failure", "first", "label", "observation", "run", "scrub", "terminated")

    def __init__(
        self, label: str, end: StreamEnd, scrub: Scrubber, observation: Observation
    ) -> None:
        self.label = label
        self.end = end
        self.scrub = scrub
        self.observation = observation
        self.first = True
        """No event with data has been taken yet."""
        self.run = 0
        """Malformed events since the last good one."""
        self.terminated = False
        """The protocol's terminal event was taken."""
        self.failure: UpstreamError | None = None
        """Why the stream fails, once a block of the last read failed it: raised once
        what the read held before that block was relayed."""

    def take(self, blocks: list[bytes]) -> list[bytes]:
        """The blocks of one read the client gets, up to the terminal event or the
        block that fails the stream (:attr:`failure`)."""
        kept: list[bytes] = []
        for block in blocks:
            try:
                data = _data(block)
            except _Malformed as bad:
                try:
                    self._malformed(str(bad), len(block))
                except UpstreamError as exc:
                    self.failure = exc
                    break
                continue
            if isinstance(data, dict):
                if self.first and (error := _error_body(data)) is not None:
                    # nothing has reached the client: an error now is a failed attempt
                    # (a fallback moves on), not a stream that fails after a 200
                    body = self.scrub.body(error)
                    self.failure = UpstreamStatusError(502, body, {}, target=self.label)
                    break
                self.first = False
                self.run = 0
                self.end.saw(data)
            kept.append(block)
            if self.end.terminal(block):  # nothing after it is relayed, or waited for
                self.terminated = True
                break
        return kept

    def _malformed(self, how: str, size: int) -> None:
        label = self.label
        if self.first:  # nothing relayed yet: a failed attempt, as an error event is
            raise UpstreamBadResponse(f"{label} sent a first event {how}", target=label)
        self.run += 1
        if self.run >= MALFORMED_IN_A_ROW:
            raise UpstreamBadResponse(
                f"{label} sent {self.run} malformed events in a row (the last: an event {how})",
                target=label,
            )
        log.warning(
            "%s sent a stream event %s (%d bytes): dropped (%d in a row)",
            label, how, size, self.run,
        )  # fmt: skip
        observation = self.observation
        observation.count(MALFORMED_EVENTS, label)
        observation.event(
            "hookgate.upstream.malformed_event",
            {"hookgate.target": label, "hookgate.event.bytes": size,
             "hookgate.malformed.in_a_row": self.run},
        )  # fmt: skip


async def _read(response: aiohttp.ClientResponse, label: str) -> AsyncGenerator[bytes, None]:
    with as_upstream_errors(label):
        async for chunk in response.content.iter_any():
            yield chunk


async def _events(
    response: aiohttp.ClientResponse,
    label: str,
    screen: _Screen,
    scrub: Scrubber,
    count: Callable[[str], Awaitable[Mapping[str, int]]] | None,
) -> AsyncGenerator[bytes, None]:
    """The stream's event blocks, the provider's credentials masked in them (an upstream
    error event may quote the key, as its error bodies do)."""
    decoder = sse.SSEDecoder()
    chunks = _read(response, label)
    started = False
    try:
        while not screen.terminated:
            try:
                if screen.end.closing is None:
                    chunk = await anext(chunks)
                else:  # only the usage chunk and the terminal event may follow
                    async with asyncio.timeout(AFTER_FINISH_S):
                        chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except (UpstreamError, TimeoutError) as exc:
                if screen.end.closing is None:
                    raise
                why = exc.message if isinstance(exc, UpstreamError) else "silence"
                log.debug("%s: %s after its finish reason", label, why)
                break
            if not started:
                chunk, started = chunk.removeprefix(_BOM), True
            try:
                blocks = decoder.feed(chunk)
            except sse.EventTooLarge as exc:
                raise UpstreamBadResponse(f"{label}: {exc}", target=label) from None
            if blocks and (kept := screen.take(blocks)):
                yield scrub.body(kept[0] if len(kept) == 1 else b"".join(kept))
            if screen.failure is not None:
                raise screen.failure
        if not screen.terminated:
            end = screen.end
            closing = end.closing
            if closing is None:
                raise UpstreamReset(
                    f"{label} ended the stream before its final event", target=label
                )
            # a whole answer: not worth a line per stream at INFO (a slow server's every
            # stream ends so, and a log that floods is an outage of its own)
            log.debug("%s ended its stream after its finish reason; hookgate ended it", label)
            if count is not None and end.usage_missing:
                closing = end.usage_chunk(await count(end.text)) + closing
            yield closing
    finally:
        await chunks.aclose()
        if screen.terminated:
            response.release()
        else:
            response.close()
