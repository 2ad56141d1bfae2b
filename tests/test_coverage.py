"""docs/coverage.md is true to the code: every hook and policy it names exists, and every
mapping it claims names the tests that run it, which exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hookgate.pipeline import registry
from hookgate.pipeline.hooks import Policy

ROOT = Path(__file__).resolve().parents[1]
TABLE = (ROOT / "docs/coverage.md").read_text()
ROWS = [
    [cell.strip() for cell in line.strip().strip("|").split("|")]
    for line in TABLE.splitlines()
    if line.startswith("| ") and not line.startswith("| seed") and "---" not in line
]
STATUS = re.compile(r"^(mapped|partial|planned|n/a)\b")
TEST = re.compile(r"`(tests/[\w/]+\.py)((?:::\w+)+)`")
"""A ``tested by`` entry: ``path::test`` or ``path::Class::test``, in backticks."""


def test_the_table_lists_the_seeds_positions() -> None:
    assert len(ROWS) >= 40
    seeds = {row[0] for row in ROWS}
    assert seeds == {"AgentScope", "cubeloop", "LangChain", "PraisonAI"}
    assert all(len(row) == 5 for row in ROWS)


def test_every_hook_and_policy_named_exists() -> None:
    for seed, position, hookgate, status, tested in ROWS:
        assert STATUS.match(status), f"{seed} {position}: unknown status {status!r}"
        if status.startswith("n/a"):
            assert hookgate == tested == "—", f"{seed} {position}"
            continue
        name = hookgate.strip("`")
        exists = name in registry.BUILTIN or callable(getattr(Policy, name, None))
        assert exists, f"{seed} {position}: {name!r} is neither a Policy hook nor a policy"


def exists(entry: str) -> bool:
    """``entry`` names a test function a test file here defines (read with ``ast``, not run):
    at top level, or in the class(es) named before it."""
    found = TEST.fullmatch(entry)
    if found is None or not (ROOT / found[1]).is_file():
        return False
    *classes, function = found[2].split("::")[1:]
    body = ast.parse((ROOT / found[1]).read_text()).body
    for name in classes:
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == name), [])
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    return any(isinstance(n, functions) and n.name == function for n in body)


def test_every_mapping_names_tests_that_exist() -> None:
    missing = []
    for seed, position, _, status, tested in ROWS:
        if not status.startswith(("mapped", "partial")):
            continue
        entries = [] if tested in ("", "NONE") else [e.strip() for e in tested.split(",")]
        if not entries:
            missing.append(f"{seed} {position}: no test runs this mapping")
        missing += [f"{seed} {position}: {e!r} is no test here" for e in entries if not exists(e)]
    assert not missing, "\n".join(missing)


def test_planned_rows_name_an_issue_item() -> None:
    for seed, position, _, status, _ in ROWS:
        if status.startswith("planned") or "issue 18" in status:
            assert re.search(r"issue 18 item [1-7]", status), f"{seed} {position}"
