"""Side by side on one core: the bare relay, hookgate with no policies, the shipped default.

Run: ``python -m bench.side_by_side [--rounds 5] [--seconds 6] [--compare TREE]
[--profile] [--load wrk|python]``.

Starts the fake upstream and four servers once — (b) the bare aiohttp relay
(:mod:`bench.bare_relay`), (c) hookgate with ``policies: []`` and (d) hookgate with the
policies of the shipped ``policies/default.yaml`` (``tracing`` exporting every span over
OTLP/HTTP to the fake upstream's sink, ``fallback``) and (e) those policies as shipped
(no OTLP endpoint: spans made, not exported) — each on the proxy's core
(:mod:`bench.processes`), and loads them in turn, round after round: concurrency 32 for
``--seconds`` (requests per second and CPU time per request), then 400 requests one at a
time (p50). Each round's throughput is a ratio to the bare relay's in the same round, so
a shared machine's drift between rounds cancels; the table gives every round's ratio,
the median and the spread (min-max). ``--compare`` runs (c), (d) and (e) of another source
tree too (``git worktree add /tmp/base <commit>``), in the same rounds: before and after
a change in one run. With ``--profile`` it then runs :mod:`bench.profile` on (c), (d) and (e)
(CPU µs per request by area). On a 2-core machine the four servers share one core and the
load generator and upstream the other; the servers are loaded one at a time. For a figure
no other load on the machine can move, :mod:`bench.instructions` counts instructions per
request. The load is ``wrk`` in front of :mod:`bench.lean_upstream` when ``wrk`` is
installed (the load generator and the upstream then cost a few µs a request, so the bare
relay, not the load core, is the limit), else :mod:`bench.load` in front of
:mod:`bench.upstream`. Writes ``bench/results/side-<time>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import wrk
from bench.processes import LOAD_CPUS, PROXY_CPU, ROOT, free_port, start, start_hookgate, stop
from bench.run import cpu_seconds, load

SHIPPED_DEFAULT = "policies:\n  - tracing: {endpoint: 'UPSTREAM/traces'}\n  - fallback: {}\n"
"""The policies of ``policies/default.yaml``, with the span export pointed at the sink
(shipped, ``tracing: {}`` exports when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set)."""
SHIPPED_AS_IS = "policies:\n  - tracing: {}\n  - fallback: {}\n"
"""The policies of ``policies/default.yaml`` as shipped: with no OTLP endpoint configured,
spans are made (trace ids in the audit log, ``traceparent`` upstream) but not exported."""
TARGETS = {
    "hookgate": "policies: []\n",
    "hookgate_shipped": SHIPPED_DEFAULT,
    "hookgate_shipped_as_is": SHIPPED_AS_IS,
}
C1_REQUESTS = 400
C1_SECONDS = 2.0
"""How long ``wrk`` sends one request at a time (a few thousand requests)."""


def measure(url: str, pid: int, seconds: float, tmp: Path | None) -> dict[str, float]:
    """Throughput and CPU µs per request at concurrency 32, then p50 one at a time; by
    ``wrk`` with ``tmp`` (its script's directory), else by :mod:`bench.load`."""
    if tmp is not None:
        wrk.run(url, 32, 1.0, tmp, LOAD_CPUS)  # warm-up
        before = cpu_seconds(pid)
        c32 = wrk.run(url, 32, seconds, tmp, LOAD_CPUS)
        used = cpu_seconds(pid) - before
        c1 = wrk.run(url, 1, C1_SECONDS, tmp, LOAD_CPUS)
        return {"rps": c32["rps"], "cpu_us": used / c32["requests"] * 1e6,
                "p99_c32_ms": c32["p99_ms"], "p50_c1_ms": c1["p50_ms"],
                "errors": c32["errors"] + c1["errors"]}  # fmt: skip
    load(url, 32, 300, stream=False)  # warm-up
    before = cpu_seconds(pid)
    c32 = load(url, 32, 100_000_000, False, seconds=seconds)
    used = cpu_seconds(pid) - before
    c1 = load(url, 1, C1_REQUESTS, stream=False)
    return {
        "rps": c32["rps"],
        "cpu_us": used / c32["requests"] * 1e6,
        "p99_c32_ms": c32["p99_ms"],
        "p50_c1_ms": c1["p50_ms"],
        "errors": c32["errors"] + c1["errors"],
    }


def run(
    rounds: int, seconds: float, compare: Path | None = None, tool: str = "python"
) -> dict[str, list[dict[str, float]]]:
    """Every round's figures per target (``bare_relay``, then each of :data:`TARGETS`;
    with ``compare``, each of them also as the hookgate of that source tree, named
    ``<target>@compare``), loaded by ``tool`` (``wrk``, in front of
    :mod:`bench.lean_upstream`; or ``python``, :mod:`bench.load` in front of
    :mod:`bench.upstream`)."""
    processes: list[subprocess.Popen[bytes]] = []
    targets = [(name, policies, None) for name, policies in TARGETS.items()]
    if compare is not None:
        targets += [(f"{name}@compare", policies, compare) for name, policies in TARGETS.items()]
    by_target: dict[str, list[dict[str, float]]] = {"bare_relay": []}
    by_target.update({name: [] for name, _, _ in targets})
    with tempfile.TemporaryDirectory() as tmp:
        try:
            up = free_port()
            upstream_module = "bench.lean_upstream" if tool == "wrk" else "bench.upstream"
            processes.append(start(["-m", upstream_module, str(up)], LOAD_CPUS, up))
            by_wrk = Path(tmp) if tool == "wrk" else None
            upstream = f"http://127.0.0.1:{up}/v1"
            servers: dict[str, tuple[str, int]] = {}
            port = free_port()
            processes.append(
                start(["-m", "bench.bare_relay", str(port), upstream], PROXY_CPU, port)
            )
            servers["bare_relay"] = (f"http://127.0.0.1:{port}/v1/chat/completions", port)
            for name, policies, tree in targets:
                port = free_port()
                with _python_path(tree):
                    processes.append(
                        start_hookgate(Path(tmp), name.replace("@", "-"), port, upstream, policies)
                    )
                servers[name] = (f"http://127.0.0.1:{port}/v1/chat/completions", port)
            pids = {name: p.pid for name, p in zip(servers, processes[1:], strict=True)}
            for round_ in range(rounds):
                direct = (
                    load(f"{upstream}/chat/completions", 1, C1_REQUESTS, stream=False)
                    if by_wrk is None
                    else wrk.run(f"{upstream}/chat/completions", 1, C1_SECONDS, by_wrk, LOAD_CPUS)
                )
                for name, (url, _) in servers.items():
                    by_target[name].append(measure(url, pids[name], seconds, by_wrk))
                    by_target[name][-1]["direct_p50_c1_ms"] = direct["p50_ms"]
                print(f"round {round_ + 1}/{rounds}: " + summary_line(by_target, -1),
                      file=sys.stderr)  # fmt: skip
        finally:
            stop(processes)
    return by_target


@contextlib.contextmanager
def _python_path(tree: Path | None) -> Iterator[None]:
    """Processes started inside import hookgate from ``tree``'s ``proxy`` directory."""
    if tree is None:
        yield
        return
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree / "proxy")
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def summary_line(by_target: dict[str, list[dict[str, float]]], index: int) -> str:
    bare = by_target["bare_relay"][index]["rps"]
    return ", ".join(
        f"{name} {rows[index]['rps']:.0f} rps ({rows[index]['rps'] / bare:.2f})"
        for name, rows in by_target.items()
    )


def table(by_target: dict[str, list[dict[str, float]]]) -> tuple[str, dict[str, Any]]:
    """The printed table and its figures: per target the median and range of the rps
    ratio to the bare relay (per round), p50 at concurrency 1 and what it adds over the
    upstream called directly, CPU µs per request."""
    bare = by_target["bare_relay"]
    lines = [
        f"{'target':<26} {'rps':>6} {'/bare median':>12} {'/bare min-max':>14} "
        f"{'p50 c1 ms':>9} {'+p50 ms':>8} {'cpu µs':>7}  /bare per round",
        "-" * 118,
    ]
    figures: dict[str, Any] = {}
    for name, rows in by_target.items():
        ratio = [r["rps"] / b["rps"] for r, b in zip(rows, bare, strict=True)]
        added = [r["p50_c1_ms"] - r["direct_p50_c1_ms"] for r in rows]
        figures[name] = {
            "rps_median": statistics.median(r["rps"] for r in rows),
            "ratio_median": statistics.median(ratio),
            "ratio_min": min(ratio),
            "ratio_max": max(ratio),
            "p50_c1_ms_median": statistics.median(r["p50_c1_ms"] for r in rows),
            "added_p50_c1_ms_median": statistics.median(added),
            "cpu_us_median": statistics.median(r["cpu_us"] for r in rows),
            "rounds": rows,
        }
        f = figures[name]
        lines.append(
            f"{name:<26} {f['rps_median']:6.0f} {f['ratio_median']:12.2f} "
            f"{f['ratio_min']:6.2f}-{f['ratio_max']:<7.2f} {f['p50_c1_ms_median']:9.3f} "
            f"{f['added_p50_c1_ms_median']:8.3f} {f['cpu_us_median']:7.0f}  "
            + " ".join(f"{x:.2f}" for x in ratio)
        )
    return "\n".join(lines), figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument(
        "--profile", action="store_true", help="then CPU µs per request by area (py-spy)"
    )
    parser.add_argument(
        "--compare",
        type=Path,
        help="another source tree (e.g. `git worktree add /tmp/base <commit>`): its hookgate "
        "runs beside this one's in the same rounds (before/after in one run)",
    )
    wrk.add_load_option(parser, ", with bench.lean_upstream")
    args = parser.parse_args()
    by_target = run(args.rounds, args.seconds, args.compare, args.load)
    text, figures = table(by_target)
    print(text)
    print(
        "\nrps and cpu µs at concurrency 32 (cpu: the proxy and its export worker, user + "
        "system, per request); p50 at concurrency 1, +p50: over the upstream called "
        "directly in the same round; medians over rounds"
    )
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}"
    path = out_dir / f"side-{stamp}.json"
    path.write_text(
        json.dumps({"rounds": args.rounds, "seconds": args.seconds, "load": args.load, **figures})
    )
    print(f"written to {path.relative_to(ROOT)}")
    if args.profile:
        for target in TARGETS:
            subprocess.run(
                [sys.executable, "-m", "bench.profile", "--target", target], cwd=ROOT, check=True
            )


if __name__ == "__main__":
    main()
