"""Scaling with workers: requests/s of ``hookgate serve --workers N`` for N = 1, 2, ...

Run: ``python -m bench.workers [--quick] [--workers 1,2] [--rounds 3] [--seconds S]
[--load wrk|python]`` (from the repository root, in the venv).

Each pipeline (no policies; the shipped default, ``tracing`` exporting to a local sink and
``fallback``) is served with each worker count, by one server process tree at a time, in
front of the same fake upstream, and loaded at concurrency 32 over keep-alive connections
(non-streamed chat completions). The rounds alternate between the worker counts so that a
machine whose load changes during the run shifts every count alike; each figure is the
median over the rounds, and the ratio to the first worker count is the median of the
rounds' own ratios (the counts of one round run a minute apart at most).

Nothing is pinned: the workers, the fake upstream and the load generator share every core,
as they would on a host that runs all three, so whatever the other two cost is taken from
hookgate. To leave hookgate as much as possible, the load is ``wrk`` (C, one thread; Debian
package ``wrk``) when it is installed, else :mod:`bench.load` (Python, several times
wrk's CPU per request), and the upstream is :mod:`bench.lean_upstream` (a canned answer
from an asyncio protocol, about 15 µs a request; it also takes the default pipeline's span
exports). The report says how many cores there were, which load generator ran, and the CPU
time hookgate used per request (parent, workers and their span export workers). Writes
``bench/results/workers-<time>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import wrk
from bench.processes import CPUS, ROOT, free_port, start, start_hookgate, stop
from bench.run import cpu_seconds

PIPELINES = {
    "no_policies": "policies: []\n",
    "default": "policies:\n  - tracing: {endpoint: 'UPSTREAM/traces'}\n  - fallback: {}\n",
}
"""``policies: []``, and the policies of ``policies/default.yaml`` (tracing exported over
OTLP to the fake upstream's sink). Metrics and the audit log (SQLite) are always on."""
CONCURRENCY = 32


def start_workers(
    tmp: Path, name: str, upstream: str, policies: str, workers: int
) -> tuple[subprocess.Popen[bytes], str]:
    """``hookgate serve --workers N`` with its own SQLite store, on every core."""
    port = free_port()
    process = start_hookgate(tmp, name, port, upstream, policies, workers=workers, cpus=set(CPUS))
    return process, f"http://127.0.0.1:{port}/v1/chat/completions"


def load(url: str, seconds: float, tool: str, tmp: Path) -> dict[str, float]:
    """``seconds`` of non-streamed requests at :data:`CONCURRENCY` by ``tool``."""
    if tool == "wrk":
        return wrk.run(url, CONCURRENCY, seconds, tmp)
    out = subprocess.run(
        [sys.executable, "-m", "bench.load", url, str(CONCURRENCY), "100000000", "0",
         "--seconds", str(seconds)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(out.stdout))


def measure(
    tmp: Path, upstream: str, pipeline: str, workers: int, seconds: float, tool: str
) -> dict[str, float]:
    """One round: start the server, warm it up, load it, stop it."""
    process, url = start_workers(tmp, f"{pipeline}-{workers}", upstream, PIPELINES[pipeline],
                                 workers)  # fmt: skip
    try:
        load(url, max(1.0, seconds / 5), tool, tmp)  # warm-up: connections, caches, span worker
        before = cpu_seconds(process.pid)
        result = load(url, seconds, tool, tmp)
        used = cpu_seconds(process.pid) - before
    finally:
        stop([process])
    assert result["errors"] == 0, result
    return {"rps": result["rps"], "p50_ms": result["p50_ms"],
            "cpu_us_per_request": used / result["requests"] * 1e6}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per worker count")
    parser.add_argument("--seconds", type=float, help="load per round (default 8, quick 2)")
    wrk.add_load_option(parser)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    seconds = args.seconds or (2.0 if args.quick else 8.0)
    rounds: dict[str, dict[int, list[dict[str, float]]]] = {
        p: {n: [] for n in counts} for p in PIPELINES
    }
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        upstream_process = start(["-m", "bench.lean_upstream", str(up)], set(CPUS), up)
        upstream = f"http://127.0.0.1:{up}/v1"
        try:
            for _ in range(args.rounds):
                for pipeline in PIPELINES:
                    for workers in counts:
                        rounds[pipeline][workers].append(
                            measure(Path(tmp), upstream, pipeline, workers, seconds, args.load)
                        )
        finally:
            stop([upstream_process])
    report: dict[str, Any] = {
        "time": dt.datetime.now(dt.UTC).isoformat(),
        "cpus": len(CPUS),
        "load_average_1m": os.getloadavg()[0],
        "seconds_per_round": seconds,
        "load": args.load,
        "concurrency": CONCURRENCY,
        "rounds": rounds,
        "median": {},
    }
    print(f"{len(CPUS)} cores; {args.load} at concurrency {CONCURRENCY}; "
          f"median of {args.rounds} rounds")  # fmt: skip
    print(f"{'pipeline':<12} {'workers':>7} {'rps':>8} {'vs 1':>6} {'p50 ms':>8} {'cpu µs':>7}")
    for pipeline, by_count in rounds.items():
        report["median"][pipeline] = {}
        base = by_count[counts[0]]
        for workers, results in by_count.items():
            median = {k: statistics.median(r[k] for r in results) for k in results[0]}
            median["rps_vs_first"] = statistics.median(
                r["rps"] / b["rps"] for r, b in zip(results, base, strict=True)
            )
            report["median"][pipeline][workers] = median
            print(
                f"{pipeline:<12} {workers:>7} {median['rps']:8.0f} {median['rps_vs_first']:6.2f} "
                f"{median['p50_ms']:8.2f} {median['cpu_us_per_request']:7.0f}"
            )
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"workers-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"\nwritten to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
