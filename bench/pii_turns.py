"""What the pii policy costs an agent, turn by turn: ``python -m bench.pii_turns [--reps N]``.

An agent resends its whole history every turn. This bench plays ``--reps`` fresh 10-turn
conversations (about 2,000 tokens by turn 10, with names, e-mails, phone numbers and a card
in every user turn) against two hookgate processes in front of the same fast fake upstream:
one with no policies, one with ``- pii: {}`` (and, for contrast, one with the per-text
cache off: ``cache_size: 0``). Each conversation has new values, so nothing
is cached across conversations; within one, the policy's per-text cache means turn N
analyzes only the text that is new since turn N-1.

Reported per turn: p50 latency of both pipelines, the added latency of pii, and the ratio
to the no-pii pipeline; and the headline ``turn 10 added / turn 1 added``. The proxies are
pinned to one core and the client to the others, as in ``bench.run``. Appends its figures
to ``bench/results/pii-<time>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.processes import LOAD_CPUS, ROOT, free_port, start, start_hookgate, stop

TURNS = 10
FIRST = ["Alice", "Bruno", "Chloe", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
LAST = ["Johnson", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Kowalski", "Haddad"]
FILLER = (
    "The order arrived late and the invoice shows the wrong amount, so please check the "
    "account history, the refund policy and the last three shipments before you answer. "
)


def conversation(rng: random.Random) -> list[str]:
    """Ten user turns of ~150 tokens, each with fresh PII."""
    turns = []
    for turn in range(TURNS):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        email = f"{name.split()[0].lower()}.{rng.randrange(10**6)}@example.org"
        phone = f"{rng.randrange(200, 999)}.{rng.randrange(200, 999)}.{rng.randrange(10**4):04d}"
        card = "4111 1111 1111 1111" if turn % 3 == 0 else "5500 0000 0000 0004"
        turns.append(
            f"Turn {turn + 1}: I'm {name}, reach me at {email} or {phone}. "
            f"My card {card} was charged twice. " + FILLER * 2
        )
    return turns


async def play(session: aiohttp.ClientSession, url: str, turns: list[str]) -> list[float]:
    """Send the conversation turn by turn; latency of each turn in ms."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are the support assistant of Example Corp."}
    ]
    latencies = []
    for text in turns:
        messages.append({"role": "user", "content": text})
        body = orjson.dumps({"model": "bench-model", "messages": messages})
        started = time.perf_counter()
        async with session.post(
            url, data=body, headers={"content-type": "application/json"}
        ) as response:
            reply = await response.json(loads=orjson.loads)
            assert response.status == 200, reply
        latencies.append((time.perf_counter() - started) * 1000)
        messages.append(reply["choices"][0]["message"])
    return latencies


async def measure(urls: dict[str, str], reps: int) -> dict[str, list[list[float]]]:
    rng = random.Random(7)
    out: dict[str, list[list[float]]] = {name: [] for name in urls}
    async with aiohttp.ClientSession() as session:
        for rep in range(reps + 1):
            turns = conversation(rng)
            for name, url in urls.items():
                latencies = await play(session, url, turns)
                if rep:  # the first conversation warms connections and the model
                    out[name].append(latencies)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30, help="conversations per pipeline")
    args = parser.parse_args()
    report = run(args.reps)
    print_report(report)
    out = ROOT / "bench" / "results" / f"pii-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"reps": args.reps, **report}, indent=2))
    print(f"\nwritten to {out.relative_to(ROOT)}")


def run(reps: int) -> dict[str, Any]:
    """Play ``reps`` conversations per pipeline; the summarised report."""
    processes: list[subprocess.Popen[bytes]] = []
    urls: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        processes.append(start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up))
        upstream = f"http://127.0.0.1:{up}/v1"
        pipelines = {
            "no_pii": "policies: []\n",
            "pii": "policies:\n  - pii: {}\n",
            "pii_uncached": "policies:\n  - pii: {cache_size: 0}\n",
        }
        try:
            for name, policies in pipelines.items():
                port = free_port()
                processes.append(start_hookgate(Path(tmp), name, port, upstream, policies))
                urls[name] = f"http://127.0.0.1:{port}/v1/chat/completions"
            results = asyncio.run(measure(urls, reps))
        finally:
            stop(processes)
    return summarize(results)


def summarize(results: dict[str, list[list[float]]]) -> dict[str, Any]:
    turns = []
    for turn in range(TURNS):
        p50 = {name: statistics.median(r[turn] for r in runs) for name, runs in results.items()}
        base = p50["no_pii"]
        turns.append(
            {
                "turn": turn + 1,
                "no_pii_p50_ms": base,
                "pii_p50_ms": p50["pii"],
                "pii_uncached_p50_ms": p50["pii_uncached"],
                "added_ms": p50["pii"] - base,
                "added_uncached_ms": p50["pii_uncached"] - base,
                "ratio": p50["pii"] / base,
            }
        )
    first, last = turns[0], turns[-1]
    return {
        "turns": turns,
        "turn10_vs_turn1_added": last["added_ms"] / first["added_ms"],
        "turn10_vs_turn1_added_uncached": last["added_uncached_ms"] / first["added_uncached_ms"],
    }


def print_report(report: dict[str, Any]) -> None:
    print(
        f"{'turn':>4} {'no pii p50':>11} {'pii p50':>9} {'added':>8} {'ratio':>6}"
        f" {'uncached p50':>13} {'added':>8}"
    )
    for t in report["turns"]:
        print(
            f"{t['turn']:>4} {t['no_pii_p50_ms']:11.2f} {t['pii_p50_ms']:9.2f} "
            f"{t['added_ms']:8.2f} {t['ratio']:6.2f} {t['pii_uncached_p50_ms']:13.2f}"
            f" {t['added_uncached_ms']:8.2f}"
        )
    print(f"\nturn 10 added / turn 1 added: {report['turn10_vs_turn1_added']:.2f}")
    print(
        "without the per-text cache (cache_size: 0): "
        f"{report['turn10_vs_turn1_added_uncached']:.2f}"
    )


if __name__ == "__main__":
    main()
