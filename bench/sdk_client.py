"""What the SDK's governed ``openai`` client costs a model call: ``python -m bench.sdk_client``.

One process, one fast fake upstream (``bench.upstream``, its own core). The same
``openai.AsyncOpenAI`` calls, sequential, JSON and streamed, made four ways in one run:

* ``plain``: the client as the user built it (the baseline);
* ``outside``: a governed client outside any reply (a pass-through);
* ``none``: a governed client inside a reply of a gate with no policies;
* ``pii+guard``: inside a reply of a gate with ``pii`` (on a prompt with an e-mail) and
  ``tool_guard``.

Each call inside a reply opens and closes its own reply, so those figures include a reply's
``on_reply`` layers (an agent's reply makes several calls). The prompt repeats, so ``pii``
analyzes it once and then hits its per-text cache, as a resent history does.

Reported: p50 per call of each, and its ratio and added microseconds over ``plain``. Rounds
alternate between the ways, so drift on this shared machine hits them alike. Appends its
figures to ``bench/results/sdk-client-<time>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openai

from bench.processes import LOAD_CPUS, ROOT, free_port, start, stop
from hookgate.sdk import Gate, http_client

PROMPT = "Write to maria.garcia@example.com about the invoice from last week, please."
WAYS = ("plain", "outside", "none", "pii+guard")


def gate(tmp: Path, name: str, policies: str) -> Gate:
    path = tmp / f"{name}.yaml"
    path.write_text(
        f"store: 'sqlite:///{tmp / name}.db'\n"
        "providers: {up: {base_url: 'http://127.0.0.1:9/v1', api_key: sk-bench}}\n"
        'models: {"*": [{provider: up}]}\n' + policies
    )
    return Gate.from_config(path)


async def measure(reps: int, rounds: int, stream: bool, url: str, tmp: Path) -> dict[str, Any]:
    plain = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
    governed = openai.AsyncOpenAI(
        base_url=url, api_key="k", max_retries=0, http_client=http_client()
    )
    gates = {
        "none": gate(tmp, "none", "policies: []\n"),
        "pii+guard": gate(tmp, "pii", "policies:\n  - pii: {}\n  - tool_guard: {deny: [x]}\n"),
    }

    async def call(client: openai.AsyncOpenAI) -> None:
        messages: Any = [{"role": "user", "content": PROMPT}]
        if stream:
            events = await client.chat.completions.create(model="m", messages=messages, stream=True)
            async for _ in events:
                pass
        else:
            await client.chat.completions.create(model="m", messages=messages)

    async def in_reply(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            async with gates[name].reply():
                await call(governed)

        return run

    runs: dict[str, Callable[[], Awaitable[None]]] = {
        "plain": lambda: call(plain),
        "outside": lambda: call(governed),
        "none": await in_reply("none"),
        "pii+guard": await in_reply("pii+guard"),
    }
    for run in runs.values():  # warm up: connections, spaCy, caches
        for _ in range(20):
            await run()
    samples: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way in WAYS:
            for _ in range(reps):
                started = time.perf_counter()
                await runs[way]()
                samples[way].append(time.perf_counter() - started)
    await plain.close()
    await governed.close()
    for made in gates.values():
        await made.aclose()
    base = statistics.median(samples["plain"])
    return {
        way: {
            "p50_ms": round(statistics.median(s) * 1000, 3),
            "ratio": round(statistics.median(s) / base, 3),
            "added_us": round((statistics.median(s) - base) * 1e6),
        }
        for way, s in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="calls per way per round")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    port = free_port()
    upstream = start(["-m", "bench.upstream", str(port)], LOAD_CPUS, port)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            figures = {
                kind: asyncio.run(measure(args.reps, args.rounds, kind == "stream", url, Path(tmp)))
                for kind in ("json", "stream")
            }
    finally:
        stop([upstream])
    print(json.dumps(figures, indent=2))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    out = ROOT / "bench" / "results" / f"sdk-client-{stamp}.json"
    out.write_text(json.dumps({"reps": args.reps, "rounds": args.rounds, **figures}, indent=2))


if __name__ == "__main__":
    main()
