"""Where a hookgate target spends its CPU under load: a py-spy profile, summarised.

Run: ``python -m bench.profile [--target hookgate_default] [--concurrency 32] [--stream]
[--seconds 12] [--rate 250]``. Starts the fake upstream and the target exactly as
:mod:`bench.run` does (same cores), drives load at it from a separate process, and samples
the proxy with ``py-spy record --gil`` (only the thread holding the GIL is sampled, so
idle time and the exporter's waits are not counted; the SQLite and shipper threads' Python
work is). The proxy's CPU time over the sampling window (user + system, every thread, read
with ``psutil``) divided by the requests served is shared out by the samples: µs per
request by area. Three tables: by the request's *work* (:data:`WORK`: auth, policy-set
selection, headers, body parsing, audit, metrics, tracing, the relay itself...), *self*
time by library or hookgate module (the innermost frame's, so time in aiohttp called from
our provider counts as aiohttp), and *inclusive* time of each hookgate module, plus the
hottest leaf functions. The span export worker's CPU per request is printed apart (it is
another process). The raw collapsed stacks are kept in ``bench/results/`` for flame
graphs.
"""

from __future__ import annotations

import argparse
import contextlib
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

import psutil

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
from bench.side_by_side import TARGETS

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
    ("proxy/hookgate/telemetry/tracing.py", "tracing: hookgate"),
    ("proxy/hookgate/policies/tracing.py", "tracing: hookgate"),
    ("proxy/hookgate/telemetry/semconv.py", "tracing: hookgate"),
    ("prometheus_client/", "metrics"),
    ("proxy/hookgate/telemetry/metrics.py", "metrics"),
    ("proxy/hookgate/policies/budget.py", "budget"),
    ("proxy/hookgate/budgets/", "budget"),
    ("proxy/hookgate/policies/rate_limit.py", "rate_limit"),
    ("proxy/hookgate/policies/fallback.py", "fallback"),
    ("proxy/hookgate/resilience/", "fallback"),
    ("proxy/hookgate/policies/pii.py", "pii"),
    ("proxy/hookgate/redaction/", "pii"),
    ("presidio", "pii"),
    ("spacy", "pii"),
    ("proxy/hookgate/store/", "store (SQLite: audit, ledger)"),
    ("sqlite3", "store (SQLite: audit, ledger)"),
    ("aiohttp/web", "aiohttp server"),
    ("aiohttp/client", "aiohttp client"),
    ("aiohttp/connector", "aiohttp client"),
    ("aiohttp/", "aiohttp (shared)"),
    ("multidict", "aiohttp (shared)"),
    ("yarl", "aiohttp (shared)"),
    ("proxy/hookgate/", "hookgate core (routes, pipeline, wire)"),
    ("/asyncio/", "event loop"),
    ("/uvloop/", "event loop"),
    ("/threading.py", "threads"),
    ("/concurrent/", "threads"),
)


WORK = (
    # (substring of the innermost hookgate frame, area of the request's work); first match
    ("/server/auth.py", "auth"),
    ("/server/static_keys.py", "auth"),
    ("/server/jwt_auth.py", "auth"),
    ("grants", "grants look-ups"),
    ("/config/policy_sets.py", "policy-set selection"),
    ("select_set ", "policy-set selection"),
    ("/wire/headers.py", "header handling"),
    ("/providers/scrub.py", "header handling"),
    ("session_header ", "header handling"),
    ("label_header ", "header handling"),
    ("response_headers ", "header handling"),
    ("/providers/catalog.py", "catalogue/model checks"),
    ("/providers/routing.py", "catalogue/model checks"),
    ("check_model ", "catalogue/model checks"),
    ("model_call_of ", "catalogue/model checks"),
    ("/server/live.py", "live-traffic bookkeeping"),
    ("returned_calls", "returned-tool-call check"),
    ("returned_check ", "returned-tool-call check"),
    ("read_json ", "body parse/serialize"),
    ("parse_object ", "body parse/serialize"),
    ("json_object ", "body parse/serialize"),
    ("/pipeline/types.py", "body parse/serialize"),
    ("/wire/usage.py", "body parse/serialize"),
    ("portable_ids ", "body parse/serialize"),
    ("read_body ", "relay"),  # awaits aiohttp's reading of the body, as a bare relay does
    ("audit_record ", "audit"),
    ("/store/", "audit"),
    ("/telemetry/metrics.py", "metrics"),
    ("/telemetry/", "tracing"),
    ("/policies/tracing.py", "tracing"),
    ("/policies/fallback.py", "fallback"),
    ("/policies/continuation.py", "fallback"),
    ("/resilience/", "fallback"),
    ("/policies/", "other policies"),
    ("/budgets/", "other policies"),
    ("/providers/http.py", "relay"),
    ("/providers/upstream_errors.py", "relay"),
    ("/providers/translating.py", "relay"),
    ("/providers/terminal.py", "relay"),
    ("/cli.py", "relay"),
    ("/__main__.py", "relay"),
)
"""Where a sample's CPU goes, by the request's work: the innermost hookgate frame decides
(with what it calls in libraries: OpenTelemetry under tracing, prometheus-client under
metrics, SQLite under audit). Under ``relay`` (hookgate's provider, or no hookgate frame
at all: aiohttp's server, the event loop) it is split by the library running: the
aiohttp client, or the aiohttp server and event loop — all a bare relay has. The rest
(routes, the call's bookkeeping, the pipeline, the error middleware) is ``request
bookkeeping``."""


def work(frames: list[str]) -> str:
    """The area of the request's work a sample belongs to (see :data:`WORK`)."""
    inner = next((f for f in reversed(frames) if "proxy/hookgate/" in f), None)
    name = "relay"
    if inner is not None:
        name = next((n for needle, n in WORK if needle in inner), "request bookkeeping")
    if name != "relay":
        return name
    client = any("aiohttp/client" in f or "aiohttp/connector" in f for f in frames)
    if client:
        return "relay: aiohttp client"
    leaf = frames[-1]
    if inner is not None and "proxy/hookgate/" in leaf and "/cli.py" not in leaf:
        return "relay: hookgate's provider"
    return "relay: aiohttp server, event loop"


def by_work(raw: str) -> Counter[str]:
    """Samples per area of the request's work (see :func:`work`)."""
    out: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if stack and count_text.isdigit():
            out[work(stack.split(";"))] += int(count_text)
    return out


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
        lines.append(f"{per_request_us:.0f} µs of CPU per request, shared by samples")
    lines += ["", "by the request's work (see bench.profile.WORK):"]
    for name, n in by_work(raw).most_common():
        us = "" if per_request_us is None else f"  {n / total * per_request_us:5.0f} µs"
        lines.append(f"  {n / total:6.1%}{us}  {name}")
    lines += ["", "self time by library or module:"]
    for name, n in by_area.most_common():
        us = "" if per_request_us is None else f"  {n / total * per_request_us:5.0f} µs"
        lines.append(f"  {n / total:6.1%}{us}  {name}")
    lines += ["", "inclusive time of hookgate modules:"]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in inclusive.most_common(top)]
    lines += ["", "hottest leaf functions:"]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in leaves.most_common(top)]
    return "\n".join(lines)


def _cpu(pid: int) -> tuple[float, float]:
    """User plus system CPU seconds of process ``pid`` (all its threads), and of its
    children (the span export worker)."""
    process = psutil.Process(pid)
    own = process.cpu_times()
    children = 0.0
    for child in process.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            times = child.cpu_times()
            children += times.user + times.system
    return own.user + own.system, children


def _hookgate_module(frame: str) -> str | None:
    start = frame.find("proxy/hookgate/")
    if start < 0:
        return None
    return frame[start : frame.index(":", start)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pipelines = {**PIPELINES, **TARGETS}
    parser.add_argument(
        "--target", default="hookgate_default", choices=["bare_relay", *sorted(pipelines)]
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--seconds", type=int, default=12)
    parser.add_argument("--rate", type=int, default=RATE, help="samples per second")
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
            proxy = start_hookgate(Path(tmp), args.target, port, base, pipelines[args.target])
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        load = subprocess.Popen(
            [sys.executable, "-m", "bench.load", url, str(args.concurrency), "10000000",
             "1" if args.stream else "0", "--seconds", str(args.seconds + WARM_UP_S + 2)],
            cwd=ROOT, stdout=subprocess.PIPE,
            preexec_fn=lambda: os.sched_setaffinity(0, LOAD_CPUS),
        )  # fmt: skip
        out = Path(tmp) / "profile.txt"
        time.sleep(WARM_UP_S)  # one-time costs (tokenizer, analyzer, pools) are not the subject
        before = _cpu(proxy.pid)
        try:
            subprocess.run(
                [py_spy, "record", "-p", str(proxy.pid), "-d", str(args.seconds),
                 "-r", str(args.rate), "--gil", "--full-filenames", "-f", "raw", "-o", str(out)],
                check=True, capture_output=True,
            )  # fmt: skip
            after = _cpu(proxy.pid)
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
    requests = rps * args.seconds
    per_request_us = (after[0] - before[0]) / requests * 1e6
    print(f"{args.target}, {kind}, concurrency {args.concurrency}: {rps:.0f} requests/s")
    print(
        f"CPU per request: {per_request_us:.0f} µs in the proxy process (shared out below by "
        f"its samples), {(after[1] - before[1]) / requests * 1e6:.0f} µs in its span export "
        "worker\n"
    )
    print(summarise(raw, per_request_us))
    print(f"\ncollapsed stacks: bench/results/{name}.txt")


if __name__ == "__main__":
    main()
