"""A fast fake OpenAI upstream for the benchmark: fixed chat completion JSON and SSE.

Run: ``python -m bench.upstream PORT``. Answers ``POST /v1/chat/completions`` with a
~600-byte completion, or with 20 SSE chunks and ``[DONE]`` when the body asks to stream;
``POST /v1/traces`` is an OTLP/HTTP sink for the traced pipeline.
"""

from __future__ import annotations

import sys

import orjson
from aiohttp import web

from bench.serving import serve
from hookgate.wire import synth

REPLY = synth.Reply(text="The quick brown fox jumps over the lazy dog. " * 4, pieces=20, id="bench")
JSON = orjson.dumps(synth.chat_completion("bench-model", REPLY))
EVENTS = b"".join(synth.chat_stream("bench-model", REPLY, include_usage=True))


async def chat(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    if b'"stream":true' not in body.replace(b" ", b""):
        return web.Response(body=JSON, content_type="application/json")
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    await response.write(EVENTS)
    await response.write_eof()
    return response


async def traces(request: web.Request) -> web.Response:
    """An OTLP/HTTP sink: accepts and discards spans (the tracing pipeline exports here)."""
    await request.read()
    return web.Response(body=b"", content_type="application/x-protobuf")


def main() -> None:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/traces", traces)
    serve(app, int(sys.argv[1]))


if __name__ == "__main__":
    main()
