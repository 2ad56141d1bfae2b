"""What the pii policy costs the first request of an agent session: ``python -m bench.pii_cold``.

A coding agent's first request carries its whole system prompt (Codex CLI's is 18 to 26 KB
of Markdown), which the pii policy has never seen; every later request resends it
unchanged, and the policy's per-text cache answers from memory. This bench sends, through
two hookgate processes pinned to one core in front of the same fast fake upstream (one
with ``policies: []``, one with ``- pii: {}``), a chat request whose system message is the
real Codex CLI instructions captured in :mod:`evals.pii.agents` (its
longest developer message, 26 KB), made new for each rep by a
session line in front (*cold*: first sight of the prompt), then the same request again
(*warm*). Reported: p50 latency of each, the time pii adds cold and warm, and their ratio.
Appends its figures to ``bench/results/pii-cold-<time>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.processes import LOAD_CPUS, ROOT, free_port, start, start_hookgate, stop
from evals.pii.agents import bodies


def instructions() -> str:
    """Codex CLI's instructions for its default model, as captured from the client: the
    longest developer message of its first request (Codex sends no ``instructions``)."""
    texts: list[str] = []
    for item in bodies()["codex"][0]["input"]:
        if item.get("type") == "message" and item.get("role") == "developer":
            content = item["content"]
            texts += [content] if isinstance(content, str) else [p["text"] for p in content]
    return max(texts, key=len)


async def post(session: aiohttp.ClientSession, url: str, system: str) -> float:
    """One chat request with ``system`` as its system message; its latency in ms."""
    body = orjson.dumps(
        {
            "model": "bench-model",
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": "List the files in this directory."},
            ],
        }
    )
    started = time.perf_counter()
    async with session.post(url, data=body, headers={"content-type": "application/json"}) as r:
        reply = await r.json(loads=orjson.loads)
        assert r.status == 200, reply
    return (time.perf_counter() - started) * 1000


def cut(prompt: str, size: int | None) -> str:
    """``prompt`` cut at the last paragraph break within ``size`` bytes (whole if ``None``)."""
    if size is None or len(prompt.encode()) <= size:
        return prompt
    head = prompt.encode()[:size].decode(errors="ignore")
    return head[: head.rfind("\n\n")] if "\n\n" in head else head


async def measure(
    urls: dict[str, str], reps: int, prompt: str
) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {n: {"cold": [], "warm": []} for n in urls}
    async with aiohttp.ClientSession() as session:
        for rep in range(reps + 1):
            system = f"Session {rep:05d} started.\n\n{prompt}"
            for name, url in urls.items():
                cold = await post(session, url, system)
                warm = await post(session, url, system)
                if rep:  # the first rep warms connections and the model
                    out[name]["cold"].append(cold)
                    out[name]["warm"].append(warm)
    return out


def run(reps: int, size: int | None = None) -> dict[str, Any]:
    """Measure ``reps`` first-sight and repeated requests per pipeline (the prompt cut to
    ``size`` bytes when given); the summary."""
    prompt = cut(instructions(), size)
    processes: list[subprocess.Popen[bytes]] = []
    urls: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        processes.append(start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up))
        upstream = f"http://127.0.0.1:{up}/v1"
        try:
            for name, policies in {
                "no_pii": "policies: []\n",
                "pii": "policies: [pii: {}]\n",
            }.items():
                port = free_port()
                processes.append(start_hookgate(Path(tmp), name, port, upstream, policies))
                urls[name] = f"http://127.0.0.1:{port}/v1/chat/completions"
            results = asyncio.run(measure(urls, reps, prompt))
        finally:
            stop(processes)
    p50 = {n: {k: statistics.median(v) for k, v in r.items()} for n, r in results.items()}
    cold = p50["pii"]["cold"] - p50["no_pii"]["cold"]
    warm = p50["pii"]["warm"] - p50["no_pii"]["warm"]
    return {
        "prompt_bytes": len(prompt.encode()),
        "p50_ms": p50,
        "cold_added_ms": cold,
        "warm_added_ms": warm,
        "cold_vs_warm_added": cold / warm if warm > 0 else None,
        "cold_vs_no_pii": p50["pii"]["cold"] / p50["no_pii"]["cold"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="new prompts per pipeline")
    parser.add_argument(
        "--bytes", type=int, help="cut the prompt to this size (18000: the issue's)"
    )
    args = parser.parse_args()
    report = run(args.reps, args.bytes)
    print(json.dumps(report, indent=2))
    out = ROOT / "bench" / "results" / f"pii-cold-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"reps": args.reps, **report}, indent=2))
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
