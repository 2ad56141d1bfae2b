"""Run the failoverbench scenarios through ``hookgate serve`` and print the scorecard.

Run (from the repository root, in the venv)::

    python -m bench.failoverbench.run [--profile fast|full] [--config default|careful]
                                      [--only S06,S15] [--out FILE]

It starts the wall (the fake provider) on loopback, writes a config — the shipped
``policies/default.yaml`` with only the suite's routing added (each scenario model to
itself, then its fallback model), and for ``careful`` the settings of ``careful.yaml``
beside this file — starts ``hookgate serve`` on it, sends every scenario through it,
scores each one, prints the scorecard and writes it as JSON (default
``bench/results/failoverbench-<profile>-<config>.json``; the proxy's log beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.failoverbench import caller, score
from bench.failoverbench.scenarios import PROMPT, SCENARIOS, TIMINGS, Scenario
from bench.failoverbench.wall import Wall

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MESSAGES = [{"role": "user", "content": PROMPT}]


def gateway_config(config: str) -> dict[str, Any]:
    """The shipped default config with the suite's routes; ``careful`` adds its settings."""
    doc: dict[str, Any] = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    careful = yaml.safe_load((HERE / "careful.yaml").read_text()) if config == "careful" else {}
    extra = careful.get("targets", {})
    models: dict[str, Any] = {}
    for scenario in SCENARIOS:
        models[scenario.model] = [
            {"provider": "openai", "model": scenario.model, **extra.get("primary", {})},
            {"provider": "openai", "model": scenario.fallback, **extra.get("fallback", {})},
        ]
    models["*"] = doc["models"]["*"]
    doc["models"] = models
    if careful:
        doc["policies"] = [
            {"fallback": careful["fallback"]} if "fallback" in entry else entry
            for entry in doc["policies"]
        ]
    return doc


def start_hookgate(config: Path, upstream: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``hookgate serve --config CONFIG --port 0`` with the provider pointed at ``upstream``;
    the process and its base URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOOKGATE_", "OTEL_"))}
    env |= {
        "OPENAI_UPSTREAM_URL": upstream,
        "OPENAI_API_KEY": "sk-failoverbench-upstream",
        "HOOKGATE_STORE": f"sqlite:///{config.with_suffix('.db')}",
    }
    command = [sys.executable, "-m", "hookgate", "serve", "--config", str(config), "--port", "0"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stderr=out, stdout=out, env=env, cwd=config.parent)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        match = re.search(r"listening on (http://\S+)", log.read_text(errors="replace"))
        if match:
            return process, match.group(1).rstrip("/") + "/v1"
        time.sleep(0.1)
    process.kill()
    process.wait()
    raise RuntimeError(f"hookgate did not start:\n{log.read_text(errors='replace')[-3000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(40)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def run_scenario(
    scenario: Scenario, wall: Wall, client: httpx.AsyncClient, base_url: str, profile: str
) -> dict[str, Any]:
    wall.reset()
    if scenario.sequence:
        plan = scenario.sequence[profile]
        results, sent_at = [], []
        for i in range(plan.count):
            await asyncio.sleep(max(0.0, i * plan.interval_s - wall.now()))
            sent_at.append(wall.now())
            results.append(
                await caller.call(
                    client,
                    base_url,
                    scenario.model,
                    MESSAGES,
                    stream=True,
                    deadline_s=plan.max_wall_s,
                )
            )
        result = next((r for r in results if not r.ok), results[-1])
        result = dataclasses.replace(result, elapsed_s=wall.now())
    else:
        results, sent_at = None, None
        result = await caller.call(
            client, base_url, scenario.model, MESSAGES, stream=True, deadline_s=scenario.max_wall_s
        )
    log = list(wall.log)
    probe = await caller.call(client, base_url, "fb-ok", MESSAGES, stream=False, deadline_s=10)
    alive = probe.ok and score.complete(probe.content)
    outcome = score.Outcome(
        scenario,
        result,
        log,
        alive,
        None if alive else (probe.error or "not the whole answer"),
        results,
        sent_at,
        wall.timing.flap_down_s,
    )
    checks = [(c, *score.check(c, outcome)) for c in scenario.checks]
    verdict, reason = score.verdict(outcome, checks)
    return {
        "id": scenario.id,
        "title": scenario.title,
        "model": scenario.model,
        "fallback": scenario.fallback,
        "verdict": verdict,
        "reason": reason,
        "outcome": outcome.outcome,
        "elapsed_s": result.elapsed_s,
        "attempts_primary": len(outcome.primary),
        "attempts_fallback": len(outcome.fallback),
        "reported_model": result.model,
        "usage": result.usage,
        "error": result.error,
        "words": len(score.normal(result.content).split()),
        "checks": [
            {"id": c.id, "kind": c.kind, "status": status, "detail": detail}
            for c, status, detail in checks
        ],
        "wall_log": log,
        "sequence": [
            {"sent_at": t, "outcome": r.outcome, "elapsed_s": r.elapsed_s, "model": r.model}
            for r, t in zip(results or [], sent_at or [], strict=True)
        ],
    }


async def run(
    profile: str, config: str, only: set[str] | None = None, workdir: Path | None = None
) -> dict[str, Any]:
    """Every scenario (or those in ``only``) through a fresh hookgate; the scorecard."""
    wall = Wall(TIMINGS[profile])
    await wall.start()
    with tempfile.TemporaryDirectory() as tmp:
        folder = workdir or Path(tmp)
        doc = gateway_config(config)
        path = folder / f"failoverbench-{profile}-{config}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        log = path.with_suffix(".log")
        process, base_url = await asyncio.to_thread(start_hookgate, path, wall.base_url, log)
        started = time.monotonic()
        try:
            async with httpx.AsyncClient() as client:
                scenarios = []
                for scenario in SCENARIOS:
                    if only and scenario.id not in only:
                        continue
                    row = await run_scenario(scenario, wall, client, base_url, profile)
                    print(_line(row), flush=True)
                    scenarios.append(row)
        finally:
            await asyncio.to_thread(stop, process)
            await wall.close()
    verdicts = [row["verdict"] for row in scenarios]
    return {
        "suite": "failoverbench scenarios, methodology v0.1 (bench/failoverbench/README.md)",
        "profile": profile,
        "config": config,
        "gateway_config": doc,
        "run_s": round(time.monotonic() - started, 1),
        "summary": {v: verdicts.count(v) for v in ("pass", "partial", "safe", "fail")},
        "scenarios": scenarios,
    }


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['id']} {row['verdict'].upper():<7} {row['title']:<38} "
        f"{row['attempts_primary']}p/{row['attempts_fallback']}f {row['elapsed_s']:6.1f}s  "
        f"{row['reason']}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.failoverbench.run")
    parser.add_argument("--profile", choices=sorted(TIMINGS), default="fast")
    parser.add_argument("--config", choices=("default", "careful"), default="default")
    parser.add_argument("--only", default="", help="scenario ids, e.g. S06,S15")
    parser.add_argument("--out", type=Path, help="the JSON scorecard's path")
    args = parser.parse_args(argv)
    only = {s.strip().upper() for s in args.only.split(",") if s.strip()} or None
    name = f"failoverbench-{args.profile}-{args.config}.json"
    out = args.out or ROOT / "bench" / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"failoverbench, profile {args.profile}, config {args.config}", flush=True)
    card = asyncio.run(run(args.profile, args.config, only, out.parent))
    out.write_text(json.dumps(card, indent=2))
    summary = card["summary"]
    print(
        f"pass {summary['pass']}  partial {summary['partial']}  safe {summary['safe']}  "
        f"fail {summary['fail']}  ({card['run_s']}s)\nwrote {out}",
        flush=True,
    )


if __name__ == "__main__":
    main()
