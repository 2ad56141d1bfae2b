"""Relay a streamed model response to the client as its events arrive.

The stream is the observed one of :class:`~hookgate.pipeline.runner.ObservedCall`: the
response policies' transform is already applied, the usage chunk a client did not ask for
already removed, and its timing, facts and end are the runner's. Events are written as
soon as they have arrived whole; nothing is buffered beyond one upstream read. A failure
after the first byte ends the stream with an ``error`` event carrying an OpenAI error
object, which the ``openai`` SDK raises as ``APIError``; a stream is never cut short so
that it looks complete (on the Messages route the event carries an Anthropic error,
which the ``anthropic`` SDK raises as ``APIStatusError``; on the Gemini API's, a
``data:`` block carrying a Google error, as Gemini sends one). A stream the route
translates for its client (the Gemini API's) goes through its ``translator`` block by
block on the way out. A policy's stream transform
that refuses (``pii`` finding a blocked entity in the model's own text) ends it the same
way, after the text it released and before the text it held.
When the client goes away the stream is closed, which closes the upstream's connection
and stops the upstream's work.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import aiohttp
from aiohttp import web

from hookgate.errors import HookgateError, UpstreamError
from hookgate.pipeline.runner import ObservedStream
from hookgate.providers.translating import StreamTranslator
from hookgate.wire import sse

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
    stream: ObservedStream,
    *,
    api: str,
    translator: StreamTranslator | None = None,
) -> web.StreamResponse:
    """Write ``stream`` to the client, each block through ``translator`` when there is
    one; always closes ``stream``."""
    out = web.StreamResponse(status=status, headers={**headers, **_STREAM_HEADERS})
    if request.version < aiohttp.HttpVersion11:
        out.force_close()  # HTTP/1.0 has no chunking: the end of the stream is the close
    try:
        # Start the stream before answering: every wrapper around it is then running (its
        # clean-up runs on aclose), and a failure before the first event is still an HTTP
        # error status rather than a stream that opens and fails.
        await stream.start()
        await out.prepare(request)
        try:
            async for events in stream:
                if translator is not None:
                    events = b"".join(b for block in sse.split(events)
                                      for b in translator.feed(block))  # fmt: skip
                if events:
                    await out.write(events)
        except HookgateError as exc:  # the upstream failed, or a policy's transform refused
            if isinstance(exc, UpstreamError):
                log.warning(
                    "stream from %s failed after its first byte: %s", exc.target, exc.message
                )
            else:
                log.info("stream ended by a policy: %s (%s)", exc.code, exc.status)
            if api == "generate_content":
                await out.write(sse.encode(exc.to_google_body()))
            else:
                body = exc.to_anthropic_body() if api == "messages" else exc.to_body()
                await out.write(sse.encode(body, event="error"))
        await out.write_eof()
    except ConnectionResetError:
        log.info("client went away mid-stream; upstream stream closed")
    finally:
        await stream.aclose()
    return out
