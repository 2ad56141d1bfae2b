"""The cheapest fake upstream we can write in Python: a canned chat completion per request.

Run: ``python -m bench.lean_upstream PORT``. An asyncio protocol on uvloop (when installed)
that answers every HTTP/1.1 request it reads, whatever its path, with the same
``200 application/json`` chat completion :mod:`bench.upstream` sends, over keep-alive
connections. It reads only what it must (the header block and ``Content-Length`` bytes of
body), so it costs a fraction of an aiohttp server per request: benchmarks that measure
hookgate's scaling on a machine whose cores it shares with the upstream
(:mod:`bench.workers`) give the upstream as little of them as possible. Streams, OTLP and
chunked request bodies are not served (the scaling bench sends none; the span sink is
:mod:`bench.upstream`'s).
"""

from __future__ import annotations

import asyncio
import sys
from typing import cast

from bench.upstream import JSON

RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(JSON)
    + JSON
)


class Canned(asyncio.Protocol):
    """Answers each complete request in the bytes it is given with :data:`RESPONSE`."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)  # uvloop's: no subclass

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        answers = 0
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buffer[:end].lower()
            at = head.find(b"content-length:")
            length = 0
            if at >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15 : stop if stop >= 0 else end])
            if len(buffer) < end + 4 + length:
                break
            buffer = buffer[end + 4 + length :]
            answers += 1
        self.buffer = buffer
        if answers and self.transport is not None:
            self.transport.write(RESPONSE * answers)


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Canned, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def main() -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(int(sys.argv[1])))
    else:
        uvloop.run(serve(int(sys.argv[1])))


if __name__ == "__main__":
    main()
