"""Instructions per request, counted by callgrind: a measure a shared machine cannot blur.

Run: ``python -m bench.instructions [--requests 300] [--concurrency 8] [--stream]
[--target bare_relay --target hookgate ...]`` (needs ``valgrind``).

Requests per second and CPU time move with whatever else the machine runs (2x within the
hour on a shared 2-core host); the number of instructions a server executes to serve a
request does not (two runs agree within about 1%). Each target runs under
``valgrind --tool=callgrind`` with counting off while it starts and warms up (200
requests), then on for ``--requests`` requests at ``--concurrency``, every thread of the
process counted (the audit log's SQLite thread, the span shipper's), child processes not
(the span export worker runs natively: :mod:`bench.profile` reports its CPU). An
instruction is not a nanosecond (a cache miss or a system call costs more than it
counts), so this is for comparing one build of the code with another and targets with
each other, beside the timed figures of :mod:`bench.side_by_side`. Under callgrind the
server runs ~50x slower, so the audit log commits smaller batches than at full speed: its
share is overstated a little.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.processes import LOAD_CPUS, PROXY_CPU, ROOT, free_port, start, stop
from bench.run import PIPELINES, load
from bench.side_by_side import TARGETS

WARM_UP = 200


def count(
    args: list[str], url: str, pid_dir: Path, requests: int, concurrency: int, stream: bool
) -> float:
    """Instructions per request of the server ``args`` starts (listening for ``url``)."""
    out = pid_dir / "callgrind.out"
    process = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p",
         "--dump-instr=no", "--separate-threads=no", sys.executable, *args],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.sched_setaffinity(0, PROXY_CPU),
    )  # fmt: skip
    try:
        port = int(url.split(":")[2].split("/")[0])
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{args} did not start under valgrind") from None
                time.sleep(0.5)
        load(url, concurrency, WARM_UP, stream)
        control = ["callgrind_control"]
        subprocess.run([*control, "-i", "on", str(process.pid)], check=True, capture_output=True)
        load(url, concurrency, requests, stream)
        subprocess.run([*control, "-i", "off", str(process.pid)], check=True, capture_output=True)
        subprocess.run([*control, "-d", str(process.pid)], check=True, capture_output=True)
    finally:
        process.terminate()
        process.wait(120)
    total = 0
    for dump in pid_dir.glob("callgrind.out.*"):
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("totals:"):
                total += int(line.split()[1])
                break
        dump.unlink()
    return total / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pipelines = {**PIPELINES, **TARGETS}
    parser.add_argument(
        "--target", action="append", choices=["bare_relay", *sorted(pipelines)],
        help="repeatable; default: bare_relay and each of bench.side_by_side's targets",
    )  # fmt: skip
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    targets = args.target or ["bare_relay", *TARGETS]
    processes: list[subprocess.Popen[bytes]] = []
    counted: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            up = free_port()
            processes.append(start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up))
            upstream = f"http://127.0.0.1:{up}/v1"
            for target in targets:
                port = free_port()
                if target == "bare_relay":
                    command = ["-m", "bench.bare_relay", str(port), upstream]
                else:
                    config = Path(tmp) / f"{target}.yaml"
                    config.write_text(
                        f"server: {{port: {port}, reload: false}}\n"
                        f"store: 'sqlite:///{tmp}/{target}.db'\n"
                        f"providers: {{up: {{base_url: '{upstream}', api_key: sk-bench}}}}\n"
                        'models: {"*": [{provider: up}]}\n'
                        + pipelines[target].replace("UPSTREAM", upstream)
                    )
                    command = ["-m", "hookgate", "serve", "--config", str(config),
                               "--log-level", "WARNING"]  # fmt: skip
                url = f"http://127.0.0.1:{port}/v1/chat/completions"
                counted[target] = count(
                    command, url, Path(tmp), args.requests, args.concurrency, args.stream
                )
                print(f"{target:<22} {counted[target] / 1000:8.0f}k instructions per request",
                      flush=True)  # fmt: skip
        finally:
            stop(processes)
    if "bare_relay" in counted:
        print("\nas a ratio of the bare relay's (its instructions ÷ each target's):")
        for target, n in counted.items():
            print(f"  {target:<22} {counted['bare_relay'] / n:5.2f}")


if __name__ == "__main__":
    main()
