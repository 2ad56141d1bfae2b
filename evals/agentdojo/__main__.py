"""``python -m evals.agentdojo --config FILE --suites banking,slack --split dev``: measure a config.

Runs the split's pairs of each suite with the worst-case obedient scripted model behind a real
``hookgate serve`` running ``FILE``'s policies (``--straight``: no gateway), prints per suite
the attack success rate, utility without attack and utility under attack with their counts,
and writes them as JSON (``--output``; per-pair verdicts only for ``dev``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from evals.agentdojo.gateway import Gateway
from evals.agentdojo.harness import BENCHMARK_VERSION, SUITES, Outcome, Split, Tally, run
from evals.agentdojo.person import Person
from evals.agentdojo.scripted import ScriptedModel, Unoffered

RESULTS = Path("evals/agentdojo/results")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals.agentdojo", description=__doc__)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--config", type=Path, help="the hookgate config whose policies run")
    target.add_argument(
        "--straight", action="store_true", help="no gateway: the agent calls the model directly"
    )
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated suites")
    parser.add_argument("--split", choices=["dev", "heldout"], default="dev")
    parser.add_argument("--attack", default="important_instructions", help="an AgentDojo attack")
    parser.add_argument(
        "--unoffered",
        choices=["call", "skip"],
        default="call",
        help="a call of a tool the request does not offer: made (the worst case) or left out",
    )
    parser.add_argument("--benchmark-version", default=BENCHMARK_VERSION)
    parser.add_argument("--user-tasks", default="", help="comma-separated user task ids (narrows)")
    parser.add_argument("--injection-tasks", default="", help="comma-separated ids (narrows)")
    parser.add_argument(
        "--output", type=Path, help="the JSON results (default: under evals/agentdojo/results/)"
    )
    parser.add_argument(
        "--person",
        action="store_true",
        help="provenance deny sinks ask a person, who approves exactly the calls the user's "
        "task needs (see evals/agentdojo/person.py)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per dev run")
    return parser.parse_args(argv)


def _rate(counts: dict[str, Any]) -> str:
    if counts["rate"] is None:
        return "-"
    return f"{100 * counts['rate']:5.1f}% ({counts['hits']}/{counts['runs']})"


def table(tallies: dict[str, Tally]) -> str:
    """The per-suite lines (and the total) the CLI prints."""
    total = Tally()
    for tally in tallies.values():
        total.merge(tally)
    rows = [("suite", "attack success", "utility w/o attack", "utility under attack", "refusals")]
    for name, tally in [*tallies.items(), ("all", total)]:
        summary = tally.summary()
        rows.append(
            (
                name,
                _rate(summary["attack_success"]),
                _rate(summary["utility_without_attack"]),
                _rate(summary["utility_under_attack"]),
                str(summary["gateway_refusals"]),
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    )


def results(tallies: dict[str, Tally], split: Split, settings: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: settings, a summary per suite and overall, dev runs one by one."""
    total = Tally()
    suites: dict[str, Any] = {}
    for name, tally in tallies.items():
        total.merge(tally)
        suites[name] = tally.summary()
        if split == "dev":
            suites[name]["runs"] = [
                {
                    "user_task": outcome.pair.user_task,
                    "injection_task": outcome.pair.injection_task,
                    "utility": outcome.utility,
                    "attack_succeeded": outcome.attacked,
                    "gateway_refusals": outcome.refusals,
                }
                for outcome in tally.outcomes
            ]
    return {**settings, "split": split, "suites": suites, "all": total.summary()}


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    # SIGTERM unwinds (stopping the hookgate subprocess) instead of killing outright.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    split = cast(Split, args.split)
    suites = [name for name in args.suites.split(",") if name]
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        print(
            f"unknown suites: {', '.join(unknown)} (AgentDojo's: {', '.join(SUITES)})",
            file=sys.stderr,
        )
        return 2

    def show(outcome: Outcome) -> None:
        if args.verbose and split == "dev":
            pair = outcome.pair
            print(
                f"{pair.suite} {pair.user_task} {pair.injection_task or '-'}: "
                f"utility={outcome.utility} attacked={outcome.attacked} "
                f"refusals={outcome.refusals}",
                flush=True,
            )

    started = time.monotonic()
    try:
        tallies = _measure(args, split, suites, show)
    except ValueError as error:  # an unknown attack or task id
        print(error, file=sys.stderr)
        return 2
    return _report(args, split, tallies, time.monotonic() - started)


def _measure(
    args: argparse.Namespace, split: Split, suites: list[str], show: Callable[[Outcome], None]
) -> dict[str, Tally]:
    """Run the suites through a fresh gateway (or straight); the tallies per suite."""
    with (
        ScriptedModel(cast(Unoffered, args.unoffered)) as model,
        tempfile.TemporaryDirectory() as work,
    ):
        gateway = (
            None
            if args.straight
            else Gateway(args.config, model.base_url, Path(work), args.person).start()
        )
        person = Person(gateway.base_url) if gateway is not None and args.person else None
        if person is not None:
            person.start()
        try:
            return run(
                suites,
                split,
                args.attack,
                model,
                model.base_url if gateway is None else gateway.base_url,
                version=args.benchmark_version,
                user_tasks=[task for task in args.user_tasks.split(",") if task],
                injection_tasks=[task for task in args.injection_tasks.split(",") if task],
                progress=show,
                person=person,
            )
        finally:
            if person is not None:
                person.stop()
            if gateway is not None:
                gateway.stop()


def _report(
    args: argparse.Namespace, split: Split, tallies: dict[str, Tally], seconds: float
) -> int:
    name = "straight" if args.straight else args.config.stem + (".person" if args.person else "")
    settings = {
        "config": "straight" if args.straight else str(args.config),
        "attack": args.attack,
        "unoffered": args.unoffered,
        "benchmark_version": args.benchmark_version,
        "seconds": round(seconds, 1),
        "person": args.person,
    }
    print(
        f"{name}, {split}, {args.attack}, unoffered calls: {args.unoffered}, "
        f"AgentDojo {args.benchmark_version}"
    )
    print(table(tallies))
    if args.person:
        held = {name: tally.summary()["calls_held_for_a_person"] for name, tally in tallies.items()}
        print("calls held for the person (clean runs, attacked runs): " + ", ".join(
            f"{name} {h['clean']}, {h['attacked']}" for name, h in held.items()
        ))  # fmt: skip
    output = args.output or RESULTS / f"{name}.{split}.{args.attack}.{args.unoffered}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results(tallies, split, settings), indent=1) + "\n")
    print(f"results: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
