"""Load by ``wrk`` (Debian package ``wrk``): C, one thread, a few µs of CPU per request.

On a machine whose cores the load generator shares with what it measures, the Python load
generator (:mod:`bench.load`) takes several times more CPU per request than ``wrk``;
:func:`run` gives the same figures as :func:`bench.run.load` from ``wrk``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from pathlib import Path

from bench.load import BODY

SCRIPT = """wrk.method = "POST"
wrk.body = [[%s]]
wrk.headers["Content-Type"] = "application/json"
"""
"""Makes ``wrk`` send :data:`bench.load.BODY`, the Python load generator's request."""
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def add_load_option(parser: argparse.ArgumentParser, note: str = "") -> None:
    """``--load wrk|python``: wrk when it is installed, else :mod:`bench.load`."""
    parser.add_argument(
        "--load",
        choices=("wrk", "python"),
        default="wrk" if shutil.which("wrk") is not None else "python",
        help=f"load generator (default: wrk when installed{note})",
    )


def run(
    url: str, concurrency: int, seconds: float, tmp: Path, cpus: set[int] | None = None
) -> dict[str, float]:
    """``seconds`` (whole: wrk takes no fraction) of non-streamed requests at
    ``concurrency`` (on ``cpus``, when given):
    requests/s, p50 and p99 ms, requests and errors (non-2xx answers and socket errors)."""
    script = tmp / "post.lua"
    script.write_text(SCRIPT % BODY.decode())
    duration = f"-d{max(1, round(seconds))}s"
    text = subprocess.run(
        ["wrk", "-t1", f"-c{concurrency}", duration, "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True,
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    ).stdout  # fmt: skip
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)$", text, re.M)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)$", text, re.M)
    done = re.search(r"^\s+(\d+) requests in", text, re.M)
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    assert p50 and p99 and done and rps, text
    errors = sum(int(n) for n in re.findall(r"(?:Non-2xx or 3xx responses|connect|read|"
                                            r"write|timeout)\s*:?\s*(\d+)", text))  # fmt: skip
    return {"rps": float(rps[1]), "p50_ms": float(p50[1]) * UNITS[p50[2]],
            "p99_ms": float(p99[1]) * UNITS[p99[2]], "requests": float(done[1]),
            "errors": float(errors)}  # fmt: skip
