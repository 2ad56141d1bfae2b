"""Relay a streamed model response to the client as its events arrive.

Events are written as soon as they have arrived whole; nothing is buffered beyond one
upstream read. Without a stream transform the bytes pass through untouched. A failure
after the first byte ends the stream with an ``error`` event carrying an OpenAI error
object, which the ``openai`` SDK raises as ``APIError``; a stream is never cut short so
that it looks complete (on the Messages route the event carries an Anthropic error,
which the ``anthropic`` SDK raises as ``APIStatusError``). A policy's stream transform
that refuses (``pii`` finding a blocked entity in the model's own text) ends it the same
way, before the text it held.
When the client goes away the upstream stream is closed, which closes its connection and
stops the upstream's work.

While relaying, the time spent waiting for upstream events is added to the request's
upstream time (so ``overhead = total - upstream`` is the proxy's own work) and the time to
the first event is recorded. (Usage and response facts are read earlier, from the
upstream's own events: see :class:`~hookgate.providers.terminal.Upstreams`.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import aiohttp
from aiohttp import web

from hookgate.errors import HookgateError, UpstreamError
from hookgate.pipeline.observe import Observation, Outcome
from hookgate.wire import sse
from hookgate.wire.deltas import StreamTransform
from hookgate.wire.sse import EventStream
from hookgate.wire.stream_rewrite import rewriter_for

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
    outcome: Outcome,
    observation: Observation,
    started: float,
) -> web.StreamResponse:
    """Write ``stream`` to the client; always closes ``stream``; fills ``outcome``."""
    out = web.StreamResponse(status=status, headers={**headers, **_STREAM_HEADERS})
    if request.version < aiohttp.HttpVersion11:
        out.force_close()  # HTTP/1.0 has no chunking: the end of the stream is the close
    rewriter = rewriter_for(api, transform) if transform is not None else None
    iterator = aiter(stream)
    try:
        # Start the stream before answering: every wrapper around it is then running (its
        # clean-up runs on aclose), and a failure before the first event is still an HTTP
        # error status rather than a stream that opens and fails.
        waiting = time.perf_counter()
        try:
            pending: bytes | None = await anext(iterator)
        except StopAsyncIteration:
            pending = None
        finally:
            observation.upstream_s += time.perf_counter() - waiting
        await out.prepare(request)
        try:
            while pending is not None:
                if rewriter is None:
                    await out.write(pending)
                else:
                    async for events in rewriter.rewrite(pending):
                        await out.write(events)
                if outcome.ttft_s is None:
                    outcome.ttft_s = time.perf_counter() - started
                waiting = time.perf_counter()
                try:
                    pending = await anext(iterator)
                except StopAsyncIteration:
                    pending = None
                finally:
                    observation.upstream_s += time.perf_counter() - waiting
        except HookgateError as exc:  # the upstream failed, or a policy's transform refused
            if isinstance(exc, UpstreamError):
                log.warning(
                    "stream from %s failed after its first byte: %s", exc.target, exc.message
                )
            else:
                log.info("stream ended by a policy: %s (%s)", exc.code, exc.status)
            outcome.failed(exc)
            body = exc.to_anthropic_body() if api == "messages" else exc.to_body()
            await out.write(sse.encode(body, event="error"))
        await out.write_eof()
    except ConnectionResetError:
        outcome.error_type = "client_disconnected"
        log.info("client went away mid-stream; upstream stream closed")
    finally:
        await stream.aclose()
    return out
