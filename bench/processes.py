"""The bench's processes: where they run (cores) and how they start and stop.

On a machine with two or more cores the proxy under test is pinned to the last core, and
the fake upstream plus the load generator to the others, so the load generator does not
take the proxy's CPU. Every process a proxy starts (its span export worker) inherits the
proxy's core: the figures charge hookgate for all of its work. Their CPU time and memory
are read with ``psutil`` (see :mod:`bench.run`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPUS = sorted(os.sched_getaffinity(0))
PROXY_CPU = {CPUS[-1]}
LOAD_CPUS = set(CPUS[:-1]) or PROXY_CPU


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
    tmp: Path, name: str, port: int, upstream: str, policies: str, *, workers: int = 1,
    store_suffix: str = "", cpus: set[int] = PROXY_CPU,
) -> subprocess.Popen[bytes]:  # fmt: skip
    """``hookgate serve`` on ``port`` in front of ``upstream`` with ``policies`` (YAML, where
    ``UPSTREAM`` stands for the upstream's URL), its own SQLite store (its URL ending in
    ``store_suffix``), ``workers`` worker processes, on ``cpus`` (the proxy's core)."""
    config = tmp / f"{name}.yaml"
    config.write_text(
        f"server: {{port: {port}, reload: false, workers: {workers}}}\n"
        f"store: 'sqlite:///{tmp / name}.db{store_suffix}'\n"
        f"providers: {{up: {{base_url: '{upstream}', api_key: sk-bench}}}}\n"
        'models: {"*": [{provider: up}]}\n' + policies.replace("UPSTREAM", upstream)
    )
    command = ["-m", "hookgate", "serve", "--config", str(config), "--log-level", "WARNING"]
    return start(command, cpus, port)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """Terminate ``processes`` and wait for them (killing any that hang)."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
