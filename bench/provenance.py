"""What the provenance guard costs the proxy per model call: the proxy keeps no state,
so at every answer it reads the request's whole conversation again — every tool result
in it — and checks the calls the model returned.

A scripted agent session: turn after turn one tool result (a page of this repository's
docs, in turn, about 10 KB each) joins the conversation, then the model's answer (a
``send_email`` call) is checked against the whole conversation, as
``ProvenancePolicy.returned_tool_call`` does. Reported, in one run: the time of a check
per KB of conversation on the first pass (every result new to this process), and on a
second pass of the same session (every result hashed before: what a resent conversation
costs), as a ratio.

Run: ``python -m bench.provenance [--turns 20]`` (from the repository root).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hookgate.policies.provenance import ProvenanceConfig, new_evidence, record_result
from hookgate.provenance import check_call

CONFIG = ProvenanceConfig.model_validate(
    {"sinks": [{"tool": "send_email", "argument": "recipients"}]}
)
CALL = {"recipients": ["someone@example.com"], "body": "as you asked"}


def _session(turns: int) -> list[str]:
    pages = sorted(Path("docs").glob("*.md"))
    return [pages[i % len(pages)].read_text()[:10_000] + f"\n(turn {i})" for i in range(turns)]


def _pass(results: list[str]) -> tuple[float, int]:
    """Seconds spent checking at every turn, and the KB read in all."""
    spent, read = 0.0, 0
    rules = CONFIG.rules()
    for turn in range(1, len(results) + 1):
        start = time.perf_counter()
        evidence = new_evidence(CONFIG)
        evidence.add_trusted("Summarise the docs I point you to and mail them to my team.")
        for content in results[:turn]:
            record_result(evidence, CONFIG, "read_file", content)
        check_call("send_email", CALL, evidence, rules)
        spent += time.perf_counter() - start
        read += sum(len(c) for c in results[:turn])
    return spent, read // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    results = _session(args.turns)
    first, kb = _pass(results)
    second, _ = _pass(results)
    print(f"{args.turns} turns, {kb} KB of conversation read in all")
    print(f"first pass:  {first * 1000 / kb:7.3f} ms per KB read ({first:.2f} s)")
    print(f"second pass: {second * 1000 / kb:7.3f} ms per KB read ({second:.2f} s)")
    print(f"second / first: {second / first:.3f}")


if __name__ == "__main__":
    main()
