"""What hookgate adds to a Codex CLI tool round trip: ``python -m bench.codex_overhead``.

``codex exec`` (the pinned npm release under ``.venv/clients``, or ``--codex``), offline,
asked to print an e-mail address with ``echo``: two model calls around one shell command,
against :mod:`bench.codex_upstream` (its own process) straight and through ``hookgate
serve`` with ``- pii: {}`` (pinned to the proxy's core), over the WebSocket mode (Codex's
built-in provider at ``openai_base_url``) and over HTTP (a provider with
``supports_websockets = false``). One untimed run of each first (hookgate loads its PII
models on its first request); then ``--reps`` runs of each, interleaved. Reported: the p50
wall time of each and its ratio to straight over the same transport. Appends its figures to
``bench/results/codex-<time>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.processes import LOAD_CPUS, ROOT, free_port, start, start_hookgate, stop

CODEX = ROOT / ".venv" / "clients" / "node_modules" / ".bin" / "codex"
EMAIL = "jane.doe@example.com"
OFFLINE = (
    'check_for_update_on_startup = false\nweb_search = "disabled"\n'
    "[analytics]\nenabled = false\n"
    "[features]\nplugins = false\napps = false\nshell_snapshot = false\n"
)


def config(url: str, websocket: bool) -> str:
    if websocket:
        return f'openai_base_url = "{url}"\n{OFFLINE}'
    return (
        f'model_provider = "bench"\n{OFFLINE}'
        f'[model_providers.bench]\nname = "bench"\nbase_url = "{url}"\n'
        'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\nsupports_websockets = false\n'
    )


def run(codex: Path, url: str, websocket: bool, home: Path) -> float:
    """One ``codex exec`` round trip; its wall time in seconds."""
    (home / ".codex").mkdir(parents=True)
    (home / "work").mkdir()
    (home / ".codex" / "config.toml").write_text(config(url, websocket))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "CODEX_HOME": str(home / ".codex"), "OPENAI_API_KEY": "sk-bench",
           "NO_PROXY": "127.0.0.1,localhost"}  # fmt: skip
    prompt = f"Print my e-mail address {EMAIL} with echo."
    started = time.perf_counter()
    done = subprocess.run(
        [str(codex), "exec", "--skip-git-repo-check", "--model", "gpt-5.1",
         "--dangerously-bypass-approvals-and-sandbox", prompt],
        env=env, cwd=home / "work", stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0 or f"Your address is {EMAIL}." not in done.stdout:
        raise RuntimeError(f"codex failed: {done.stdout}\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--codex", type=Path, default=CODEX)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hookgate-codex-bench-"))
    upstream_port, proxy_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    processes = [start(["-m", "bench.codex_upstream", str(upstream_port)], LOAD_CPUS,
                       upstream_port)]  # fmt: skip
    try:
        processes.append(
            start_hookgate(tmp, "pii", proxy_port, upstream, "policies:\n  - pii: {}\n")
        )
        proxy = f"http://127.0.0.1:{proxy_port}/v1"
        targets = {
            "straight (websocket)": (upstream, True),
            "hookgate pii (websocket)": (proxy, True),
            "straight (http)": (upstream, False),
            "hookgate pii (http)": (proxy, False),
        }
        times: dict[str, list[float]] = {name: [] for name in targets}
        for rep in range(args.reps + 1):
            for name, (url, websocket) in targets.items():
                seconds = run(args.codex, url, websocket, tmp / f"{rep}-{len(times[name])}-{name}")
                if rep:  # the first round warms hookgate's PII models up
                    times[name].append(seconds)
    finally:
        stop(processes)
    report = {}
    for name, runs in times.items():
        p50 = statistics.median(runs)
        straight = statistics.median(times[name.replace("hookgate pii", "straight")])
        report[name] = {"p50_s": round(p50, 3), "ratio": round(p50 / straight, 3),
                        "runs_s": [round(x, 3) for x in runs]}  # fmt: skip
        print(f"{name:26} p50 {p50:.3f} s   {p50 / straight:.2f}x straight")
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    (results / f"codex-{stamp}.json").write_text(
        json.dumps({"reps": args.reps, **report}, indent=2)
    )


if __name__ == "__main__":
    main()
