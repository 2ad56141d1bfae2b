"""An upstream's event stream, read as whole SSE blocks, complete or an error.

:class:`UpstreamEvents` is the ``stream`` of every HTTP provider's streamed answer: the
blocks that completed in each network read, the provider's credentials masked in them,
ending at the protocol's terminal event.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable

import aiohttp
import orjson

from hookgate.errors import UpstreamBadResponse, UpstreamReset, UpstreamStatusError
from hookgate.providers.base import is_error_only
from hookgate.providers.scrub import Scrubber
from hookgate.providers.upstream_errors import as_upstream_errors
from hookgate.wire import sse


class UpstreamEvents:
    """The event blocks of one upstream stream; :meth:`aclose` always frees the connection.

    Ends at the protocol's terminal event (what follows it is not read): a stream that
    stops before it raises :class:`UpstreamReset`, so a cut stream never looks complete.
    An error event first, or a first event whose data is not JSON, is a failed attempt
    (nothing has reached the client, so a fallback moves on). Closing early (the client
    went away) closes the upstream connection, which cancels the upstream's work.
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        label: str,
        terminal: Callable[[bytes], bool],
        scrub: Scrubber,
    ) -> None:
        self._response = response
        self._events = _events(response, label, terminal, scrub)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._events

    async def aclose(self) -> None:
        await self._events.aclose()
        self._response.close()


def _error_event(block: bytes) -> bytes | None:
    """The OpenAI error body of an error event (``data: {"error": ...}``, or a Responses
    ``error`` event), else None."""
    if b"error" not in block:
        return None
    data = sse.json_of(block)
    if not isinstance(data, dict):
        return None
    if is_error_only(data):
        return orjson.dumps(data)
    if data.get("type") == "error":  # Responses: {"type": "error", "code", "message", ...}
        fields = ("message", "type", "param", "code")
        return orjson.dumps({"error": {k: data.get(k) for k in fields} | {"type": "error"}})
    return None


async def _events(
    response: aiohttp.ClientResponse,
    label: str,
    terminal: Callable[[bytes], bool],
    scrub: Scrubber,
) -> AsyncGenerator[bytes, None]:
    """The stream's event blocks, the provider's credentials masked in them (an upstream
    error event may quote the key, as its error bodies do)."""
    decoder = sse.SSEDecoder()
    finished = False
    first = True
    try:
        with as_upstream_errors(label):
            async for chunk in response.content.iter_any():
                try:
                    blocks = decoder.feed(chunk.removeprefix(b"\xef\xbb\xbf") if first else chunk)
                except sse.EventTooLarge as exc:
                    raise UpstreamBadResponse(f"{label}: {exc}", target=label) from None
                if not blocks:
                    continue
                if not all(sse.is_event(block) for block in blocks):
                    raise UpstreamBadResponse(f"{label} sent bytes that are not SSE", target=label)
                if first and (error := _error_event(blocks[0])) is not None:
                    # nothing has reached the client: an error now is a failed attempt
                    # (a fallback moves on), not a stream that fails after a 200
                    raise UpstreamStatusError(502, scrub.body(error), {}, target=label)
                bad = next((i for i, b in enumerate(blocks) if not sse.data_is_json(b)), None)
                if bad == 0 and first:  # nothing relayed yet: a failed attempt, as above
                    raise UpstreamBadResponse(
                        f"{label} sent a first event whose data is not JSON", target=label
                    )
                first = False
                if bad is not None:
                    blocks = blocks[:bad]
                for index, block in enumerate(blocks):
                    if terminal(block):  # nothing after it is relayed, or waited for
                        finished, blocks = True, blocks[: index + 1]
                        break
                if blocks:
                    yield scrub.body(blocks[0] if len(blocks) == 1 else b"".join(blocks))
                if finished:
                    break
                if bad is not None:  # the client gets the SSE error event instead
                    raise UpstreamBadResponse(
                        f"{label} sent an event whose data is not JSON", target=label
                    )
        if not finished:
            raise UpstreamReset(f"{label} ended the stream before its final event", target=label)
    finally:
        if finished:
            response.release()
        else:
            response.close()
