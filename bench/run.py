"""The benchmark: the same load against a direct upstream, a bare relay and hookgate.

Run: ``python -m bench.run [--quick]`` (from the repository root, in the venv).

Every server is its own process. On a machine with two or more cores the proxy under
test is pinned to the last core, and the fake upstream plus the load generator to the
others, so the load generator does not take the proxy's CPU (with two cores the load
generator and upstream share one core: at concurrency 32 that core can be the limit,
which narrows the gap between targets; the ratios say so honestly by including the
bare relay). Each figure is also given as a ratio to the direct call and to the bare
relay, measured in the same run, since absolute numbers on a shared machine are noise.
Writes ``bench/results/<time>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CPUS = sorted(os.sched_getaffinity(0))
PROXY_CPU = {CPUS[-1]}
LOAD_CPUS = set(CPUS[:-1]) or PROXY_CPU

DEFAULT_PIPELINE = (
    "pricing: {bench-model: {input: 1.0, output: 2.0}}\n"
    "policies:\n"
    "  - tracing: {endpoint: 'UPSTREAM/traces'}\n"
    "  - budget: {limits: [{scope: team, window: day, usd: 1000000}]}\n"
    "  - rate_limit: {limits: [{scope: key, rpm: 100000000}]}\n"
    "  - fallback: {}\n"
)
PIPELINES = {
    "hookgate": "policies: []\n",
    "hookgate_default": DEFAULT_PIPELINE,
    "hookgate_default_pii": DEFAULT_PIPELINE + "  - pii: {}\n",
}
"""(c) no policies; (d) the shipped default pipeline plus a budget (SQLite ledger) and a rate
limit, tracing exported over OTLP to a local sink; (e) (d) plus ``pii``. Metrics and the
audit log (SQLite) are always on. ``UPSTREAM`` is replaced by the fake upstream's base URL."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(args: list[str], cpus: set[int], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.sched_setaffinity(0, cpus),
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{args} did not start") from None
            time.sleep(0.05)


def start_hookgate(
    tmp: Path, name: str, port: int, upstream: str, policies: str
) -> subprocess.Popen[bytes]:
    """``hookgate serve`` on ``port`` in front of ``upstream`` with ``policies`` (YAML, where
    ``UPSTREAM`` stands for the upstream's URL), its own SQLite store, on the proxy's core."""
    config = tmp / f"{name}.yaml"
    config.write_text(
        f"server: {{port: {port}, reload: false}}\n"
        f"store: 'sqlite:///{tmp / name}.db'\n"
        f"providers: {{up: {{base_url: '{upstream}', api_key: sk-bench}}}}\n"
        'models: {"*": [{provider: up}]}\n' + policies.replace("UPSTREAM", upstream)
    )
    command = ["-m", "proxy", "serve", "--config", str(config), "--log-level", "WARNING"]
    return start(command, PROXY_CPU, port)


def rss_mb(process: subprocess.Popen[bytes]) -> float:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load(url: str, concurrency: int, count: int, stream: bool) -> dict[str, float]:
    command = [
        sys.executable,
        "-m",
        "bench.load",
        url,
        str(concurrency),
        str(count),
        "1" if stream else "0",
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
    args = parser.parse_args()
    n1, n32 = (300, 3000) if args.quick else (2000, 20000)

    processes: list[subprocess.Popen[bytes]] = []
    targets: dict[str, str] = {}
    rss: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        processes.append(start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up))
        upstream = f"http://127.0.0.1:{up}/v1"
        targets["direct"] = f"{upstream}/chat/completions"
        bare = free_port()
        processes.append(start(["-m", "bench.bare_relay", str(bare), upstream], PROXY_CPU, bare))
        targets["bare_relay"] = f"http://127.0.0.1:{bare}/v1/chat/completions"
        hooked: dict[str, subprocess.Popen[bytes]] = {}
        for name, policies in PIPELINES.items():
            port = free_port()
            hooked[name] = start_hookgate(Path(tmp), name, port, upstream, policies)
            processes.append(hooked[name])
            targets[name] = f"http://127.0.0.1:{port}/v1/chat/completions"
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
                    results[scenario][target] = load(url, concurrency, count, stream)
            rss = {name: rss_mb(p) for name, p in hooked.items()}
        finally:
            for process in processes:
                process.terminate()
                process.wait(10)
    report = {
        "time": dt.datetime.now(dt.UTC).isoformat(),
        "cpus": len(CPUS),
        "quick": args.quick,
        "results": results,
        "rss_mb": rss,
        "ratios": ratios(results),
    }
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(report, indent=2))
    print_table(results, rss)
    print(f"\nwritten to {path.relative_to(ROOT)}")


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
        f"{'+p99':>7} {'rps':>8} {'/direct':>8} {'/bare':>7}"
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
                f"{r['rps'] / direct['rps']:8.2f} {r['rps'] / bare['rps']:7.2f}"
            )
    print("\nRSS after the run (MB): " + ", ".join(f"{k} {v:.1f}" for k, v in rss.items()))


if __name__ == "__main__":
    main()
