"""The benchmark: the same load against a direct upstream, a bare relay and hookgate.

Run: ``python -m bench.run [--quick]`` (from the repository root, in the venv).

Every server is its own process; where each runs is in :mod:`bench.processes` (the proxy
under test on its own core, the fake upstream and the load generator on the others; with
two cores those two share one, which at concurrency 32 can be the limit and narrows the
gap between targets — the bare relay is measured under the same limit). Each figure is
also given as a ratio to the direct call and to the bare relay, measured in the same run,
since absolute numbers on a shared machine are noise. Besides latency and throughput it
reports each target's CPU time per request (the proxy process and the processes it
started), hookgate's RSS over a soak of 100,000 requests, and the pii policy's cost on turn
1 and turn 10 of an agent conversation (:mod:`bench.pii_turns`).
Writes ``bench/results/<time>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from bench import pii_turns
from bench.processes import (
    CPUS,
    LOAD_CPUS,
    PROXY_CPU,
    ROOT,
    free_port,
    start,
    start_hookgate,
    stop,
)

DEFAULT_PIPELINE = (
    "pricing: {bench-model: {input: 1.0, output: 2.0}}\n"
    "policies:\n"
    "  - tracing: {endpoint: 'UPSTREAM/traces'}\n"
    "  - budget: {limits: [{scope: model, window: day, usd: 1000000}]}\n"
    "  - rate_limit: {limits: [{scope: key, rpm: 100000000}]}\n"
    "  - fallback: {}\n"
)
PIPELINES = {
    "hookgate": "policies: []\n",
    "hookgate_default": DEFAULT_PIPELINE,
    "hookgate_default_pii": DEFAULT_PIPELINE + "  - pii: {}\n",
}
"""(c) no policies; (d) the shipped default pipeline (tracing, fallback) plus a budget that
every request is charged to (reserve, then settle in SQLite) and a rate limit, tracing
exported over OTLP to a local sink; (e) (d) plus ``pii``. Metrics and the audit log
(SQLite) are always on. ``UPSTREAM`` is replaced by the fake upstream's base URL."""

SOAK_TARGET = "hookgate_default"


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid``, in MB."""
    return float(psutil.Process(pid).memory_info().rss) / 2**20


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` and of every process below it still running (a
    worker's span exporter, the workers of ``--workers N`` and theirs)."""
    process = psutil.Process(pid)
    total = 0.0
    for each in (process, *process.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = each.cpu_times()
            total += times.user + times.system
    return total


def load(
    url: str, concurrency: int, count: int, stream: bool, seconds: float | None = None
) -> dict[str, float]:
    """``bench.load`` on the load cores: ``count`` requests (or as many as ``seconds``
    allow) at ``concurrency``; its JSON summary."""
    command = [
        sys.executable,
        "-m",
        "bench.load",
        url,
        str(concurrency),
        str(count),
        "1" if stream else "0",
        *([] if seconds is None else ["--seconds", str(seconds)]),
    ]
    out = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, LOAD_CPUS),
    )
    return dict(json.loads(out.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument(
        "--worker-anywhere",
        action="store_true",
        help="let hookgate's span export worker run on any core (as on a host with a core to "
        "spare) instead of the proxy's",
    )
    args = parser.parse_args()
    n1, n32, soak, reps = (300, 3000, 20_000, 5) if args.quick else (2000, 20000, 100_000, 15)

    processes: list[subprocess.Popen[bytes]] = []
    targets: dict[str, str] = {}
    pids: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        processes.append(start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up))
        upstream = f"http://127.0.0.1:{up}/v1"
        targets["direct"] = f"{upstream}/chat/completions"
        bare = free_port()
        processes.append(start(["-m", "bench.bare_relay", str(bare), upstream], PROXY_CPU, bare))
        targets["bare_relay"] = f"http://127.0.0.1:{bare}/v1/chat/completions"
        pids["bare_relay"] = processes[-1].pid
        hooked: dict[str, subprocess.Popen[bytes]] = {}
        for name, policies in PIPELINES.items():
            port = free_port()
            hooked[name] = start_hookgate(Path(tmp), name, port, upstream, policies)
            processes.append(hooked[name])
            targets[name] = f"http://127.0.0.1:{port}/v1/chat/completions"
            pids[name] = hooked[name].pid
        try:
            scenarios = [
                ("json_c1", 1, n1, False),
                ("json_c32", 32, n32, False),
                ("stream_c1", 1, n1, True),
                ("stream_c32", 32, n32, True),
            ]
            results: dict[str, dict[str, dict[str, float]]] = {}
            for scenario, concurrency, count, stream in scenarios:
                results[scenario] = {}
                for target, url in targets.items():
                    load(url, concurrency, max(100, count // 10), stream)  # warm-up
                    if args.worker_anywhere and target in hooked:
                        # the span export worker, started by the first span
                        for child in psutil.Process(pids[target]).children():
                            os.sched_setaffinity(child.pid, set(CPUS))
                    before = cpu_seconds(pids[target]) if target in pids else 0.0
                    result = load(url, concurrency, count, stream)
                    if target in pids:
                        used = cpu_seconds(pids[target]) - before
                        result["cpu_us_per_request"] = used / result["requests"] * 1e6
                    results[scenario][target] = result
            rss = {name: rss_mb(p.pid) for name, p in hooked.items()}
            dropped = {
                name: metric_total(targets[name], "hookgate_trace_spans_dropped_total")
                for name in hooked
            }
            rss_soak = soak_rss(hooked[SOAK_TARGET], targets[SOAK_TARGET], soak)
        finally:
            stop(processes)
    pii = pii_turns.run(reps)
    report = {
        "time": dt.datetime.now(dt.UTC).isoformat(),
        "cpus": len(CPUS),
        "quick": args.quick,
        "worker_anywhere": args.worker_anywhere,
        "results": results,
        "rss_mb": rss,
        "rss_soak": rss_soak,
        "spans_dropped": dropped,
        "pii_turns": pii,
        "ratios": ratios(results),
    }
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(report, indent=2))
    print_table(results, rss)
    print(
        "spans dropped (export queue full): "
        + ", ".join(f"{k} {v:.0f}" for k, v in dropped.items())
    )
    print(
        f"\nRSS of {SOAK_TARGET} over {rss_soak['requests']:,} requests (MB, after each "
        f"fifth): {', '.join(f'{v:.1f}' for v in rss_soak['rss_mb'])}; "
        f"growth {rss_soak['growth']:+.1%}"
    )
    print(
        f"pii: turn 1 adds {pii['turns'][0]['added_ms']:.1f} ms, turn 10 adds "
        f"{pii['turns'][-1]['added_ms']:.1f} ms: turn 10 / turn 1 = "
        f"{pii['turn10_vs_turn1_added']:.2f}"
    )
    print(f"\nwritten to {path.relative_to(ROOT)}")


def metric_total(url: str, name: str) -> float:
    """The value of an unlabelled sample on the proxy's ``/metrics`` (0 when absent)."""
    base = url.split("/v1/", 1)[0]
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
    return 0.0


def soak_rss(process: subprocess.Popen[bytes], url: str, requests: int) -> dict[str, Any]:
    """RSS after each fifth of ``requests`` (concurrency 32, half of them streamed); growth
    is the last reading over the first (the first fifth warms caches and pools)."""
    readings = []
    for fifth in range(5):
        load(url, 32, requests // 5, stream=fifth % 2 == 1)
        readings.append(rss_mb(process.pid))
    return {"requests": requests, "rss_mb": readings, "growth": readings[-1] / readings[0] - 1}


def ratios(results: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scenario, by_target in results.items():
        direct, bare = by_target["direct"], by_target["bare_relay"]
        out[scenario] = {
            target: {
                "added_p50_ms": r["p50_ms"] - direct["p50_ms"],
                "added_p99_ms": r["p99_ms"] - direct["p99_ms"],
                "added_ttfb_p50_ms": r["ttfb_p50_ms"] - direct["ttfb_p50_ms"],
                "rps_vs_direct": r["rps"] / direct["rps"],
                "rps_vs_bare": r["rps"] / bare["rps"],
            }
            for target, r in by_target.items()
        }
    return out


def print_table(results: dict[str, dict[str, dict[str, float]]], rss: dict[str, float]) -> None:
    header = (
        f"{'scenario':<11} {'target':<24} {'p50 ms':>8} {'p99 ms':>8} {'ttfb50':>8} {'+p50':>7} "
        f"{'+p99':>7} {'rps':>8} {'/direct':>8} {'/bare':>7} {'cpu µs':>7}"
    )
    print(header)
    print("-" * len(header))
    for scenario, by_target in results.items():
        direct, bare = by_target["direct"], by_target["bare_relay"]
        for target, r in by_target.items():
            print(
                f"{scenario:<11} {target:<24} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} "
                f"{r['ttfb_p50_ms']:8.3f} {r['p50_ms'] - direct['p50_ms']:7.3f} "
                f"{r['p99_ms'] - direct['p99_ms']:7.3f} {r['rps']:8.0f} "
                f"{r['rps'] / direct['rps']:8.2f} {r['rps'] / bare['rps']:7.2f} "
                f"{r.get('cpu_us_per_request', float('nan')):7.0f}"
            )
    print("\ncpu µs: CPU time (user + system) of the proxy and its export worker per request")
    print("RSS after the run (MB): " + ", ".join(f"{k} {v:.1f}" for k, v in rss.items()))


if __name__ == "__main__":
    main()
