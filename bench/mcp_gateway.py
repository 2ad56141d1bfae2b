"""What the MCP gateway costs a tool call: ``python -m bench.mcp_gateway [--calls N]``.

One MCP server (the tests' FastMCP server, ``tests/mcp_upstream_server.py``, over
Streamable HTTP) and two hookgate processes in front of it: one with no policies, one with
``tool_guard`` and ``pii``. The official ``mcp`` client opens one session to each of the
three and makes ``--calls`` sequential ``tools/call`` of ``lookup_contact`` (a result with
an e-mail and a phone number, as text and ``structuredContent``). Reported: p50 and p99
per call, and each as a ratio to the direct call in the same run. The proxies are pinned
to one core, the server and the client to the others, as in :mod:`bench.run`. Writes
``bench/results/mcp-<time>.json``.
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

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bench.processes import LOAD_CPUS, PROXY_CPU, ROOT, free_port, start, stop

SERVER = ROOT / "tests" / "mcp_upstream_server.py"
KEY = "bench-client-key-0123456789"
PIPELINES = {
    "gateway": "policies: []\n",
    "gateway_guard_pii": "policies:\n  - tool_guard: {deny: ['delete_*']}\n  - pii: {}\n",
}


async def calls(url: str, n: int) -> list[float]:
    """Seconds per ``tools/call`` over one session (after two warm-up calls)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for _ in range(2):
            await session.call_tool("lookup_contact", {"name": "Ann"})
        seconds = []
        for _ in range(n):
            started = time.perf_counter()
            await session.call_tool("lookup_contact", {"name": "Ann"})
            seconds.append(time.perf_counter() - started)
        return seconds


def run(n: int) -> dict[str, Any]:
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            port = free_port()
            args = [str(SERVER), "--port", str(port), "--log", f"{tmp}/calls.jsonl"]
            processes.append(start(args, LOAD_CPUS, port))
            direct = f"http://127.0.0.1:{port}/mcp"
            urls = {"direct": direct}
            for name, policies in PIPELINES.items():
                proxy = free_port()
                config = Path(tmp) / f"{name}.yaml"
                config.write_text(
                    f"server: {{port: {proxy}, reload: false}}\n"
                    f"store: 'sqlite:///{tmp}/{name}.db'\nkeys: {{static: ['{KEY}']}}\n"
                    "providers: {up: {base_url: 'http://127.0.0.1:9/v1'}}\n"
                    'models: {"*": [{provider: up}]}\n'
                    f"mcp_servers: {{crm: {{url: '{direct}'}}}}\n{policies}"
                )
                command = ["-m", "hookgate", "serve", "--config", str(config)]
                processes.append(start([*command, "--log-level", "WARNING"], PROXY_CPU, proxy))
                urls[name] = f"http://127.0.0.1:{proxy}/mcp/crm"
            return {name: asyncio.run(calls(url, n)) for name, url in urls.items()}
        finally:
            stop(processes)


def summarize(results: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    def figures(seconds: list[float]) -> tuple[float, float]:
        ordered = sorted(seconds)
        return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99) - 1] * 1000

    base50, base99 = figures(results["direct"])
    report = {}
    for name, seconds in results.items():
        p50, p99 = figures(seconds)
        report[name] = {"p50_ms": p50, "p99_ms": p99, "p50_ratio": p50 / base50,
                        "p99_ratio": p99 / base99}  # fmt: skip
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    report = summarize(run(args.calls))
    print(f"{'target':<20} {'p50 ms':>8} {'p99 ms':>8} {'p50 x':>7} {'p99 x':>7}")
    for name, row in report.items():
        print(f"{name:<20} {row['p50_ms']:>8.3f} {row['p99_ms']:>8.3f} "
              f"{row['p50_ratio']:>7.2f} {row['p99_ratio']:>7.2f}")  # fmt: skip
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    out = ROOT / "bench" / "results" / f"mcp-{stamp}.json"
    out.write_text(json.dumps({"calls": args.calls, "report": report}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
