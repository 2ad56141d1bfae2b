"""What budgets cost per request: no budget, the one-process ledger, the shared SQLite one.

Run: ``python -m bench.ledger [--quick] [--before DIR]`` (from the repository root, in the
venv). Each target is ``hookgate serve`` on the proxy's core (:mod:`bench.processes`) with
the same fake upstream and load generator as :mod:`bench.run`:

* ``no_budget``: no policies;
* ``memory``: ``budget`` and ``rate_limit`` charged on every request, the SQLite store kept
  by this one process (:class:`~hookgate.budgets.ledger.MemoryLedger`: the default);
* ``shared``: the same policies on a store URL ending in ``?shared=true``: reservations,
  settlements and rate counts in the SQLite file (:mod:`hookgate.store.sqlite_budgets`),
  as processes sharing one file run them;
* ``before`` (with ``--before DIR``): ``memory``'s config served by the hookgate source at
  ``DIR`` (a ``proxy/`` directory, e.g. from ``git archive main proxy``), to compare the
  one-process path before and after a change in the same run.

JSON and streamed requests at concurrency 1 and 32; each figure also as a ratio to
``memory``, measured in the same run, since absolute numbers on a shared machine are noise.

Then the budget's own work alone, in process (``--micro-only`` runs only this part): CPU
time per request of what the two policies ask of the ledger and the limiter (load,
reserve, remaining, a rate hit, settle), the store's thread included, for ``memory``,
``shared`` and ``before``, one request at a time and 32 at once. CPU time, not wall time,
so that other processes on the machine disturb it little.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.processes import LOAD_CPUS, free_port, start, start_hookgate, stop
from bench.run import cpu_seconds, load

POLICIES = (
    "pricing: {bench-model: {input: 1.0, output: 2.0}}\n"
    "policies:\n"
    "  - budget: {limits: [{scope: model, window: day, usd: 1000000}]}\n"
    "  - rate_limit: {limits: [{scope: key, rpm: 100000000}]}\n"
)
TARGETS = {
    "no_budget": ("", "policies: []\n"),
    "memory": ("", POLICIES),
    "shared": ("?shared=true", POLICIES),
}
"""name: (store URL suffix, YAML)."""


@contextlib.contextmanager
def python_path(path: str | None) -> Iterator[None]:
    """Start processes with ``PYTHONPATH=path`` (None: as this one)."""
    saved = os.environ.get("PYTHONPATH")
    if path is not None:
        os.environ["PYTHONPATH"] = path
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def start_proxy(
    tmp: Path, name: str, upstream: str, suffix: str, policies: str
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = start_hookgate(tmp, name, port, upstream, policies, store_suffix=suffix)
    return process, f"http://127.0.0.1:{port}/v1/chat/completions"


async def budget_work(url: str, count: int, concurrency: int) -> dict[str, float]:
    """CPU and wall µs per request of the budget and rate_limit policies' ledger calls."""
    from hookgate.budgets.ledger import UsageRow
    from hookgate.budgets.limits import Limit, counters
    from hookgate.budgets.rates import RateCheck
    from hookgate.store.open import open_budgets, open_store

    store = open_store(url)
    ledger, rates = open_budgets(store)
    limits = (Limit("model", "day", 1e6, None),)
    gate = asyncio.Semaphore(concurrency)

    async def request(i: int) -> None:
        async with gate:
            charged = counters(limits, {"model": "bench-model"}, time.time())
            await ledger.load(charged)
            assert await ledger.reserve(f"r{i}", charged, 0.001, 500) is None
            await ledger.remaining(charged)
            assert (await rates.hit([RateCheck("key=k|rpm", 10**9, 1)])).allowed
            row = UsageRow(time.time(), f"r{i}", "bench-model", 300, 100, 0.0005, key_id="k")
            await ledger.settle(f"r{i}", charged, row)

    await asyncio.gather(*(request(-i) for i in range(1, 200)))  # warm-up
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(request(i) for i in range(count)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await store.close()
    return {"cpu_us": cpu / count * 1e6, "wall_us": wall / count * 1e6}


def micro(tmp: Path, before: str | None, count: int) -> None:
    """Run :func:`budget_work` for each ledger, each in a process of its own."""
    kinds = {"memory": ("", None), "shared": ("?shared=true", None)}
    if before:
        kinds["before"] = ("", str(Path(before).resolve()))
    print(f"\nbudget work alone, {count} requests: CPU (wall) us per request; CPU vs memory")
    for concurrency in (1, 32):
        figures: dict[str, dict[str, float]] = {}
        for name, (suffix, path) in kinds.items():
            url = f"sqlite:///{tmp / f'micro-{name}-{concurrency}.db'}{suffix}"
            with python_path(path):
                out = subprocess.run(
                    [sys.executable, "-m", "bench.ledger", "--work", url, str(count),
                     str(concurrency)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
            figures[name] = json.loads(out.stdout)
        base = figures["memory"]["cpu_us"]
        print(
            f"  concurrency {concurrency:>2}: "
            + ", ".join(
                f"{name} {f['cpu_us']:.0f} ({f['wall_us']:.0f}) {f['cpu_us'] / base:.2f}"
                for name, f in figures.items()
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument("--before", help="a hookgate proxy/ directory to compare with")
    parser.add_argument("--micro-only", action="store_true", help="only the budget work alone")
    parser.add_argument("--work", nargs=3, help=argparse.SUPPRESS)  # URL COUNT CONCURRENCY
    args = parser.parse_args()
    if args.work:
        url, count, concurrency = args.work
        print(json.dumps(asyncio.run(budget_work(url, int(count), int(concurrency)))))
        return
    if args.micro_only:
        with tempfile.TemporaryDirectory() as tmp:
            micro(Path(tmp), args.before, 2000 if args.quick else 20000)
        return
    n1, n32 = (300, 3000) if args.quick else (2000, 20000)
    targets = dict(TARGETS)
    if args.before:
        targets["before"] = TARGETS["memory"]
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        up = free_port()
        processes.append(start(["-m", "bench.upstream", str(up)], LOAD_CPUS, up))
        upstream = f"http://127.0.0.1:{up}/v1"
        urls: dict[str, str] = {}
        pids: dict[str, int] = {}
        try:
            for name, (suffix, policies) in targets.items():
                path = str(Path(args.before).resolve()) if name == "before" else None
                with python_path(path):
                    process, urls[name] = start_proxy(Path(tmp), name, upstream, suffix, policies)
                processes.append(process)
                pids[name] = process.pid
            results: dict[str, dict[str, dict[str, float]]] = {}
            for scenario, concurrency, count, stream in (
                ("json_c1", 1, n1, False),
                ("json_c32", 32, n32, False),
                ("stream_c1", 1, n1, True),
                ("stream_c32", 32, n32, True),
            ):
                results[scenario] = {}
                for name, url in urls.items():
                    load(url, concurrency, max(100, count // 10), stream)  # warm-up
                    before = cpu_seconds(pids[name])
                    result = load(url, concurrency, count, stream)
                    used = cpu_seconds(pids[name]) - before
                    result["cpu_us_per_request"] = used / result["requests"] * 1e6
                    results[scenario][name] = result
        finally:
            stop(processes)
    print(f"{'scenario':<11} {'target':<10} {'req/s':>8} {'p50 ms':>7} {'CPU us':>7}"
          f"  {'req/s, p50, CPU vs memory':>26}")  # fmt: skip
    for scenario, by_target in results.items():
        base = by_target["memory"]
        for name, r in by_target.items():
            print(
                f"{scenario:<11} {name:<10} {r['rps']:>8.0f} {r['p50_ms']:>7.2f} "
                f"{r['cpu_us_per_request']:>7.0f}  {r['rps'] / base['rps']:>8.2f} "
                f"{r['p50_ms'] / base['p50_ms']:>8.2f} "
                f"{r['cpu_us_per_request'] / base['cpu_us_per_request']:>8.2f}"
            )
            if r["errors"]:
                print(f"  ({r['errors']:.0f} errors)")
    with tempfile.TemporaryDirectory() as tmp:
        micro(Path(tmp), args.before, 2000 if args.quick else 20000)


if __name__ == "__main__":
    main()
