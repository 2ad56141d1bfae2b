"""Where a hookgate target spends its CPU under load: a py-spy profile, summarised.

Run: ``python -m bench.profile [--target hookgate_default] [--concurrency 32] [--stream]
[--seconds 12]``. Starts the fake upstream and the target exactly as :mod:`bench.run`
does (same cores), drives load at it from a separate process, and samples the proxy
with ``py-spy record --gil`` (only the thread holding the GIL is sampled, so idle time
and the exporter's waits are not counted; the exporter thread's encoding is). Prints two
tables: *self* time by area (the innermost frame's package or hookgate module, so time
in aiohttp called from our provider counts as aiohttp) and *inclusive* time of each
hookgate module (every sample with that module anywhere on the stack), plus the hottest
leaf functions. The raw collapsed stacks are kept in ``bench/results/`` for flame graphs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.processes import (
    LOAD_CPUS,
    PROXY_CPU,
    ROOT,
    free_port,
    start,
    start_hookgate,
    stop,
)
from bench.run import PIPELINES

RATE = 250
"""Samples per second."""
WARM_UP_S = 3
"""Load before sampling starts."""

AREAS = (
    # (substring of a frame's file, area); the first match from the innermost frame wins
    ("opentelemetry/exporter", "tracing: OTLP encode/export (exporter thread)"),
    ("opentelemetry/proto", "tracing: OTLP encode/export (exporter thread)"),
    ("google/protobuf", "tracing: OTLP encode/export (exporter thread)"),
    ("requests/", "tracing: OTLP encode/export (exporter thread)"),
    ("urllib3/", "tracing: OTLP encode/export (exporter thread)"),
    ("opentelemetry/", "tracing: OpenTelemetry SDK (spans)"),
    ("(proxy/telemetry/tracing.py", "tracing: hookgate"),
    ("(proxy/policies/tracing.py", "tracing: hookgate"),
    ("(proxy/telemetry/semconv.py", "tracing: hookgate"),
    ("prometheus_client/", "metrics"),
    ("(proxy/telemetry/metrics.py", "metrics"),
    ("(proxy/policies/budget.py", "budget"),
    ("(proxy/budgets/", "budget"),
    ("(proxy/policies/rate_limit.py", "rate_limit"),
    ("(proxy/policies/fallback.py", "fallback"),
    ("(proxy/resilience/", "fallback"),
    ("(proxy/policies/pii.py", "pii"),
    ("(proxy/redaction/", "pii"),
    ("presidio", "pii"),
    ("spacy", "pii"),
    ("(proxy/store/", "store (SQLite: audit, ledger)"),
    ("sqlite3", "store (SQLite: audit, ledger)"),
    ("aiohttp/web", "aiohttp server"),
    ("aiohttp/client", "aiohttp client"),
    ("aiohttp/connector", "aiohttp client"),
    ("aiohttp/", "aiohttp (shared)"),
    ("multidict", "aiohttp (shared)"),
    ("yarl", "aiohttp (shared)"),
    ("(proxy/", "hookgate core (routes, pipeline, wire)"),
    ("/asyncio/", "event loop"),
    ("/uvloop/", "event loop"),
    ("/threading.py", "threads"),
    ("/concurrent/", "threads"),
)


def area(frames: list[str]) -> str:
    """The area of the innermost frame that names one (frames are outermost first)."""
    for frame in reversed(frames):
        for needle, name in AREAS:
            if needle in frame:
                return name
    return "other"


def summarise(raw: str, per_request_us: float | None = None, top: int = 15) -> str:
    """Tables of self time by area, inclusive time by hookgate module, and hot leaves.

    ``per_request_us``: the sampled CPU time divided by the requests served while
    sampling; when given, each area's share is also shown in µs per request."""
    by_area: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        by_area[area(frames)] += count
        leaves[frames[-1]] += count
        modules = {m for f in frames if (m := _hookgate_module(f)) is not None}
        for module in modules:
            inclusive[module] += count
    if not total:
        return "no samples (is py-spy allowed to attach? see ptrace_scope)"
    lines = [f"{total} samples with the GIL held"]
    if per_request_us is not None:
        lines.append(f"{per_request_us:.0f} µs of CPU (GIL held) per request")
    lines += ["", "self time by area:"]
    for name, n in by_area.most_common():
        us = "" if per_request_us is None else f"  {n / total * per_request_us:5.0f} µs"
        lines.append(f"  {n / total:6.1%}{us}  {name}")
    lines += ["", "inclusive time of hookgate modules:"]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in inclusive.most_common(top)]
    lines += ["", "hottest leaf functions:"]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in leaves.most_common(top)]
    return "\n".join(lines)


def _hookgate_module(frame: str) -> str | None:
    start = frame.find("(proxy/")
    if start < 0:
        return None
    return frame[start + 1 : frame.index(":", start)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--target", default="hookgate_default", choices=["bare_relay", *sorted(PIPELINES)]
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--seconds", type=int, default=12)
    args = parser.parse_args()
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if py_spy is None:
        sys.exit("py-spy is not installed (pip install -e '.[bench]')")
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        upstream = start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up)
        port = free_port()
        base = f"http://127.0.0.1:{up}/v1"
        if args.target == "bare_relay":
            proxy = start(["-m", "bench.bare_relay", str(port), base], PROXY_CPU, port)
        else:
            proxy = start_hookgate(Path(tmp), args.target, port, base, PIPELINES[args.target])
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        load = subprocess.Popen(
            [sys.executable, "-m", "bench.load", url, str(args.concurrency), "10000000",
             "1" if args.stream else "0", "--seconds", str(args.seconds + WARM_UP_S + 2)],
            cwd=ROOT, stdout=subprocess.PIPE,
            preexec_fn=lambda: os.sched_setaffinity(0, LOAD_CPUS),
        )  # fmt: skip
        out = Path(tmp) / "profile.txt"
        time.sleep(WARM_UP_S)  # one-time costs (tokenizer, analyzer, pools) are not the subject
        try:
            subprocess.run(
                [py_spy, "record", "-p", str(proxy.pid), "-d", str(args.seconds), "-r", str(RATE),
                 "--gil", "--full-filenames", "-f", "raw", "-o", str(out)],
                check=True, capture_output=True,
            )  # fmt: skip
            raw = out.read_text().replace(f"{ROOT}/", "")
            rps = float(json.loads(load.communicate()[0])["rps"])
        finally:
            stop([load, proxy, upstream])
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    kind = "stream" if args.stream else "json"
    name = (
        f"profile-{args.target}-{kind}-c{args.concurrency}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}"
    )
    (results / f"{name}.txt").write_text(raw)
    samples = sum(int(line.rpartition(" ")[2]) for line in raw.splitlines() if line)
    per_request_us = samples / RATE / (rps * args.seconds) * 1e6
    print(f"{args.target}, {kind}, concurrency {args.concurrency}: {rps:.0f} requests/s\n")
    print(summarise(raw, per_request_us))
    print(f"\ncollapsed stacks: bench/results/{name}.txt")


if __name__ == "__main__":
    main()
