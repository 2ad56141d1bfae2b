"""Relay a streamed model response to the client as its events arrive.

Each upstream event block is written as soon as it is complete; nothing is buffered
beyond one block. Without a stream transform the bytes pass through untouched. A
failure after the first byte ends the stream with an ``error`` event carrying an
OpenAI error object, which the ``openai`` SDK raises as ``APIError``; a stream is never
cut short so that it looks complete. When the client goes away the upstream stream is
closed, which closes its connection and stops the upstream's work.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aiohttp import web

from proxy.errors import UpstreamError
from proxy.pipeline.hooks import StreamTransform
from proxy.pipeline.types import EventStream
from proxy.wire import sse
from proxy.wire.stream_rewrite import rewriter_for

log = logging.getLogger("hookgate")

_STREAM_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}


async def relay_stream(
    request: web.Request,
    status: int,
    headers: Mapping[str, str],
    stream: EventStream,
    *,
    api: str,
    transform: StreamTransform | None,
) -> web.StreamResponse:
    """Write ``stream`` to the client; always closes ``stream``."""
    out = web.StreamResponse(status=status, headers={**headers, **_STREAM_HEADERS})
    rewriter = rewriter_for(api, transform) if transform is not None else None
    try:
        await out.prepare(request)
        try:
            async for events in stream:
                if rewriter is not None:
                    events = b"".join(
                        rewritten
                        for block in sse.split(events)
                        for rewritten in rewriter.feed(block)
                    )
                await out.write(events)
        except UpstreamError as exc:
            log.warning("stream from %s failed after its first byte: %s", exc.target, exc.message)
            await out.write(sse.encode(exc.to_body(), event="error"))
        await out.write_eof()
    except ConnectionResetError:
        log.info("client went away mid-stream; upstream stream closed")
    finally:
        await stream.aclose()
    return out
