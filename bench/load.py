"""Load generator: ``python -m bench.load URL CONCURRENCY COUNT STREAM [--seconds S]``.

Sends COUNT chat completion requests (or as many as fit in S seconds) with CONCURRENCY
in flight over keep-alive connections and prints one JSON line: latency percentiles
(total, and time to first byte for streams) and requests per second.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import aiohttp
import orjson

BODY = orjson.dumps(
    {
        "model": "bench-model",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Tell me about foxes. " * 20},
        ],
    }
)
STREAM_BODY = orjson.dumps({**orjson.loads(BODY), "stream": True})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(
    url: str, concurrency: int, count: int, stream: bool, seconds: float | None = None
) -> dict[str, float]:
    body = STREAM_BODY if stream else BODY
    stop_at = None if seconds is None else time.perf_counter() + seconds
    totals: list[float] = []
    firsts: list[float] = []
    errors = 0
    remaining = count
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal remaining, errors
            while remaining > 0 and (stop_at is None or time.perf_counter() < stop_at):
                remaining -= 1
                started = time.perf_counter()
                async with session.post(
                    url, data=body, headers={"content-type": "application/json"}
                ) as r:
                    first = None
                    async for _ in r.content.iter_any():
                        if first is None:
                            first = time.perf_counter()
                    if r.status != 200:
                        errors += 1
                end = time.perf_counter()
                totals.append(end - started)
                firsts.append((first or end) - started)

        started = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(concurrency)])
        elapsed = time.perf_counter() - started
    return {
        "requests": len(totals),
        "errors": errors,
        "rps": len(totals) / elapsed,
        "p50_ms": percentile(totals, 0.5) * 1000,
        "p99_ms": percentile(totals, 0.99) * 1000,
        "ttfb_p50_ms": percentile(firsts, 0.5) * 1000,
        "ttfb_p99_ms": percentile(firsts, 0.99) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("concurrency", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("stream", choices=("0", "1"))
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(
        orjson.dumps(
            asyncio.run(
                run(args.url, args.concurrency, args.count, args.stream == "1", args.seconds)
            )
        ).decode()
    )


if __name__ == "__main__":
    main()
