"""docs/coverage.md is true to the code: every hook and policy it names exists."""

from __future__ import annotations

import re
from pathlib import Path

from hookgate.pipeline import registry
from hookgate.pipeline.hooks import Policy

TABLE = Path("docs/coverage.md").read_text()
ROWS = [
    [cell.strip() for cell in line.strip().strip("|").split("|")]
    for line in TABLE.splitlines()
    if line.startswith("| ") and not line.startswith("| seed") and "---" not in line
]
STATUS = re.compile(r"^(mapped|partial|planned|n/a)\b")


def test_the_table_lists_the_seeds_positions() -> None:
    assert len(ROWS) >= 40
    seeds = {row[0] for row in ROWS}
    assert seeds == {"AgentScope", "cubeloop", "LangChain", "PraisonAI"}
    assert all(len(row) == 4 for row in ROWS)


def test_every_hook_and_policy_named_exists() -> None:
    for seed, position, hookgate, status in ROWS:
        assert STATUS.match(status), f"{seed} {position}: unknown status {status!r}"
        if status.startswith("n/a"):
            assert hookgate == "—"
            continue
        name = hookgate.strip("`")
        exists = name in registry.BUILTIN or callable(getattr(Policy, name, None))
        assert exists, f"{seed} {position}: {name!r} is neither a Policy hook nor a policy"


def test_planned_rows_name_an_issue_item() -> None:
    for seed, position, _, status in ROWS:
        if status.startswith("planned") or "issue 18" in status:
            assert re.search(r"issue 18 item [1-7]", status), f"{seed} {position}"
